#!/usr/bin/env python3
"""Replay allocation traces through PyTorch's CUDA allocator on a GPU.

The PyTorch side of `streamcore replay --platform hip`: the same traces,
the same two passes, the same columns.

Each alloc event becomes `torch.empty(size, dtype=torch.uint8)` on a
`torch.cuda.Stream` of its own per trace stream; each free drops the
tensor (no `record_stream`: a replay frees where it allocated, so the
caching allocator reuses the block at once, as streamcore's pools do).

- timed pass: the events with nothing else in the loop, then one device
  synchronization; wall time in milliseconds.
- memory pass: the same events again from an emptied allocator, reading
  `torch.cuda.mem_get_info()` after every event; peak used = the most device
  memory in use as the driver reports it (total - free), above what was in
  use before the pass, over the trace's own peak live bytes.

`--touch` queues a 64 KiB write (`zero_()` of the first 64 KiB) on each new
allocation, so frees and the allocator's reuse meet queued work.

The allocator is chosen by PYTORCH_CUDA_ALLOC_CONF, which PyTorch reads once
per process; `--allocator all` (the default) runs this script once per
allocator in a child process:

    default            (unset)
    expandable         expandable_segments:True
    async              backend:cudaMallocAsync

Usage:
    scripts/torch_replay.py [--allocator all|default|expandable|async] [--touch] TRACE...

Output: one line per trace and allocator, with a header line:
    trace allocator touch wall_ms driver_calls peak_used peak_live ratio
`driver_calls` is the allocator's device allocations + frees when PyTorch
reports them (`num_device_alloc` + `num_device_free`), else `-`.

Before anything is replayed, every TRACE must be a readable file and
PyTorch must import and see a CUDA device; else a line on stderr says what
is missing, and nothing runs. Each trace is checked whole first, by the
rules `streamcore replay` applies (`streamcore record --help`: a header
first, only alloc and free, integer ids, sizes and streams, no free of an
id that is not live, no second alloc of a live one, the header's counts
those of the events, ...); a trace that breaks one is named with the line
and the reason, and left out. The trace's name (its header's workload,
else its file name up to the first dot) is written as one column:
whitespace and control characters become `_`.

Standard library and torch only. Exit status: 0 when every replay ran; 1
when a TRACE is not a readable file (nothing replayed), does not parse, or
PyTorch refused one of its events (out of memory, say: one line, the
others replayed), or stdout could not be written; 2 for bad arguments; 3
when skipped (nothing replayed): PyTorch is not installed or sees no CUDA
device. A reader that stops early (`| head`) ends it quietly, status 0.
"""

import argparse
import gzip
import json
import os
import subprocess
import sys
import time
import unicodedata
import zlib

from script_io import OutputError, ReaderGone, drop_stdout, emit, stderr_line

ALLOCATORS = {
    "default": None,
    "expandable": "expandable_segments:True",
    "async": "backend:cudaMallocAsync",
}

TOUCH_BYTES = 64 * 1024
SKIPPED = 3  # the exit status when PyTorch or a CUDA device is missing
# A child's exit status when its reader went away (`| head`): 128 + SIGPIPE,
# as a shell reports it; the parent then stops quietly, with status 0.
READER_GONE = 141
COLUMNS = "trace allocator touch wall_ms driver_calls peak_used peak_live ratio"

# The trace format's limits, as `streamcore replay` checks them.
MAX_TRACE_SIZE = 1 << 44
MAX_TRACE_STREAMS = 1024
MAX_LINE_BYTES = 1 << 20
GZIP_MAGIC = b"\x1f\x8b"
HEADER_FIGURES = ("peak_allocated_bytes", "peak_reserved_bytes", "segment_allocs", "streams",
                  "events", "live_at_start_bytes")


class TraceError(ValueError):
    """A trace that does not parse, or breaks the format's rules; the
    message names the line."""


def say(message):
    """`torch_replay: message` on stderr; where stderr cannot be written,
    nothing is left to tell (the exit status still says how it went)."""
    stderr_line(f"torch_replay: {message}")


def column(text):
    """`text` as one whitespace-separated column, as `streamcore replay
    --platform hip` writes it: whitespace and control characters become
    `_`, an empty name `-`."""
    return "".join(
        "_" if c.isspace() or unicodedata.category(c) == "Cc" else c for c in text
    ) or "-"


