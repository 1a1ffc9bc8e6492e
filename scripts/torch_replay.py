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
is missing, and nothing runs.

Standard library and torch only. Exit status: 0 when every replay ran; 1
when a TRACE is not a readable file (nothing replayed) or does not parse
(the others replayed); 2 for bad arguments; 3 when skipped (nothing
replayed): PyTorch is not installed or sees no CUDA device.
"""

import argparse
import gzip
import json
import os
import subprocess
import sys
import time

ALLOCATORS = {
    "default": None,
    "expandable": "expandable_segments:True",
    "async": "backend:cudaMallocAsync",
}

TOUCH_BYTES = 64 * 1024
SKIPPED = 3  # the exit status when PyTorch or a CUDA device is missing
COLUMNS = "trace allocator touch wall_ms driver_calls peak_used peak_live ratio"


def load(path):
    """(name, events, peak_live): events are (op, id, size, stream) tuples."""
    opener = gzip.open if path.endswith(".gz") else open
    events = []
    header = {}
    live = {}
    cur = 0
    peak = 0
    with opener(path, "rt") as f:
        for n, line in enumerate(f):
            line = line.strip()
            if not line:
                continue
            obj = json.loads(line)
            if n == 0 and "header" in obj:
                header = obj["header"]
                continue
            if obj["op"] == "alloc":
                size = int(obj["size"])
                events.append((0, obj["id"], size, int(obj.get("stream", 0))))
                live[obj["id"]] = size
                cur += size
                peak = max(peak, cur)
            elif obj["op"] == "free":
                if obj["id"] not in live:
                    raise ValueError(f"free of unknown id {obj['id']} at line {n + 1}")
                cur -= live.pop(obj["id"])
                events.append((1, obj["id"], 0, 0))
    name = os.path.basename(path)
    for suffix in (".gz", ".jsonl"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return header.get("workload") or name, events, peak


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
    for op, ident, size, stream in events:
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
    torch.cuda.synchronize()
    wall = time.perf_counter() - start
    live.clear()
    torch.cuda.set_stream(torch.cuda.default_stream())
    return wall, peak


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
        print("torch_replay: SKIPPED: PyTorch is not installed", file=sys.stderr)
        return None
    if not torch.cuda.is_available():
        print("torch_replay: SKIPPED: PyTorch sees no CUDA device", file=sys.stderr)
        return None
    return torch


# Traces parsed by `load_error`, for this process's replay to use.
LOADED = {}


def load_error(path):
    """Why `path` does not parse as a trace (one line), or None; a trace
    that parses is kept for this process's replay."""
    try:
        LOADED[path] = load(path)
    except (OSError, EOFError, ValueError) as e:
        return str(e)
    except (KeyError, TypeError) as e:
        return f"not a trace ({type(e).__name__}: {e})"
    return None


def run_in_process(torch, args):
    torch.cuda.init()
    torch.empty(1, device="cuda")  # context and allocator up before any measurement
    ok = True
    for path in args.traces:
        try:
            name, events, peak_live = LOADED.pop(path, None) or load(path)
        except (OSError, EOFError, ValueError) as e:
            print(f"torch_replay: {path}: {e}", file=sys.stderr)
            ok = False
            continue
        except (KeyError, TypeError) as e:
            print(f"torch_replay: {path}: not a trace ({type(e).__name__}: {e})", file=sys.stderr)
            ok = False
            continue
        nstreams = 1 + max((e[3] for e in events if e[0] == 0), default=0)
        streams = [torch.cuda.Stream() for _ in range(nstreams)]
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_stats()
        wall, _ = replay(torch, events, streams, args.touch, sample=False)
        after = torch.cuda.memory_stats()
        calls = "-"
        if "num_device_alloc" in after and "num_device_free" in after:
            calls = str(
                after["num_device_alloc"] - before.get("num_device_alloc", 0)
                + after["num_device_free"] - before.get("num_device_free", 0)
            )
        torch.cuda.empty_cache()
        torch.cuda.synchronize()
        _, peak_used = replay(torch, events, streams, args.touch, sample=True)
        torch.cuda.empty_cache()
        ratio = peak_used / peak_live if peak_live else 0.0
        print(
            f"{name} torch-{args.allocator} {'yes' if args.touch else 'no'} {wall * 1e3:.1f} "
            f"{calls} {peak_used} {peak_live} {ratio:.4f}",
            flush=True,
        )
    return 0 if ok else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--allocator", choices=["all", *ALLOCATORS], default="all")
    p.add_argument("--touch", action="store_true", help="write 64 KiB into each new allocation")
    p.add_argument("--no-header", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("traces", nargs="+", metavar="TRACE")
    args = p.parse_args()
    bad = [(path, why) for path in args.traces for why in [unreadable(path)] if why]
    for path, why in bad:
        print(f"torch_replay: {path}: {why}", file=sys.stderr)
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
                print(f"torch_replay: {path}: {why}", file=sys.stderr)
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
        print(COLUMNS, flush=True)
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
            cmd = [sys.executable, __file__, "--no-header", "--allocator", args.allocator]
            cmd += ["--touch"] if args.touch else []
            rc = subprocess.call(cmd + args.traces, env=env)
            return rc or (0 if ok else 1)
        return run_in_process(torch, args) or (0 if ok else 1)
    status = 0
    for name in ALLOCATORS:
        cmd = [sys.executable, __file__, "--no-header", "--allocator", name]
        cmd += ["--touch"] if args.touch else []
        rc = subprocess.call(cmd + args.traces)
        status = status or rc
    return status or (0 if ok else 1)


if __name__ == "__main__":
    sys.exit(main())
