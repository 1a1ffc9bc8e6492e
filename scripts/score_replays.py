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

A row is a line whose second column names the allocator (hipMallocAsync,
streamcore-..., torch-...) and whose third is the touch mode (no, yes);
other lines (comments, a tool's banner) are passed over. Rows are checked,
never guessed at: a row cut short or with a figure that is not a number, a
second row for the same trace, touch mode and allocator (two passes over
one trace: pick one with --section), or two streamcore allocators for one
trace (two layouts) stops the score, saying where. A trace without both
streamcore's and hipMallocAsync's rows, or whose ratio is `-` (it allocates
nothing), is left out with a warning on stderr.

Prints the rows that miss (or every row with `--rows`) and the tally:
rows meeting both figures, bytes, wall. Exit status: 0 when scored; 1,
saying why in one line, when a file cannot be read as text, holds a row
that cannot be scored as it is, or no row has both streamcore's and
hipMallocAsync's figures, or stdout cannot be written; 2 for bad
arguments. A reader that stops early (`| head`) ends it quietly, status 0.
Standard library only.
"""

import argparse
import math
import sys
from collections import defaultdict

from script_io import OutputError, ReaderGone, drop_stdout, emit, stderr_line

TOUCH = ("no", "yes")


class ScoreError(Exception):
    """An input that cannot be scored as it is: the message names the file
    and line."""


def warn(message):
    """`score_replays: warning: message` on stderr (nothing where stderr
    cannot be written)."""
    stderr_line(f"score_replays: warning: {message}")


def read_lines(path):
    """The lines of the text file `path`; ScoreError `PATH: reason` when it
    cannot be read (missing, a directory, not UTF-8 text)."""
    try:
        with open(path, encoding="utf-8") as f:
            return list(f)
    except UnicodeDecodeError:
        gz = " (gzip: decompress it first)" if path.endswith(".gz") else ""
        raise ScoreError(f"{path}: not UTF-8 text{gz}") from None
    except OSError as e:
        raise ScoreError(f"{path}: {e.strerror or e}") from None


def number(text, what, where):
    """`text` as a finite, non-negative number; ScoreError naming `where`
    (PATH:LINE) and `what` (the column) otherwise."""
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not math.isfinite(value) or value < 0:
        raise ScoreError(f"{where}: {what} is {text!r}, not a number of 0 or more")
    return value


def keep_row(rows, key, alloc, value, where, first):
    """Files `value` as `alloc`'s row for `key` (trace, touch), refusing a
    second one: which of the two would be scored?"""
    if alloc in rows[key]:
        raise ScoreError(
            f"{where}: a second {alloc} row for {key[0]} (touch {key[1]}); the first is at "
            f"{first[(key, alloc)]}: give each trace and touch mode one pass (--section NAME "
            "keeps the passes whose `## ` header contains NAME)")
    rows[key][alloc] = value
    first[(key, alloc)] = where


def read_replays(paths, sections):
    """{(trace, touch): {allocator: (wall_ms, ratio)}} over the kept passes.

    A row is a line whose second column names an allocator (hipMallocAsync,
    streamcore-...) and third a touch mode; other lines (comments, a tool's
    banner) are not rows. A row whose figures are not numbers, or a second
    row for the same trace, touch mode and allocator, is ScoreError. A row
    whose ratio is `-` (the trace allocates nothing) has none to score: it
    is left out, with a warning.
    """
    rows = defaultdict(dict)
    first = {}
    for path in paths:
        keep = not sections
        for n, line in enumerate(read_lines(path), 1):
            line = line.strip()
            if line.startswith("## "):
                keep = not sections or any(s in line for s in sections)
                continue
            if not keep or not line or line.startswith("#"):
                continue
            parts = line.split()
            if len(parts) < 3 or parts[2] not in TOUCH or not (
                    parts[1] == "hipMallocAsync" or parts[1].startswith("streamcore")):
                continue
            where = f"{path}:{n}"
            if len(parts) < 8:
                raise ScoreError(f"{where}: a {parts[1]} row of {len(parts)} columns, not 8 "
                                 "(trace allocator touch wall_ms driver_calls peak_used "
                                 "peak_live ratio): cut short?")
            if parts[7] == "-":
                warn(f"{where}: {parts[0]} ({parts[1]}, touch {parts[2]}) has no ratio (the "
                     "trace allocates nothing): left out")
                continue
            wall = number(parts[3], "wall_ms", where)
            ratio = number(parts[7], "ratio", where)
            keep_row(rows, (parts[0], parts[2]), parts[1], (wall, ratio), where, first)
    return rows


def read_torch(path):
    """{(trace, touch): {allocator: ratio}}: the rows of torch_replay.py
    (allocator torch-...), checked as `read_replays` checks its rows."""
    peers = defaultdict(dict)
    if not path:
        return peers
    first = {}
    for n, line in enumerate(read_lines(path), 1):
        parts = line.split()
        if len(parts) < 3 or parts[2] not in TOUCH or not parts[1].startswith("torch-") \
                or line.startswith("#"):
            continue
        where = f"{path}:{n}"
        if len(parts) < 8:
            raise ScoreError(f"{where}: a {parts[1]} row of {len(parts)} columns, not 8: "
                             "cut short?")
        if parts[7] == "-":
            warn(f"{where}: {parts[0]} ({parts[1]}) has no ratio: left out")
            continue
        ratio = number(parts[7], "ratio", where)
        keep_row(peers, (parts[0], parts[2]), parts[1], ratio, where, first)
    return peers


def read_model(path):
    """{(trace, touch): (ratio, predicted_wall_ms)}: the lines of
    policy_sweep (`name touch ratio predicted_wall_ms commits ...`)."""
    model = {}
    if not path:
        return model
    first = {}
    for n, line in enumerate(read_lines(path), 1):
        parts = line.split()
        if len(parts) < 2 or parts[1] not in TOUCH:
            continue
        where = f"{path}:{n}"
        if len(parts) < 5:
            raise ScoreError(f"{where}: a row of {len(parts)} columns, not 5 (name touch "
                             "ratio predicted_wall_ms commits): cut short?")
        key = (parts[0], parts[1])
        if key in model:
            raise ScoreError(f"{where}: a second row for {key[0]} (touch {key[1]}); the first "
                             f"is at {first[key]}")
        model[key] = (number(parts[2], "ratio", where),
                      number(parts[3], "predicted_wall_ms", where))
        first[key] = where
    return model


def score(args):
    """Prints the rows and the tally; ScoreError for input that cannot be
    scored as it is."""
    replays = read_replays(args.logs, args.section)
    torch = read_torch(args.torch)
    model = read_model(args.model)
    base = read_model(args.base_model)
    if not replays:
        wanted = " or ".join(map(repr, args.section))
        where = f" in the passes whose `## ` header contains {wanted}" if args.section else ""
        raise ScoreError(f"no replay rows read{where}")
    scored = {}
    for key in sorted(replays):
        allocs = replays[key]
        ours = sorted(k for k in allocs if k.startswith("streamcore"))
        if len(ours) > 1:
            raise ScoreError(
                f"{key[0]} (touch {key[1]}) has rows of {' and '.join(ours)}: two layouts or "
                "storages in one score; score them one at a time (--section NAME)")
        if not ours or "hipMallocAsync" not in allocs:
            missing = "hipMallocAsync" if ours else "streamcore"
            warn(f"{key[0]} (touch {key[1]}) has no {missing} row: left out")
            continue
        scored[key] = (allocs[ours[0]], allocs["hipMallocAsync"])
    if not scored:
        raise ScoreError(
            "no row to score: none has both streamcore's and hipMallocAsync's figures")

    tally = {"both": 0, "bytes": 0, "wall": 0, "rows": 0}
    sc_wall_sum = pool_wall_sum = 0.0
    emit(f"{'trace':<34} {'touch':<5} {'ratio':>7} {'best peer':>7} {'(peer)':<17} "
         f"{'wall':>8} {'pool':>8}  miss")
    for key, (sc, pool) in scored.items():
        wall, ratio = sc
        if key in model:
            ratio = model[key][0]
            if args.base_model:
                if key not in base:
                    raise ScoreError(f"{args.base_model}: no row for {key[0]} (touch {key[1]}), "
                                     f"which {args.model} has: the wall cannot be scaled")
                if base[key][1] <= 0:
                    raise ScoreError(f"{args.base_model}: {key[0]} (touch {key[1]}) has a "
                                     "predicted wall of 0: the wall cannot be scaled")
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
            emit(f"{key[0]:<34} {key[1]:<5} {ratio:>7.4f} {peer:>7.4f}   {peer_name:<17} "
                 f"{wall:>8.1f} {pool[0]:>8.1f}  {miss}")
    wall_ratio = f"{sc_wall_sum / pool_wall_sum:.3f}" if pool_wall_sum > 0 else "-"
    emit(f"rows {tally['rows']}: both {tally['both']}, bytes {tally['bytes']}, "
         f"wall {tally['wall']}; streamcore / pool wall, all rows {wall_ratio}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("logs", nargs="+")
    ap.add_argument("--torch")
    ap.add_argument("--model")
    ap.add_argument("--base-model")
    ap.add_argument("--section", action="append", default=[])
    ap.add_argument("--rows", action="store_true")
    args = ap.parse_args()
    if args.base_model and not args.model:
        ap.error("--base-model scales the walls of --model: give --model too")
    try:
        score(args)
    except ScoreError as e:
        stderr_line(f"score_replays: {e}")
        return 1
    except OutputError as e:
        stderr_line(f"score_replays: writing the output: {e}")
        return 1
    except ReaderGone:
        # Nobody reads the rest (`| head`): stop quietly.
        drop_stdout()
    return 0


if __name__ == "__main__":
    sys.exit(main())
