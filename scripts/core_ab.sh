#!/usr/bin/env bash
# Runs builds of the core's `device` bench (null platform) side by side on
# this host: one process of each in turn, N rounds, with `COLD=1` (a
# pipeline stage's two launches timed warm, and with the caches evicted
# before each launch). Prints one line per process, then per build the
# medians and, against the first build, in how many rounds it was faster.
#
#   scripts/core_ab.sh N NAME=BINARY [NAME=BINARY...]
#
# BINARY: `target/release/deps/device-*` from
# `cargo bench -p streamcore --bench device --no-run`. Needs no GPU and no
# Rust: carry the binaries to the host whose CPU is to judge a change
# (the core's warm stage there is what a GPU run attributes to the core's
# bookkeeping; BENCHMARKS.md section 4, round 12). Standard tools only.
set -uo pipefail

rounds="${1:?usage: core_ab.sh N NAME=BINARY [NAME=BINARY...]}"
shift
[[ $# -ge 1 ]] || { echo "usage: core_ab.sh N NAME=BINARY [NAME=BINARY...]" >&2; exit 2; }
for spec in "$@"; do
    [[ "$spec" == *=* && -x "${spec#*=}" ]] || { echo "core_ab.sh: '$spec' is not NAME=EXECUTABLE" >&2; exit 2; }
done

table="$(mktemp)"
trap 'rm -f "$table"' EXIT
status=0
for round in $(seq 1 "$rounds"); do
    for spec in "$@"; do
        name="${spec%%=*}"
        # "... median ns/stage: warm W  caches evicted before each launch E (Rx)"
        line="$(COLD=1 "${spec#*=}" 2>&1 | grep -m1 'median ns/stage')"
        warm="$(sed -n 's/.*warm \([0-9]*\).*/\1/p' <<<"$line")"
        cold="$(sed -n 's/.*before each launch \([0-9]*\).*/\1/p' <<<"$line")"
        if [[ -z "$warm" || -z "$cold" ]]; then
            echo "$name $round: bench failed"
            status=1
            continue
        fi
        echo "$name $round warm $warm cold $cold" | tee -a "$table"
    done
done

echo "== per build: median ns a stage over its processes (faster: rounds it beat the first build)"
first="${1%%=*}"
for spec in "$@"; do
    name="${spec%%=*}"
    awk -v name="$name" -v first="$first" '
        function median(a, n,    i, j, t) {
            for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }
        $1 == first { bw[$2] = $4; bc[$2] = $6 }
        $1 == name { n++; w[n] = $4; c[n] = $6; rw[n] = $2; vw[n] = $4; vc[n] = $6 }
        END {
            if (n == 0) { printf "%s: no results\n", name; exit }
            for (k = 1; k <= n; k++) {
                if ((rw[k] in bw) && vw[k] < bw[rw[k]]) fw++
                if ((rw[k] in bc) && vc[k] < bc[rw[k]]) fc++
            }
            printf "%s: %d processes, warm %.1f, evicted %.1f", name, n, median(w, n), median(c, n)
            if (name != first) printf " (faster than %s: warm in %d, evicted in %d)", first, fw, fc
            printf "\n"
        }' "$table"
done
exit $status
