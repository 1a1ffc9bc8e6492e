#!/usr/bin/env bash
# Runs builds of the core's `device` bench (null platform) side by side on
# this host: one process of each in turn, N rounds. Each process runs the
# divan benches (medians, no clock read inside a timed loop) and then the
# `COLD=1` pass (a pipeline stage with the caches evicted before each
# launch). Prints one line per process, then per build the medians and,
# against the first build, in how many rounds it was faster.
#
#   scripts/core_ab.sh N NAME=BINARY [NAME=BINARY...]
#
# BINARY: `target/release/deps/device-*` from
# `cargo bench -p streamcore --bench device --no-run`. Needs no GPU and no
# Rust: carry the binaries to the host whose CPU is to judge a change
# (BENCHMARKS.md section 4, round 12). Columns: `stage` the divan pipeline
# round over its 64 stages (ns a stage, warm), `launch` one launch over
# three buffers with its info words cached (ns), `evicted` COLD=1's stage
# with every cache evicted (ns; its clock reads are included, and cost
# differently by host). Standard tools only.
set -uo pipefail

rounds="${1:?usage: core_ab.sh N NAME=BINARY [NAME=BINARY...]}"
shift
[[ $# -ge 1 ]] || { echo "usage: core_ab.sh N NAME=BINARY [NAME=BINARY...]" >&2; exit 2; }
for spec in "$@"; do
    [[ "$spec" == *=* && -x "${spec#*=}" ]] || { echo "core_ab.sh: '$spec' is not NAME=EXECUTABLE" >&2; exit 2; }
done

# The median of divan bench $1 in ns, from its output on stdin.
divan_median() {
    awk -F'│' -v name="$1" '
        { split($1, head, " ") }
        head[2] == name {
            split($3, m, " "); v = m[1]; u = m[2]
            if (u == "µs") v *= 1000; else if (u == "ms") v *= 1000000; else if (u == "ps") v /= 1000
            print v; exit
        }'
}

table="$(mktemp)"
trap 'rm -f "$table"' EXIT
status=0
for round in $(seq 1 "$rounds"); do
    for spec in "$@"; do
        name="${spec%%=*}"
        bin="${spec#*=}"
        out="$("$bin" --bench pipeline_round_64_stages launch_3_buffers_info_hit 2>&1)"
        round_ns="$(divan_median pipeline_round_64_stages <<<"$out")"
        launch="$(divan_median launch_3_buffers_info_hit <<<"$out")"
        # "... median ns/stage: warm W  caches evicted before each launch E (Rx)"
        evicted="$(COLD=1 "$bin" 2>&1 | sed -n 's/.*before each launch \([0-9]*\).*/\1/p' | head -n 1)"
        if [[ -z "$round_ns" || -z "$launch" || -z "$evicted" ]]; then
            echo "$name $round: bench failed"
            status=1
            continue
        fi
        stage="$(awk -v r="$round_ns" 'BEGIN { printf "%.1f", r / 64 }')"
        echo "$name $round stage $stage launch $launch evicted $evicted" | tee -a "$table"
    done
done

echo "== per build: medians over its processes (faster: rounds it beat the first build)"
first="${1%%=*}"
for spec in "$@"; do
    name="${spec%%=*}"
    awk -v name="$name" -v first="$first" '
        function median(a, n,    i, j, t) {
            for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }
        $1 == first { bs[$2] = $4; bl[$2] = $6; be[$2] = $8 }
        $1 == name { n++; r[n] = $2; s[n] = $4; l[n] = $6; e[n] = $8 }
        END {
            if (n == 0) { printf "%s: no results\n", name; exit }
            for (k = 1; k <= n; k++) {
                if ((r[k] in bs) && s[k] < bs[r[k]]) fs++
                if ((r[k] in bl) && l[k] < bl[r[k]]) fl++
                if ((r[k] in be) && e[k] < be[r[k]]) fe++
            }
            printf "%s: %d processes, stage %.1f ns, launch %.1f ns, evicted %.0f ns", name, n, median(s, n), median(l, n), median(e, n)
            if (name != first) printf " (faster than %s in %d / %d / %d rounds)", first, fs, fl, fe
            printf "\n"
        }' "$table"
done
exit $status
