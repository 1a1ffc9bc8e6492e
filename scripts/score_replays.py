#!/usr/bin/env python3
"""Scores replays against issue 11's peers: one row per trace and touch mode.

    score_replays.py [--torch TORCH_LOG] [--model SWEEP_OUT [--base-model SWEEP_OUT]]
                     [--section NAME] [--rows] REPLAY_LOG...

REPLAY_LOG: what `streamcore replay --platform hip` printed (or a file of
several such passes with `## NAME` headers, as in
`platform-hip/nvidia/results/replay-h200-round*-ab.txt`); `--section NAME`
keeps the passes whose header contains NAME (several may be given: their
rows are merged, touch mode telling them apart). Each row of streamcore is
judged against:

- bytes: at or below the best peer's peak used / peak live, the peers being
  the driver's pool (`hipMallocAsync`, from the same log) and PyTorch's three
  allocators (`--torch`: the output of `scripts/torch_replay.py`);
- wall: at or below the pool's wall time in the same pass.

`--model`: the output of the mock's `policy_sweep` example (lines `name touch
ratio predicted_wall_ms commits`). Its ratios replace streamcore's measured
ones (the driver model predicts them exactly), and its walls are judged as
estimates: measured wall x model wall / base model wall, where `--base-model`
is the sweep of the build the replay log measured (without it the model's
ratios are judged and the measured walls kept).

Prints the rows that miss (or every row with `--rows`) and the tally:
rows meeting both figures, bytes, wall. Exits non-zero, saying why, when a
file cannot be read as text or no row has both streamcore's and
hipMallocAsync's figures. Standard library only.
"""

import argparse
import sys
from collections import defaultdict


def read_lines(path):
    """The lines of the text file `path`; exits with `score_replays: PATH:
    reason` when it cannot be read (missing, a directory, not UTF-8 text)."""
    try:
        with open(path, encoding="utf-8") as f:
            return list(f)
    except UnicodeDecodeError:
        gz = " (gzip: decompress it first)" if path.endswith(".gz") else ""
        sys.exit(f"score_replays: {path}: not UTF-8 text{gz}")
    except OSError as e:
        sys.exit(f"score_replays: {path}: {e.strerror or e}")


def read_replays(paths, sections):
    """{(trace, touch): {allocator: (wall_ms, ratio)}} over the kept passes."""
    rows = defaultdict(dict)
    for path in paths:
        keep = not sections
        for line in read_lines(path):
            line = line.strip()
            if line.startswith("## "):
                keep = not sections or any(s in line for s in sections)
                continue
            if not keep or not line or line.startswith("#") or line.startswith("trace "):
                continue
            parts = line.split()
            if len(parts) < 8:
                continue
            trace, alloc, touch, wall = parts[0], parts[1], parts[2], parts[3]
            try:
                rows[(trace, touch)][alloc] = (float(wall), float(parts[7]))
            except ValueError:
                continue
    return rows


def read_torch(path):
    """{(trace, touch): {allocator: ratio}}."""
    peers = defaultdict(dict)
    if not path:
        return peers
    for line in read_lines(path):
        parts = line.split()
        if len(parts) < 8 or line.startswith("#") or parts[0] == "trace":
            continue
        try:
            peers[(parts[0], parts[2])][parts[1]] = float(parts[7])
        except ValueError:
            continue
    return peers


def read_model(path):
    """{(trace, touch): (ratio, predicted_wall_ms)}."""
    model = {}
    if not path:
        return model
    for line in read_lines(path):
        parts = line.split()
        if len(parts) < 5 or parts[1] not in ("no", "yes"):
            continue
        try:
            model[(parts[0], parts[1])] = (float(parts[2]), float(parts[3]))
        except ValueError:
            continue
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("logs", nargs="+")
    ap.add_argument("--torch")
    ap.add_argument("--model")
    ap.add_argument("--base-model")
    ap.add_argument("--section", action="append", default=[])
    ap.add_argument("--rows", action="store_true")
    args = ap.parse_args()

    replays = read_replays(args.logs, args.section)
    torch = read_torch(args.torch)
    model = read_model(args.model)
    base = read_model(args.base_model)
    if not replays:
        sys.exit("no replay rows read")
    if not any(
        any(k.startswith("streamcore") for k in allocs) and "hipMallocAsync" in allocs
        for allocs in replays.values()
    ):
        sys.exit("no row to score: none has both streamcore's and hipMallocAsync's figures")

    tally = {"both": 0, "bytes": 0, "wall": 0, "rows": 0}
    sc_wall_sum = pool_wall_sum = 0.0
    print(f"{'trace':<34} {'touch':<5} {'ratio':>7} {'best peer':>7} {'(peer)':<17} "
          f"{'wall':>8} {'pool':>8}  miss")
    for key in sorted(replays):
        allocs = replays[key]
        sc = next((v for k, v in allocs.items() if k.startswith("streamcore")), None)
        pool = allocs.get("hipMallocAsync")
        if sc is None or pool is None:
            continue
        wall, ratio = sc
        if key in model:
            ratio = model[key][0]
            if key in base and base[key][1] > 0:
                wall = wall * model[key][1] / base[key][1]
        peers = {"hipMallocAsync": pool[1]}
        peers.update(torch.get(key, {}))
        peer_name, peer = min(peers.items(), key=lambda kv: kv[1])
        # Ratios are printed to four decimals: judge them there.
        bytes_ok = round(ratio, 4) <= round(peer, 4)
        wall_ok = wall <= pool[0]
        tally["rows"] += 1
        tally["bytes"] += bytes_ok
        tally["wall"] += wall_ok
        tally["both"] += bytes_ok and wall_ok
        sc_wall_sum += wall
        pool_wall_sum += pool[0]
        miss = ",".join(m for m, ok in (("bytes", bytes_ok), ("wall", wall_ok)) if not ok)
        if args.rows or miss:
            print(f"{key[0]:<34} {key[1]:<5} {ratio:>7.4f} {peer:>7.4f}   {peer_name:<17} "
                  f"{wall:>8.1f} {pool[0]:>8.1f}  {miss}")
    wall_ratio = f"{sc_wall_sum / pool_wall_sum:.3f}" if pool_wall_sum > 0 else "-"
    print(f"rows {tally['rows']}: both {tally['both']}, bytes {tally['bytes']}, "
          f"wall {tally['wall']}; streamcore / pool wall, all rows {wall_ratio}")


if __name__ == "__main__":
    main()
