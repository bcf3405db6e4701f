#!/usr/bin/env bash
# The whole test suite: style gates, every Rust/C test, and the real-model checks against
# PyPI oracles. Installs what it needs (Python oracle packages, C toolchain if missing).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cc >/dev/null || ! command -v c++ >/dev/null || ! command -v readelf >/dev/null; then
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq gcc g++ binutils >/dev/null
  else sudo apt-get update -qq && sudo apt-get install -y -qq gcc g++ binutils >/dev/null; fi
fi
python3 -m pip install -q --disable-pip-version-check -r scripts/requirements.txt

echo "== style"
cargo fmt --all --check
cargo clippy --workspace --all-targets --release -q -- -D warnings

echo "== unit, integration, C and CLI tests"
# `cargo test` builds only the rlib; the C tests link the shared and static libraries.
cargo build --workspace --release
cargo test --workspace --release

echo "== CUDA (feature cuda): kernels compiled by NVRTC for sm_80..sm_120 with no spill; their"
echo "   arithmetic bit for bit against the CPU on the host; NO_DEVICE without a GPU"
cargo clippy -p ninfer --all-targets --release --features cuda -q -- -D warnings
cargo test -p ninfer --release --features cuda --lib cuda
cargo test -p ninfer --release --features cuda --test cuda_c --test linear_c

echo "== grouped_absmax through the C ABI (ctypes) vs the plain §7.2 oracle, 10^6 groups per format"
python3 scripts/fixtures/grouped_ctypes_check.py --groups 1000000

echo "== packaging: CMake, pkg-config, C/C++ under ASan and Valgrind, Go, Zig, Python"
scripts/packaging-test.sh

echo "== portable path: aarch64 build, clippy and library tests under qemu-user"
scripts/portable-test.sh

if [ -x scripts/real-models.sh ]; then
  echo "== real models (fetched from PyPI, checked against gguf-py)"
  scripts/real-models.sh
fi