def _kind(value):
    """`value` for a message: its JSON text, cut short."""
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _uint(obj, key, n):
    """`obj[key]` when it is a non-negative integer (JSON's, not a float or
    a boolean); else TraceError naming line `n`."""
    if key not in obj:
        raise TraceError(f'line {n}: missing "{key}"')
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise TraceError(f'line {n}: "{key}" is {_kind(value)}, not a non-negative integer')
    if value < 0:
        raise TraceError(f'line {n}: "{key}" is {value}, a negative number')
    return value


def _unique_keys(pairs):
    """A JSON object's members, refusing a key given twice (which of the
    two would count?), as `streamcore replay` does."""
    obj = {}
    for key, value in pairs:
        if key in obj:
            raise ValueError(f'the key "{key}" appears twice')
        obj[key] = value
    return obj


def _json(text):
    """The JSON value of one line; ValueError saying why not, in a few
    words."""
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as e:
        raise ValueError(f"{e.msg} at column {e.colno}") from None
    except RecursionError:
        raise ValueError("nested too deep") from None


def _header(text):
    """The header line's object, checked as `streamcore replay` checks it."""
    try:
        obj = _json(text)
    except ValueError as e:
        raise TraceError(f"line 1: no trace header ({e})") from None
    if not isinstance(obj, dict) or "header" not in obj:
        raise TraceError('line 1: no trace header (the first line has no "header" member)')
    header = obj["header"]
    if not isinstance(header, dict):
        raise TraceError('line 1: no trace header ("header" is not an object)')
    for key in HEADER_FIGURES:
        if header.get(key) is not None:
            _uint(header, key, 1)
    workload = header.get("workload")
    if workload is not None and not isinstance(workload, str):
        raise TraceError('line 1: "workload" in the header is not a string')
    for big, small, because in (
            ("peak_reserved_bytes", "peak_allocated_bytes",
             "an allocator's allocations lie inside what it reserved"),
            ("peak_allocated_bytes", "live_at_start_bytes",
             "the peak includes what was held when the recording began")):
        if header.get(big) is not None and header.get(small) is not None \
                and header[big] < header[small]:
            raise TraceError(f'line 1: the header\'s "{big}" ({header[big]}) is below its '
                             f'"{small}" ({header[small]}), which cannot be: {because}')
    return header


def _lines(f):
    """(number, text) of each line of the binary file `f`, the text
    stripped; a line longer than any trace line, or not UTF-8, is
    TraceError."""
    n = 0
    while True:
        raw = f.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        n += 1
        if len(raw) > MAX_LINE_BYTES:
            raise TraceError(f"line {n}: longer than {MAX_LINE_BYTES} bytes (no trace line is)")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise TraceError(f"line {n}: not UTF-8") from None
        yield n, text.strip()


def _events(f):
    """(header, events, peak_live) of the trace in the binary file `f`,
    every rule of the format checked (`streamcore record --help`): a header
    first; ops alloc and free only; ids, sizes and streams non-negative
    integers; sizes from 1 byte to 16 TiB; streams numbered 0, 1, ... in
    order of first use; a free of a live id only, an alloc of an id not
    live; the header's counts those of the events."""
    events = []
    header = None
    live = {}
    cur = peak = 0
    streams = 0
    for n, line in _lines(f):
        if header is None:
            header = _header(line.lstrip("\ufeff"))
            continue
        if not line:
            continue
        try:
            obj = _json(line)
        except ValueError as e:
            raise TraceError(f"line {n}: not JSON ({e})") from None
        if not isinstance(obj, dict):
            raise TraceError(f'line {n}: not a JSON object (an event is {{"op": "alloc" or '
                             f'"free", ...}})')
        op = obj.get("op")
        if not isinstance(op, str):
            raise TraceError(f'line {n}: missing "op"' if "op" not in obj
                             else f'line {n}: "op" is not a string')
        ident = _uint(obj, "id", n)
        if op == "alloc":
            size = _uint(obj, "size", n)
            stream = _uint(obj, "stream", n)
            if size == 0:
                raise TraceError(f"line {n}: id {ident} has size 0")
            if size > MAX_TRACE_SIZE:
                raise TraceError(f"line {n}: id {ident} has size {size}, above the "
                                 f"{MAX_TRACE_SIZE} B limit")
            if stream >= MAX_TRACE_STREAMS:
                raise TraceError(f"line {n}: stream {stream} is past the last a trace may use "
                                 f"({MAX_TRACE_STREAMS - 1})")
            if stream > streams:
                raise TraceError(f"line {n}: stream {stream} is used before stream {streams} "
                                 "(streams are numbered 0, 1, ... in order of first use)")
            if ident in live:
                raise TraceError(f"line {n}: alloc of id {ident}, which is already live")
            streams = max(streams, stream + 1)
            events.append((0, ident, size, stream))
            live[ident] = size
            cur += size
            peak = max(peak, cur)
        elif op == "free":
            if ident not in live:
                raise TraceError(f"line {n}: free of id {ident}, which is not live")
            cur -= live.pop(ident)
            events.append((1, ident, 0, 0))
        else:
            raise TraceError(f'line {n}: unknown op "{op}"')
    if header is None:
        raise TraceError("line 1: no trace header (the trace is empty)")
    for what, found in (("events", len(events)), ("streams", streams)):
        if header.get(what) is not None and header[what] != found:
            raise TraceError(f"line 1: the header announces {header[what]} {what}, the trace "
                             f"has {found} (cut short, or edited?)")
    return header, events, peak


