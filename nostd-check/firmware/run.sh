#!/usr/bin/env bash
# Builds the no_std scenario as a Cortex-M4F image (thumbv7em-none-eabihf,
# the `firmware` profile: opt-level "s", LTO), prints its size report, and
# runs it under QEMU's mps2-an386. The exit status is the image's verdict,
# returned through semihosting: 0 only when every part of the scenario passed.
#
# Needs: `rustup target add thumbv7em-none-eabihf`, `qemu-system-arm`, and
# GNU binutils (`size`, `nm`) for the report.
set -euo pipefail
cd "$(dirname "$0")/.."
target=thumbv7em-none-eabihf
cargo build --quiet --profile firmware -p streamcore-firmware-check --target "$target"
elf="target/$target/firmware/streamcore-firmware-check"
echo "image $elf:"
bash firmware/size.sh "$elf"
# QEMU prints the scenario's line on the semihosting console; a hang (which
# the image avoids: faults and panics exit) is cut off by the timeout.
timeout 120 qemu-system-arm -machine mps2-an386 -cpu cortex-m4 -nographic \
    -monitor none -serial none -semihosting-config enable=on,target=native \
    -kernel "$elf"
