#!/usr/bin/env bash
# Memory on the real device, all of it in one run: the driver cost
# calibration, the HIP platform tests and scenario suite, the trace replays
# through streamcore's storages beside hipMallocAsync (with and without the
# 64 KiB touch), and the same traces through PyTorch's three allocators.
#
# Two steps, because the GPU machine has no Rust toolchain:
#
#   [FRESH_SEED=N] scripts/gpu_memory_suite.sh --prepare DIR
#       where Rust is: builds the release binaries (no debug info), strips
#       them and copies them, the shim sources, the scripts and the traces
#       into DIR (a few tens of MiB): the recorded traces, the synthetic
#       workloads (tests/unseen), the held-out set (tests/heldout) and,
#       with FRESH_SEED, a fresh set drawn from that seed (tests/fresh,
#       `synthetic::fresh`: workloads no choice of the policy has seen).
#
#   DIR/scripts/gpu_memory_suite.sh [LOG_DIR]
#       on the GPU machine (gcc, a CUDA toolkit, python3 with PyTorch):
#       builds the shim, runs everything, writes one log per step and
#       summary.txt into LOG_DIR (default: ./gpu-logs), and prints the
#       summary. Exit status 0 when every step ran (the verdicts are in the
#       summary, not in the status). Without PyTorch or a CUDA device
#       torch_replay.py exits 3 and replays nothing: the torch step is
#       reported skipped, counts as not run (status 1) and torch_touch is
#       not started; SKIP_TORCH=1 leaves both out on purpose.
#
# Environment (run step): TRACES (default: every trace under DIR/tests:
# traces, unseen, heldout, fresh, real; --prepare copies the recorded four
# and the six real workloads of tests/real, and writes unseen and heldout),
# RUNS (timed passes per allocator, default 5), SKIP_TORCH=1,
# SKIP_CALIBRATE=1, SKIP_TESTS=1; RECORD=1 first records the real workloads of
# scripts/record_workloads.py into DIR/tests/real, RECORD=held-out its second
# set (held out from every policy choice) into DIR/tests/real_held_out
# (replayed with the others when TRACES is not given, and counted as their
# own set in the summary; a failed recording is reported and the rest runs).
# A set whose folder is missing is left out; no trace at all: exit 2.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"

