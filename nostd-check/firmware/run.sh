#!/usr/bin/env bash
# Builds the no_std scenario as a bare-metal image for each firmware core
# (the `firmware` profile: opt-level "s", LTO), prints its size report, and
# runs it under QEMU: a Cortex-M4F (`thumbv7em-none-eabihf`, machine
# mps2-an386) and an RV32IMAC hart (`riscv32imac-unknown-none-elf`, machine
# virt, no firmware). Each image's exit status is its verdict, returned
# through semihosting: 0 only when every part of the scenario passed. Each
# also prints what a warm launch costs in instructions (`src/cost.rs`):
# QEMU runs with `-icount shift=0`, so the cores' counters advance with the
# instructions executed.
#
# Usage: run.sh [TARGET...]   (both targets when none is named)
#
# Needs: `rustup target add thumbv7em-none-eabihf riscv32imac-unknown-none-elf`,
# `qemu-system-arm` and `qemu-system-riscv32` (Debian: qemu-system-arm,
# qemu-system-misc), and GNU binutils (`size`, `nm`) for the report.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(thumbv7em-none-eabihf riscv32imac-unknown-none-elf)
for target in "${targets[@]}"; do
    case "$target" in
        thumbv7em-none-eabihf)
            qemu=(qemu-system-arm -machine mps2-an386 -cpu cortex-m4 -icount shift=0) ;;
        riscv32imac-unknown-none-elf)
            qemu=(qemu-system-riscv32 -machine virt -bios none -icount shift=0) ;;
        *)
            echo "run.sh: no QEMU machine for target $target" >&2
            exit 2 ;;
    esac
    cargo build --quiet --profile firmware -p streamcore-firmware-check --target "$target"
    elf="target/$target/firmware/streamcore-firmware-check"
    echo "image $elf:"
    bash firmware/size.sh "$elf"
    # QEMU prints the scenario's line on the semihosting console; a hang
    # (which the image avoids: faults and panics exit) is cut off by the
    # timeout.
    timeout 120 "${qemu[@]}" -nographic -monitor none -serial none \
        -semihosting-config enable=on,target=native -kernel "$elf"
done
