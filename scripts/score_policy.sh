#!/usr/bin/env bash
# Scores one variant of the default memory policy on every set of workloads
# replayed on a GPU so far, as BENCHMARKS.md section 6 tallies them: the
# rows meeting both of issue 11's figures (peak used / peak live at or below
# the best peer's, wall at or below the driver pool's), their bytes, their
# wall.
#
#   scripts/score_policy.sh [SETTINGS [BASE_SETTINGS]]
#
# SETTINGS: what `policy_sweep` takes (comma-separated name=value, "" for
# the default policy). Each set's streamcore rows come from the driver
# model (`policy_sweep SETTINGS`): its ratios, and its walls as the
# measured wall times the model's wall over the model's wall for
# BASE_SETTINGS (`score_replays.py --base-model`). BASE_SETTINGS stands for
# the builds that measured the logs below; its default,
# "align=0,share=0,space=0,rt=0,idle=64", is round 21's layout (and
# neither round-trip settling, round 26's, nor the idle cap, round 27's,
# which no build of those logs had), which gives the
# same model figures as the builds of rounds 16-22 on all but the held-out
# CNN, so a variant's tally is comparable with another's, not an exact
# prediction of a GPU run. A set measured by a later build (fresh07: main
# a876240) names that build's settings itself and is scaled by them.
#
# The sets and the committed logs they are judged against
# (platform-hip/nvidia/results):
#   88 rows     the recorded traces and the synthetic sets, H200 round 16
#               (PyTorch: round 7)
#   real        tests/real, H100 round 19
#   fresh04     the fresh set of seed 20261204, H200 round 11
#   fresh07     the fresh set of seed 20261207, H100 round 30 (PyTorch on
#               the same machine)
#   held-out    tests/real_held_out, H100 round 22 (PyTorch untouched only)
#
# Prints one line per set and the totals. Needs cargo and python3.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
cd "$root"
setting="${1:-}"
base="${2:-align=0,share=0,space=0,rt=0,idle=64}"
results=platform-hip/nvidia/results

cargo build --release -q -p streamcore-mock --example policy_sweep
sweep=target/release/examples/policy_sweep
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The default policy of main a876240 (round 29), which measured the fresh set
# of seed 20261207: spelled out, so a later change of the default does not
# move that set's base.
a876240="trim=7,fit=5,round=7,step=6,split=0,piece=64,large=384,guard=1,align=32,shed=0"
a876240="$a876240,share=1,keep=1,space=1,small=0,rt=64,reserve_ns=500,mib_ns=150,idle=2"

# set name | policy_sweep arguments | score_replays.py arguments [| the
# settings of the build that measured it, when not BASE_SETTINGS]
sets=(
    "88 rows||--torch $results/torch-replay-h200-round7.txt $results/replay-h200-round16.txt"
    "real|tests/real/*.jsonl.gz|$results/replay-h100-round19-real.txt"
    "fresh04|--seeds 20261204..20261204|--section new --section torch $results/replay-h200-round11-fresh20261204.txt"
    "fresh07|--seeds 20261207..20261207|--section fresh --torch $results/torch-replay-h100-round30.txt $results/replay-h100-round30.txt|$a876240"
    "held-out|tests/real_held_out/*.jsonl.gz|--torch $results/torch-replay-h100-round22-held-out.txt $results/replay-h100-round22-held-out.txt"
)
for entry in "${sets[@]}"; do
    IFS='|' read -r name args scoring own_base <<<"$entry"
    # shellcheck disable=SC2086 # the arguments split on purpose
    "$sweep" "$setting" $args >"$work/model.txt"
    # shellcheck disable=SC2086
    "$sweep" "${own_base:-$base}" $args >"$work/base.txt"
    # shellcheck disable=SC2086
    tally="$(python3 scripts/score_replays.py --model "$work/model.txt" \
        --base-model "$work/base.txt" $scoring | tail -n 1)"
    printf '%-9s %s\n' "$name" "$tally"
done | tee "$work/tallies.txt"
python3 - "$work/tallies.txt" <<'EOF'
import re, sys
both = bytes_ = wall = rows = 0
for line in open(sys.argv[1]):
    m = re.search(r"rows (\d+): both (\d+), bytes (\d+), wall (\d+)", line)
    if not m:
        sys.exit(f"score_policy.sh: no tally in: {line.strip()}")
    rows += int(m[1]); both += int(m[2]); bytes_ += int(m[3]); wall += int(m[4])
print(f"all       rows {rows}: both {both}, bytes {bytes_}, wall {wall}")
EOF
