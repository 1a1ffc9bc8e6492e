"""Output for the scripts beside this file, the same way in each: results
on stdout, one line at a time, and errors on stderr, with no traceback for
a reader that went away (`| head`) or an output that cannot be written (a
full disk). The scripts import it from their own folder; a copy of them
elsewhere takes this file along. (`torch_snapshot_to_trace.py` keeps its one
stderr helper to itself: `streamcore record --script` hands it out as a
file that runs alone.)"""

import os
import sys


class ReaderGone(Exception):
    """stdout's reader went away (`| head`)."""


class OutputError(Exception):
    """stdout could not be written (a full disk)."""


def emit(line):
    """Prints `line` on stdout at once; a reader that went away is
    ReaderGone, any other failure OutputError."""
    try:
        print(line, flush=True)
    except BrokenPipeError:
        raise ReaderGone() from None
    except OSError as e:
        raise OutputError(e.strerror or str(e)) from None


def stderr_line(line):
    """`line` on stderr; where stderr cannot be written, nothing is left to
    tell (the exit status still says how it went)."""
    try:
        print(line, file=sys.stderr, flush=True)
    except OSError:
        pass


def drop_stdout():
    """Points stdout at nothing once its reader is gone: what it still holds
    would fail again when flushed at exit."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
