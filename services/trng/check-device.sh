#!/bin/sh
# Compile-check the TRNG server (including the `hw` register driver) for the Precursor device
# target. Needs: rustup toolchain nightly with rust-src (see ../shared/docs/environment.md).
set -eu
cd "$(dirname "$0")/../.."
CARGO_PROFILE_RELEASE_PANIC=abort exec cargo +nightly build --release -p trng \
    --target riscv32imac-unknown-xous-elf -Zbuild-std=std,panic_abort "$@"
