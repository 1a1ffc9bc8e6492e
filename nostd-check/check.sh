#!/usr/bin/env bash
# Builds streamcore into a #![no_std] static library with its own panic
# handler and allocator (a duplicate `panic_impl` fails the build if std
# sneaks in), then links it into a C program and runs it.
set -euo pipefail
cd "$(dirname "$0")"
cargo build --release --quiet
out="$(mktemp -d)"
cc -O1 -o "$out/smoke" smoke.c target/release/libstreamcore_nostd_check.a
"$out/smoke"
