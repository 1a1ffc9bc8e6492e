#!/usr/bin/env python3
"""Convert a PyTorch CUDA memory snapshot into a streamcore allocation trace.

Record the snapshot on the GPU machine:

    torch.cuda.memory._record_memory_history(max_entries=1_000_000)
    run_the_workload()
    torch.cuda.memory._dump_snapshot("snapshot.pickle")  # or pickle.dump(_snapshot())

then convert it (standard library only, no torch needed):

    python3 torch_snapshot_to_trace.py snapshot.pickle trace.jsonl.gz

and replay it with `streamcore replay trace.jsonl.gz`. The trace keeps the
history's `alloc` events (sizes rounded up to the allocator's 512-byte blocks)
and its `free_requested` events (when the program let go of a block). The header carries PyTorch's peaks: the ones given with
--peak-reserved / --peak-allocated, or else the ones the snapshot implies (the
segments held at the end, walked back through the history).
"""

import argparse
import gzip
import io
import json
import pickle
import sys
from pathlib import Path


class _PlainData(pickle.Unpickler):
    """A snapshot is plain dicts, lists, strings and numbers: load nothing else."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(
            f"refusing to load {module}.{name}: a snapshot holds only plain data"
        )


NOT_A_SNAPSHOT = (
    "not a PyTorch memory snapshot (expected the pickle torch.cuda.memory._dump_snapshot "
    "writes, or that snapshot saved as JSON)"
)


def load_snapshot(path):
    """The snapshot in `path`, told apart by its first bytes: JSON, or a
    pickle (protocol 2 and later start with 0x80). Anything else, or a file
    that does not parse as what it starts like, is not a snapshot; nor is
    what is not a regular file (a folder, a device such as /dev/zero, which
    would be read without end)."""
    p = Path(path)
    if p.is_dir():
        raise ValueError("this is a folder, not a snapshot file")
    if p.exists() and not p.is_file():
        raise ValueError("not a regular file (a snapshot is one)")
    data = p.read_bytes()
    head = data.lstrip()[:1]
    if head == b"{":
        try:
            snapshot = json.loads(data)
        except (ValueError, RecursionError) as e:
            raise ValueError(f"{NOT_A_SNAPSHOT}: not valid JSON ({e})") from None
    elif data[:1] == b"\x80":
        try:
            snapshot = _PlainData(io.BytesIO(data)).load()
        except pickle.UnpicklingError as e:
            if "refusing to load" in str(e):
                raise
            raise ValueError(f"{NOT_A_SNAPSHOT}: a damaged pickle ({e})") from None
        except (EOFError, ValueError, IndexError, KeyError) as e:
            raise ValueError(f"{NOT_A_SNAPSHOT}: a damaged pickle ({e})") from None
    elif data[:2] == b"\x1f\x8b":
        raise ValueError(f"{NOT_A_SNAPSHOT}: a gzip file (a trace already?)")
    else:
        raise ValueError(NOT_A_SNAPSHOT)
    if not isinstance(snapshot, dict) or "device_traces" not in snapshot:
        raise ValueError(f'{NOT_A_SNAPSHOT}: no "device_traces"')
    return snapshot


def block_size(size):
    """The caching allocator's block for a request: a multiple of 512 bytes.

    The history records what was asked for; the allocator holds (and counts
    in its allocated figure) the rounded block.
    """
    return max(512, (size + 511) // 512 * 512)


# The history's actions, as PyTorch names them; others are counted, not replayed.
ACTIONS = (
    "alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
    "segment_map", "segment_unmap", "snapshot", "oom",
)


def _kind(value):
    """What `value` is, for a message: "null", "a str", "an int"."""
    if value is None:
        return "null"
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def _list(value, where):
    """`value` when it is a list (or a tuple); else not a snapshot."""
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{NOT_A_SNAPSHOT}: {where} is {_kind(value)}, not a list")
    return value


def _dict(value, where):
    """`value` when it is a dict; else not a snapshot."""
    if not isinstance(value, dict):
        raise ValueError(f"{NOT_A_SNAPSHOT}: {where} is {_kind(value)}, not a dict")
    return value


def _integer(entry, key, where, default=None, negative=False):
    """`entry[key]` (or `default` when absent) when it is an integer, and not
    negative unless `negative`; else not a snapshot."""
    value = entry.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        got = "missing" if key not in entry and default is None else _kind(value)
        raise ValueError(f'{NOT_A_SNAPSHOT}: {where}: "{key}" is {got}, not an integer')
    if value < 0 and not negative:
        raise ValueError(f'{NOT_A_SNAPSHOT}: {where}: "{key}" is negative ({value})')
    return value


def convert(snapshot, device=0):
    """Returns (header, events, warnings) for one device's history.

    A snapshot not shaped as PyTorch writes it (the histories lists of dicts,
    each naming its action; integer addresses, streams and sizes where the
    conversion reads them; the segments a list of dicts with integer sizes)
    is not a snapshot: ValueError, saying what was wrong. Entries of actions
    other than PyTorch's are counted in the header and named in a warning.
    """
    if device < 0:
        raise ValueError(f"no device {device}: devices are numbered from 0")
    traces = _list(snapshot.get("device_traces") or [], '"device_traces"')
    if device >= len(traces):
        raise ValueError(f"the snapshot has no history for device {device}")
    history = _list(traces[device], f"device_traces[{device}]")
    events, warnings = [], []
    live = {}  # address -> id
    streams = {}  # raw stream handle -> 0, 1, ...
    actions = {}
    next_id = 0
    dropped_frees = 0
    allocated = reserved = 0  # changes since the recording began
    peak_allocated = peak_reserved = 0
    unknown = {}
    for n, entry in enumerate(history):
        where = f"device_traces[{device}][{n}]"
        action = _dict(entry, where).get("action")
        if not isinstance(action, str):
            got = "missing" if "action" not in entry else _kind(action)
            raise ValueError(f'{NOT_A_SNAPSHOT}: {where}: "action" is {got}, not a string')
        actions[action] = actions.get(action, 0) + 1
        if action not in ACTIONS:
            unknown[action] = unknown.get(action, 0) + 1
            continue
        addr = size = None
        if action in ("alloc", "free_requested"):
            addr = _integer(entry, "addr", where, negative=True)
        if action in ("alloc", "free_completed") or action.startswith("segment_"):
            size = _integer(entry, "size", where)
        if action in ("alloc", "free_completed"):
            size = block_size(size)
        if action == "alloc":
            if addr in live:  # its free fell off the ring buffer: close it here
                events.append({"op": "free", "id": live.pop(addr)})
            stream = _integer(entry, "stream", where, default=0, negative=True)
            stream = streams.setdefault(stream, len(streams))
            live[addr] = next_id
            events.append({"op": "alloc", "id": next_id, "size": size, "stream": stream})
            next_id += 1
            allocated += size
        elif action == "free_requested":
            if addr in live:
                events.append({"op": "free", "id": live.pop(addr)})
            else:
                dropped_frees += 1
        elif action == "free_completed":
            allocated -= size
        elif action in ("segment_alloc", "segment_map"):
            reserved += size
        elif action in ("segment_free", "segment_unmap"):
            reserved -= size
        peak_allocated = max(peak_allocated, allocated)
        peak_reserved = max(peak_reserved, reserved)
    if dropped_frees:
        warnings.append(
            f"{dropped_frees} frees of blocks allocated before the history began were dropped"
        )
    if unknown:
        warnings.append(
            "ignored the entries of actions not known here: "
            + ", ".join(f"{a} ({k})" for a, k in sorted(unknown.items()))
        )
    # What was held when the history began: the end state less the changes.
    end_reserved = end_allocated = 0
    for n, segment in enumerate(_list(snapshot.get("segments", []), '"segments"')):
        where = f"segments[{n}]"
        if _integer(_dict(segment, where), "device", where, default=0) == device:
            end_reserved += _integer(segment, "total_size", where, default=0)
            end_allocated += _integer(segment, "allocated_size", where, default=0)
    start_reserved = max(end_reserved - reserved, 0)
    start_allocated = max(end_allocated - allocated, 0)
    header = {
        "workload": "",
        "events": len(events),
        "streams": len(streams),
        "actions": actions,
        "peak_allocated_bytes": start_allocated + peak_allocated,
        "peak_reserved_bytes": start_reserved + peak_reserved,
        "segment_allocs": actions.get("segment_alloc", 0) + actions.get("segment_map", 0),
        "live_at_start_bytes": start_allocated,
    }
    return header, events, warnings


def write_trace(path, header, events):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8") as out:
        out.write(json.dumps({"header": header}) + "\n")
        for e in events:
            out.write(json.dumps(e, separators=(",", ":")) + "\n")


def whole_number(what, not_whole):
    """An argparse type: a whole number, 0 or more; `not_whole` is the
    message (before the text) for something that is not one."""
    def parse(text):
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{not_whole}: {text!r}") from None
        if n < 0:
            raise argparse.ArgumentTypeError(f"a {what} is 0 or more, not {n}")
        return n
    return parse


# --peak-reserved's and --peak-allocated's value: bytes, 0 or more.
byte_count = whole_number("byte count", "not a whole number of bytes")
# --device's value: a device number, 0 or more.
device_number = whole_number("device number", "invalid int value")


def contradiction(header):
    """Why the header's figures cannot all be true, or None: an allocator's
    allocations lie inside what it reserved, and its peak allocated includes
    what it held when the history began (as `streamcore replay` checks)."""
    reserved = header["peak_reserved_bytes"]
    allocated = header["peak_allocated_bytes"]
    start = header["live_at_start_bytes"]
    if reserved < allocated:
        return (f"the peak reserved ({reserved} B) is below the peak allocated ({allocated} B), "
                "which cannot be: an allocator's allocations lie inside what it reserved")
    if allocated < start:
        return (f"the peak allocated ({allocated} B) is below what the snapshot held when its "
                f"history began ({start} B), which cannot be: are --peak-allocated and "
                "--peak-reserved this run's figures?")
    return None


def say(line):
    """`torch_snapshot_to_trace: line` on stderr (nothing where stderr
    cannot be written: the exit status still says how it went)."""
    try:
        print(f"torch_snapshot_to_trace: {line}", file=sys.stderr, flush=True)
    except OSError:
        pass




def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("snapshot", help="snapshot.pickle (as _dump_snapshot writes it) or .json")
    p.add_argument("trace", help="output: trace.jsonl.gz (gzip) or trace.jsonl (plain)")
    p.add_argument("--device", type=device_number, default=0,
                   help="which device's history (default 0)")
    p.add_argument("--workload", help="the workload's name (default: the snapshot's file name)")
    p.add_argument("--peak-reserved", type=byte_count, help="torch.cuda.max_memory_reserved()")
    p.add_argument("--peak-allocated", type=byte_count, help="torch.cuda.max_memory_allocated()")
    args = p.parse_args(argv)
    if (args.peak_reserved is not None and args.peak_allocated is not None
            and args.peak_reserved < args.peak_allocated):
        p.error(f"--peak-reserved {args.peak_reserved} is below --peak-allocated "
                f"{args.peak_allocated}: an allocator's allocations lie inside what it reserved")
    try:
        snapshot = load_snapshot(args.snapshot)
        header, events, warnings = convert(snapshot, args.device)
    except OSError as e:
        say(f"{args.snapshot}: {e.strerror or e}")
        return 1
    except (ValueError, pickle.UnpicklingError, EOFError) as e:
        say(f"{args.snapshot}: {e}")
        return 1
    header["workload"] = args.workload or Path(args.snapshot).name.split(".")[0]
    if args.peak_reserved is not None:
        header["peak_reserved_bytes"] = args.peak_reserved
    if args.peak_allocated is not None:
        header["peak_allocated_bytes"] = args.peak_allocated
    why = contradiction(header)
    if why:
        say(f"{args.snapshot}: {why}")
        return 1
    for w in warnings:
        say(f"warning: {w}")
    try:
        write_trace(args.trace, header, events)
    except OSError as e:
        say(f"{args.trace}: {e.strerror or e}")
        return 1
    try:
        print(f"{args.trace}: {len(events)} events, {header['streams']} streams",
              file=sys.stderr, flush=True)
    except OSError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
