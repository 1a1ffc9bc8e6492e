#!/usr/bin/env python3
"""Fits the driver model's squared term to replays measured on a GPU.

    scripts/fit_squared_term.py [--ps PS] [--layout LABEL=SETTINGS]... LOG...

Each LOG is the output of `streamcore replay --platform hip` (one or more
tables); only its rows without the touch are read. Its streamcore rows are
named `streamcore-vmm-LABEL`, LABEL being the layout given to `--layout`
(`balanced` for the default, else the file's name); `--layout
LABEL=SETTINGS` says which `policy_sweep` settings (of this tree's
default policy) each label stands for, `--layout LOGNAME:LABEL=SETTINGS`
the same for one log (its file name) only. A row whose label has no
mapping is left out, and said so: map only the layouts this tree still
builds as they were measured. Rows of the same trace and settings are
averaged. Fit logs of one host only: hosts differ in h.

For each (trace, label) the driver model's figures come from
`policy_sweep SETTINGS --calls` over the trace files in tests/real_held_out,
tests/real and tests/traces (the trace matched by name). The model's
predicted wall less its squared part (PS picoseconds per MiB squared, the
table's `chunk_squared_ps`, default 245) is the linear prediction L; the
fit is measured = h x L + q x S, S the sum of every commit's and decommit's
MiB squared, by least squares on the relative error. It prints h, q (on
the host measured and on the table's scale: q / h), and each row's error
with the linear model scaled by its own best h and with the fitted terms.

Needs cargo (it builds the example) and python3; run from anywhere.
"""

import argparse
import os
import subprocess
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SETS = ("tests/real_held_out", "tests/real", "tests/traces")


def measured(logs, labels):
    """(trace, settings) -> mean streamcore wall in ms, over every log row
    without the touch whose label maps to settings."""
    walls = defaultdict(list)
    for path in logs:
        name = os.path.basename(path)
        with open(path, encoding="utf-8") as f:
            for line in f:
                p = line.split()
                if len(p) < 4 or line.startswith("#") or not p[1].startswith("streamcore-vmm-"):
                    continue
                if p[2] != "no":
                    continue
                label = p[1][len("streamcore-vmm-"):]
                settings = labels.get(f"{name}:{label}", labels.get(label))
                if settings is None:
                    print(f"left out: {name} {p[0]} {label} (no --layout for it)", file=sys.stderr)
                    continue
                try:
                    walls[(p[0], settings)].append(float(p[3]))
                except ValueError:
                    continue
    return {k: sum(v) / len(v) for k, v in walls.items()}


def model(settings):
    """trace -> (predicted ms, sum of MiB squared), untouched rows."""
    files = []
    for d in SETS:
        full = os.path.join(ROOT, d)
        if os.path.isdir(full):
            files += sorted(
                os.path.join(full, f) for f in os.listdir(full) if f.endswith(".jsonl.gz")
            )
    sweep = os.path.join(ROOT, "target/release/examples/policy_sweep")
    out = subprocess.run(
        [sweep, settings, "--calls", *files], check=True, capture_output=True, text=True
    ).stdout
    rows = {}
    for line in out.splitlines():
        p = line.split()
        if len(p) >= 13 and p[1] == "no":
            rows[p[0]] = (float(p[3]), int(p[12]))
    return rows


def solve2(a, b):
    """Least squares for two unknowns: a is a list of (x1, x2), b the targets."""
    s11 = sum(x * x for x, _ in a)
    s12 = sum(x * y for x, y in a)
    s22 = sum(y * y for _, y in a)
    t1 = sum(x * t for (x, _), t in zip(a, b))
    t2 = sum(y * t for (_, y), t in zip(a, b))
    det = s11 * s22 - s12 * s12
    if det == 0:
        sys.exit("fit_squared_term.py: the rows do not tell the two terms apart")
    return (t1 * s22 - t2 * s12) / det, (s11 * t2 - s12 * t1) / det


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ps", type=float, default=245.0)
    ap.add_argument("--layout", action="append", default=[])
    ap.add_argument("logs", nargs="+")
    args = ap.parse_args()
    labels = {}
    for spec in args.layout:
        label, _, settings = spec.partition("=")
        labels[label] = settings
    subprocess.run(
        ["cargo", "build", "--release", "-q", "-p", "streamcore-mock", "--example", "policy_sweep"],
        cwd=ROOT,
        check=True,
    )
    walls = measured(args.logs, labels)
    models = {}
    rows = []
    for (trace, settings), wall in sorted(walls.items()):
        if settings not in models:
            models[settings] = model(settings)
        if trace not in models[settings]:
            print(f"left out: {trace} (no trace file of that name)", file=sys.stderr)
            continue
        pred, sq = models[settings][trace]
        linear = pred - sq * args.ps / 1e9
        rows.append((trace, settings or "(default)", wall, linear, sq))
    if len(rows) < 2:
        sys.exit("fit_squared_term.py: fewer than two rows to fit")
    # Relative least squares: each row divided by its measured wall.
    h, q = solve2([(lin / w, sq / w) for _, _, w, lin, sq in rows], [1.0] * len(rows))
    h0 = sum(lin / w for *_, w, lin, _ in rows) / sum((lin / w) ** 2 for *_, w, lin, _ in rows)
    print(f"rows {len(rows)}: h {h:.3f}, q {q * 1e9:.0f} ps per MiB^2 on this host, "
          f"{q * 1e9 / h:.0f} on the table's scale")
    errs_lin, errs_fit = [], []
    print(f"{'trace':34} {'layout':28} {'measured':>9} {'linear x h':>10} {'fitted':>9}")
    for trace, label, w, lin, sq in rows:
        a, b = h0 * lin, h * lin + q * sq
        errs_lin.append(abs(a / w - 1))
        errs_fit.append(abs(b / w - 1))
        print(f"{trace:34} {label:28} {w:9.1f} {a:10.1f} {b:9.1f}")
    mean = lambda xs: sum(xs) / len(xs)
    print(f"linear model x {h0:.3f}: mean error {mean(errs_lin):.1%}, at most {max(errs_lin):.1%}")
    print(f"with the squared term: mean error {mean(errs_fit):.1%}, at most {max(errs_fit):.1%}")


if __name__ == "__main__":
    main()