if [[ "${1:-}" == "--prepare" ]]; then
    set -e
    dest="${2:?usage: gpu_memory_suite.sh --prepare DIR}"
    mkdir -p "$dest/bin" "$dest/scripts" "$dest/tests/traces" "$dest/platform-hip"
    cd "$root"
    cargo build --release -p streamcore-cli --bin streamcore
    exe() { # exe CARGO-ARGS...: the test executable cargo builds
        cargo "$@" --release --no-run --message-format=json 2>/dev/null |
            python3 -c 'import json,sys
for l in sys.stdin:
    try: m = json.loads(l)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m.get("profile", {}).get("test"):
        print(m["executable"])' | tail -n 1
    }
    cp target/release/streamcore "$dest/bin/streamcore"
    cp "$(exe test -p streamcore-hip --test platform)" "$dest/bin/platform_tests"
    cp "$(exe test -p streamcore-tests --test hip)" "$dest/bin/hip_suite"
    strip "$dest/bin/"* 2>/dev/null || true
    rm -rf "$dest/platform-hip/nvidia"
    cp -r platform-hip/nvidia "$dest/platform-hip/nvidia"
    rm -rf "$dest/platform-hip/nvidia/build" "$dest/platform-hip/nvidia/logs"
    cp scripts/gpu_memory_suite.sh scripts/torch_replay.py scripts/record_workloads.py \
        scripts/held_out_workloads.py scripts/workload_parts.py scripts/torch_snapshot_to_trace.py \
        scripts/script_io.py \
        "$dest/scripts/"
    cp tests/traces/*.jsonl.gz "$dest/tests/traces/"
    mkdir -p "$dest/tests/real"
    cp tests/real/*.jsonl.gz "$dest/tests/real/"
    if compgen -G "tests/real_held_out/*.jsonl.gz" >/dev/null; then
        mkdir -p "$dest/tests/real_held_out"
        cp tests/real_held_out/*.jsonl.gz "$dest/tests/real_held_out/"
    fi
    rm -rf "$dest/tests/unseen" "$dest/tests/heldout" "$dest/tests/fresh"
    cargo run --release -q -p streamcore-mock --example write_workloads -- "$dest/tests/unseen"
    cargo run --release -q -p streamcore-mock --example write_workloads -- "$dest/tests/heldout" --held-out
    if [[ -n "${FRESH_SEED:-}" ]]; then
        cargo run --release -q -p streamcore-mock --example write_workloads -- "$dest/tests/fresh" --seed "$FRESH_SEED"
    fi
    du -sh "$dest"
    exit 0
fi

logs="${1:-$PWD/gpu-logs}"
mkdir -p "$logs"
logs="$(cd "$logs" && pwd)"
bin="$root/bin"
nvidia="$root/platform-hip/nvidia"
shim="${SHIM_DIR:-/tmp/hip-on-cuda}"
runs="${RUNS:-5}"
record="${RECORD:-0}"
if [[ "$record" == 1 || "$record" == held-out ]]; then
    # Before the traces are listed, so that the new ones are among them.
    if [[ "$record" == 1 ]]; then
        into="$root/tests/real" set_flag=()
    else
        into="$root/tests/real_held_out" set_flag=(--held-out)
    fi
    mkdir -p "$into"
    echo "== record: $root/scripts/record_workloads.py ${set_flag[*]} $into" | tee "$logs/record.log"
    python3 "$root/scripts/record_workloads.py" "${set_flag[@]}" "$into" >>"$logs/record.log" 2>&1
    rc=$?
    echo "== record exit $rc" | tee -a "$logs/record.log"
    [[ $rc -eq 0 ]] || status_record=1
fi
if [[ -n "${TRACES:-}" ]]; then
    read -r -a traces <<<"$TRACES"
else
    # A set whose folder is gone (the recorded four removed to replay only
    # the real workloads) adds nothing: its pattern is never passed on.
    traces=()
    for set in traces unseen heldout fresh real real_held_out; do
        for f in "$root/tests/$set"/*.jsonl.gz; do
            [[ -e "$f" ]] && traces+=("$f")
        done
    done
fi
if [[ ${#traces[@]} -eq 0 ]]; then
    echo "gpu_memory_suite.sh: no traces to replay (none under $root/tests, TRACES empty)" >&2
    exit 2
fi
status=${status_record:-0}
step() { # step NAME COMMAND...: runs, logs to NAME.log, notes failures; returns the status
    local name="$1"; shift
    echo "== $name: $*" | tee "$logs/$name.log"
    local start=$SECONDS
    "$@" >>"$logs/$name.log" 2>&1
    local rc=$?
    echo "== $name exit $rc in $((SECONDS - start)) s" | tee -a "$logs/$name.log"
    [[ $rc -eq 0 ]] || status=1
    return $rc
}

{
    nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv 2>&1 || true
    (command -v nvcc >/dev/null && nvcc --version | tail -n 2) || echo "no nvcc on PATH"
    python3 -c 'import torch; print("torch", torch.__version__)' 2>&1 || true
} >"$logs/device.txt"
cat "$logs/device.txt"

step shim "$nvidia/build.sh" "$shim"
# shellcheck source=../platform-hip/nvidia/env.sh
. "$nvidia/env.sh"
use_shim "$shim"

[[ "${SKIP_CALIBRATE:-0}" == 1 ]] || step calibrate env SHIM_DIR="$shim" "$nvidia/calibrate.sh"
if [[ "${SKIP_TESTS:-0}" != 1 ]]; then
    [[ -x "$bin/platform_tests" ]] && step platform_tests "$bin/platform_tests" --test-threads=1
    [[ -x "$bin/hip_suite" ]] && step hip_suite "$bin/hip_suite"
fi
step replay "$bin/streamcore" replay --platform hip --runs "$runs" "${traces[@]}"
step replay_touch "$bin/streamcore" replay --platform hip --touch --runs "$runs" "${traces[@]}"
if [[ "${SKIP_TORCH:-0}" != 1 ]]; then
    step torch python3 "$root/scripts/torch_replay.py" "${traces[@]}"
    if [[ $? -eq 3 ]]; then # torch_replay.py's "skipped": no PyTorch or no CUDA device
        echo "== torch $(grep -m 1 -o 'SKIPPED: .*' "$logs/torch.log" || echo SKIPPED); torch_touch not run" |
            tee -a "$logs/torch.log"
    else
        step torch_touch python3 "$root/scripts/torch_replay.py" --touch "${traces[@]}"
    fi
fi

# The summary: every replay line side by side, then the verdict per trace:
# streamcore's peak used / peak live at or below the best peer measured in
# this run, and its wall time at or below hipMallocAsync's, with and without
# touch. When PyTorch did not run, a recorded trace's PyTorch figure is the
# best of its three allocators' replays in BENCHMARKS.md section 6 (exact
# ratios: a replay of the same events gives the same peaks every time).
{
    echo "trace allocator touch wall_ms driver_calls peak_used peak_live ratio books_ratio"
    cat "$logs"/replay.log "$logs"/replay_touch.log "$logs"/torch.log "$logs"/torch_touch.log 2>/dev/null |
        awk 'NF >= 8 && $4 ~ /^[0-9.]+$/' | sort -k1,1 -k3,3 -k2,2
    echo
    echo "verdict: streamcore's peak used / peak live at or below the best peer measured in"
    echo "this run (hipMallocAsync, PyTorch's three allocators; for a recorded trace, PyTorch's"
    echo "replay figure in BENCHMARKS.md section 6 when PyTorch did not run), and its wall time"
    echo "at or below hipMallocAsync's"
    cat "$logs"/replay.log "$logs"/replay_touch.log "$logs"/torch.log "$logs"/torch_touch.log 2>/dev/null | awk '
        BEGIN { t["gpt2_train"] = 1.0495; t["resnet50_train"] = 1.0115
                t["llama_decode"] = 1.0323; t["two_stream_pipeline"] = 1.0062 }
        NF >= 8 && $4 ~ /^[0-9.]+$/ {
            k = $1 " " $3
            if ($2 ~ /^streamcore/) { sw[k] = $4; sr[k] = $8; seen[k] = 1; next }
            if ($2 == "hipMallocAsync") { pw[k] = $4 }
            if ($2 ~ /^torch/) { torch[k] = 1 }
            if (!(k in best) || $8 + 0 < best[k] + 0) { best[k] = $8; who[k] = $2 }
        }
        END {
            for (k in seen) {
                split(k, a, " ")
                target = best[k]; by = who[k]
                if (!(k in torch) && (a[1] in t) && t[a[1]] + 0 < target + 0) { target = t[a[1]]; by = "PyTorch, BENCHMARKS 6" }
                ok_r = (sr[k] + 0 <= target + 0) ? "met" : "MISSED"
                ok_w = (k in pw) ? ((sw[k] + 0 <= pw[k] + 0) ? "met" : "MISSED") : "n/a"
                printf "%-20s touch=%-3s ratio %s vs best peer %s (%s) %s; wall %s ms vs hipMallocAsync %s ms %s\n",
                    a[1], a[2], sr[k], target, by, ok_r, sw[k], pw[k], ok_w
            }
        }' | sort >"$logs/verdicts.txt"
    cat "$logs/verdicts.txt"
    echo
    echo "rows meeting both / bytes / wall, per set (recorded, syn_ unseen, held_ held-out, fresh*, real: tests/real, real-held-out: tests/real_held_out)"
    names_in() { # names_in DIR: the traces' names, space-separated
        for f in "$1"/*.jsonl.gz; do
            [[ -e "$f" ]] && printf ' %s' "$(basename "$f" .jsonl.gz)"
        done
    }
    awk -v real="$(names_in "$root/tests/real")" -v real_held="$(names_in "$root/tests/real_held_out")" '
         BEGIN { k = split(real, names, " "); for (i = 1; i <= k; i++) is_real[names[i]] = 1
                 k = split(real_held, names, " "); for (i = 1; i <= k; i++) is_held[names[i]] = 1 }
         { set = ($1 in is_real) ? "real" : ($1 in is_held) ? "real-held-out" : ($1 ~ /^syn_/) ? "unseen" : ($1 ~ /^held_/) ? "held-out" : ($1 ~ /^fresh/) ? "fresh" : "recorded"
           n[set]++; r = ($0 ~ /\) met;/); w = ($0 ~ / met$/); br[set] += r; bw[set] += w; bb[set] += r && w }
         END { for (s in n) printf "%-13s %d of %d both, bytes %d, wall %d\n", s, bb[s], n[s], br[s], bw[s] }' \
        "$logs/verdicts.txt" | sort
} >"$logs/summary.txt"
cat "$logs/summary.txt"
exit $status