def _gzip_error(e):
    """What a gzip stream's error says about the file (which starts as gzip
    does)."""
    if isinstance(e, EOFError):
        return "the gzip data ends early (truncated file?)"
    if isinstance(e, gzip.BadGzipFile) and "Not a gzipped file" in str(e):
        return ("bytes that are not gzip after the end of the gzip data (appended to, "
                "or damaged?)")
    return f"corrupt gzip data ({e})"


def load(path):
    """(name, events, peak_live): events are (op, id, size, stream) tuples.

    Gzip (told apart by its first bytes, whatever the name) or plain JSON
    lines. TraceError (a ValueError) says what is wrong and where; in a
    gzip file whose content is wrong, the rest of the gzip data is read
    first, so a damaged file is called damaged, not the lines it decoded
    to.
    """
    with open(path, "rb") as raw:
        is_gzip = raw.read(2) == GZIP_MAGIC
    if not is_gzip:
        with open(path, "rb") as f:
            header, events, peak = _events(f)
    else:
        with gzip.open(path, "rb") as f:
            try:
                header, events, peak = _events(f)
            except TraceError as content:
                try:
                    while f.read(1 << 16):
                        pass
                except (OSError, EOFError, zlib.error) as e:
                    raise TraceError(_gzip_error(e)) from None
                raise content
            except (OSError, EOFError, zlib.error) as e:
                raise TraceError(_gzip_error(e)) from None
    name = os.path.basename(path)
    workload = header.get("workload") or name.split(".")[0] or name
    return column(workload), events, peak


def replay(torch, events, streams, touch, sample):
    """Runs the events; returns (wall seconds, peak used above the start)."""
    device = torch.device("cuda")
    live = {}
    current = None
    peak = 0
    base = 0
    if sample:
        free, total = torch.cuda.mem_get_info()
        base = total - free
    torch.cuda.synchronize()
    start = time.perf_counter()
    try:
        for n, (op, ident, size, stream) in enumerate(events, 1):
            try:
                if op == 0:
                    s = streams[stream]
                    if s is not current:
                        torch.cuda.set_stream(s)
                        current = s
                    t = torch.empty(size, dtype=torch.uint8, device=device)
                    if touch:
                        t[: min(size, TOUCH_BYTES)].zero_()
                    live[ident] = t
                else:
                    del live[ident]
                if sample:
                    free, total = torch.cuda.mem_get_info()
                    peak = max(peak, total - free - base)
            except RuntimeError as e:  # torch.cuda.OutOfMemoryError among them
                what = f"alloc of {size} B on stream {stream}" if op == 0 else "free"
                raise ReplayFailed(f"event {n} of {len(events)} ({what}): "
                                   f"{first_line(e)}") from None
        torch.cuda.synchronize()
        wall = time.perf_counter() - start
    finally:
        live.clear()
        torch.cuda.set_stream(torch.cuda.default_stream())
    return wall, peak


class ReplayFailed(Exception):
    """PyTorch refused an event of the replay (out of memory, say)."""


def first_line(e):
    """The first line of what exception `e` says, with its type."""
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0] if lines else ''}".rstrip(": ")


def unreadable(path):
    """Why `path` is not a readable file, or None when it is one."""
    if not os.path.isfile(path):
        return "not a file" if os.path.exists(path) else "no such file"
    try:
        with open(path, "rb"):
            pass
    except OSError as e:
        return e.strerror or str(e)
    return None


def torch_or_none():
    """torch when it imports and sees a CUDA device; else None, having said
    on stderr why not."""
    try:
        import torch
    except ImportError:
        say("SKIPPED: PyTorch is not installed")
        return None
    if not torch.cuda.is_available():
        say("SKIPPED: PyTorch sees no CUDA device")
        return None
    return torch


