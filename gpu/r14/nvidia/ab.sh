#!/usr/bin/env bash
# On a GPU machine: runs builds of the `device_vs_hip` bench side by side,
# one process of each in turn, N rounds, and summarizes the launch-path
# budget per build. For telling two builds (a change and its base) apart
# on a host whose run-to-run noise is larger than the change.
#
#   ab.sh N NAME=BINARY [NAME=BINARY...]
#
# Each process runs `device_vs_hip $SECTIONS` (default: launches pipeline).
# Prints one line per process (launch and pipeline ratios, the bare stage,
# the pipeline's added time split into the platform's share, the locks' and
# the core's bookkeeping), then per build: the median of each ratio over
# its processes and how many met the 1.05 target. Logs (NAME-ROUND.log)
# go to $LOG_DIR (default ./logs next to this script). Builds the shim
# first, as run.sh does.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
rounds="${1:?usage: ab.sh N NAME=BINARY [NAME=BINARY...]}"
shift
[[ $# -ge 1 ]] || { echo "usage: ab.sh N NAME=BINARY [NAME=BINARY...]" >&2; exit 2; }
shim="${SHIM_DIR:-/tmp/hip-on-cuda}"
logs="${LOG_DIR:-$here/logs}"
read -r -a sections <<<"${SECTIONS:-launches pipeline}"
mkdir -p "$logs"

if ! "$here/build.sh" "$shim" >"$logs/build.log" 2>&1; then
    tail -n 20 "$logs/build.log"
    echo "ab.sh: shim build failed" >&2
    exit 1
fi
# shellcheck source=env.sh
. "$here/env.sh"
use_shim "$shim"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || true

# The budget line's ratio: the field before "target".
ratio() { grep -m1 -F "$1" "$2" | awk '{for (i = 2; i <= NF; i++) if ($i == "target") print $(i - 1)}'; }

table="$logs/ab.txt"
: >"$table"
status=0
for round in $(seq 1 "$rounds"); do
    for spec in "$@"; do
        name="${spec%%=*}"
        bin="${spec#*=}"
        log="$logs/$name-$round.log"
        if ! "$bin" "${sections[@]}" >"$log" 2>&1; then
            echo "$name $round: bench failed (see $log)"
            status=1
            continue
        fi
        launch="$(ratio 'Device::launch / bare' "$log")"
        pipeline="$(ratio 'two-stream pipeline: Device' "$log")"
        bare="$(grep -m1 -F 'bare (an event' "$log" | awk '{print $(NF - 2)}')"
        split="$(grep -m1 -F "a stage's added ns" "$log" | sed 's/.*medians): //')"
        line="$name $round launch ${launch:-n/a} pipeline ${pipeline:-n/a} bare_stage_ns ${bare:-n/a} | ${split:-}"
        echo "$line"
        echo "$line" >>"$table"
    done
done

echo "== per build: median over its processes (met: processes at or under 1.05)"
for spec in "$@"; do
    name="${spec%%=*}"
    awk -v name="$name" '
        function median(a, n,    i, j, t) {
            for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }
        $1 == name && $4 != "n/a" && $6 != "n/a" {
            n++; l[n] = $4; p[n] = $6; b[n] = $8
            if ($4 <= 1.05) lm++
            if ($6 <= 1.05) pm++
        }
        END {
            if (n == 0) { printf "%s: no results\n", name; exit }
            printf "%s: %d processes, launch %.3f (met %d), pipeline %.3f (met %d), bare stage %.0f ns\n",
                name, n, median(l, n), lm, median(p, n), pm, median(b, n)
        }' "$table"
done
exit $status