# Traces parsed by `load_error`, for this process's replay to use.
LOADED = {}


def load_error(path):
    """Why `path` does not load as a trace (one line, the path first), or
    None; a trace that loads is kept for this process's replay."""
    try:
        LOADED[path] = load(path)
    except TraceError as e:
        return f"{path}: {e}"
    except OSError as e:
        return f"{path}: {e.strerror or e}"
    return None


def run_in_process(torch, args):
    torch.cuda.init()
    torch.empty(1, device="cuda")  # context and allocator up before any measurement
    ok = True
    for path in args.traces:
        if path not in LOADED:
            why = load_error(path)
            if why:
                say(why)
                ok = False
                continue
        name, events, peak_live = LOADED.pop(path)
        nstreams = 1 + max((e[3] for e in events if e[0] == 0), default=0)
        streams = [torch.cuda.Stream() for _ in range(nstreams)]
        try:
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
            before = torch.cuda.memory_stats()
            wall, _ = replay(torch, events, streams, args.touch, sample=False)
            after = torch.cuda.memory_stats()
            torch.cuda.empty_cache()
            torch.cuda.synchronize()
            _, peak_used = replay(torch, events, streams, args.touch, sample=True)
        except ReplayFailed as e:
            say(f"{path}: torch-{args.allocator}: {e}")
            torch.cuda.empty_cache()
            ok = False
            continue
        calls = "-"
        if "num_device_alloc" in after and "num_device_free" in after:
            calls = str(
                after["num_device_alloc"] - before.get("num_device_alloc", 0)
                + after["num_device_free"] - before.get("num_device_free", 0)
            )
        torch.cuda.empty_cache()
        # A trace that allocates nothing has no ratio (`-`, as streamcore
        # writes it): a 0 would read as the best there is.
        ratio = f"{peak_used / peak_live:.4f}" if peak_live else "-"
        emit(
            f"{name} torch-{args.allocator} {'yes' if args.touch else 'no'} {wall * 1e3:.1f} "
            f"{calls} {peak_used} {peak_live} {ratio}"
        )
    return 0 if ok else 1


def child(args, name, env=None):
    """Runs this script for allocator `name` in a child process (PyTorch
    reads PYTORCH_CUDA_ALLOC_CONF once per process); its exit status."""
    cmd = [sys.executable, __file__, "--no-header", "--allocator", name]
    cmd += ["--touch"] if args.touch else []
    return subprocess.call(cmd + args.traces, env=env)


def run(args):
    bad = [(path, why) for path in args.traces for why in [unreadable(path)] if why]
    for path, why in bad:
        say(f"{path}: {why}")
    if bad:
        return 1
    ok = True
    if not args.no_header:
        # Checked once here, not once per allocator's process: a trace that
        # does not parse is reported once and left out.
        good = []
        for path in args.traces:
            why = load_error(path)
            if why:
                say(why)
                ok = False
            else:
                good.append(path)
        if not good:
            return 1
        args.traces = good
    torch = torch_or_none()
    if torch is None:
        return SKIPPED if ok else 1
    if not args.no_header:
        emit(COLUMNS)
    if args.allocator != "all":
        conf = ALLOCATORS[args.allocator]
        want = conf or ""
        have = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
        if have != want:
            # PyTorch reads the variable once: start over with it set.
            env = dict(os.environ)
            if conf is None:
                env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
            else:
                env["PYTORCH_CUDA_ALLOC_CONF"] = conf
            rc = child(args, args.allocator, env)
            return rc or (0 if ok else 1)
        return run_in_process(torch, args) or (0 if ok else 1)
    status = 0
    for name in ALLOCATORS:
        rc = child(args, name)
        if rc == READER_GONE:
            return rc
        status = status or rc
    return status or (0 if ok else 1)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--allocator", choices=["all", *ALLOCATORS], default="all")
    p.add_argument("--touch", action="store_true", help="write 64 KiB into each new allocation")
    p.add_argument("--no-header", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("traces", nargs="+", metavar="TRACE")
    args = p.parse_args()
    try:
        status = run(args)
    except ReaderGone:
        status = READER_GONE
    except OutputError as e:
        say(f"writing the output: {e}")
        return 1
    if status == READER_GONE:
        # Nobody reads the rest: stop quietly, and drop what stdout still
        # holds (its flush at exit would fail again). A child tells its
        # parent, which stops too.
        drop_stdout()
        return READER_GONE if args.no_header else 0
    return status


if __name__ == "__main__":
    sys.exit(main())
