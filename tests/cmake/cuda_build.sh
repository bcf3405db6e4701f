#!/usr/bin/env bash
# Builds the library through CMake with -DNINFER_CUDA=ON (cargo feature cuda) and checks
# that ninfer_cuda_compiled() returns 1 (tests/cmake/cuda_compiled.c), and that the C++
# wrapper tests and the Go, Zig and Python suites pass against it (no driver or GPU
# needed: the entry points answer NO_DEVICE naming the driver). Skipped, with a message,
# when NVRTC is not importable (`pip install nvidia-cuda-nvrtc-cu12`). Run by
# scripts/packaging-test.sh.
#
#   tests/cmake/cuda_build.sh [build-dir]     # default build/packaging-cuda
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build/packaging-cuda}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
JOBS=${NINFER_PKG_JOBS:-2}
if ! python3 -c 'import nvidia.cuda_nvrtc' 2>/dev/null; then
  echo "cuda build: skipped (python3 cannot import nvidia.cuda_nvrtc; pip install nvidia-cuda-nvrtc-cu12)"
  exit 0
fi
# This build's library, not one a caller's environment points at (packaging-test.sh
# exports the default build's prefix).
export LD_LIBRARY_PATH="$BUILD/stage/lib"
unset NINFER_LIBRARY
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DNINFER_CUDA=ON -DNINFER_BUILD_TESTS=ON \
  -DNINFER_TEST_ASAN=OFF >/dev/null
cmake --build "$BUILD" -j "$JOBS" --target c_cuda_compiled cpp_wrapper_cxx17 cpp_wrapper_noexcept
ctest --test-dir "$BUILD" -R '^(c_cuda_compiled|cpp_wrapper_cxx17|cpp_wrapper_noexcept)$' \
  --output-on-failure
out=$("$BUILD/tests/cmake/c_cuda_compiled")
echo "$out"
grep -q '^ninfer_cuda_compiled() = 1$' <<<"$out" ||
  { echo "cuda build: ninfer_cuda_compiled() is not 1" >&2; exit 1; }
# The Go, Zig and Python suites against this library installed in a temporary prefix
# (NINFER_SKIP_GO / _ZIG / _PYTHON as in packaging-test.sh).
PREFIX=$(mktemp -d "${TMPDIR:-/tmp}/ninfer-cuda-prefix.XXXXXX")
trap 'rm -rf "$PREFIX"' EXIT
cmake --install "$BUILD" --prefix "$PREFIX" >/dev/null
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig" LD_LIBRARY_PATH="$PREFIX/lib"
export NINFER_LIBRARY="$PREFIX/lib/libninfer.so.0" NINFER_EXPECT_CUDA=1
for b in go zig python; do
  var="NINFER_SKIP_$(echo "$b" | tr a-z A-Z)"
  if [ -n "${!var:-}" ]; then echo "cuda build: $b skipped ($var)"; continue; fi
  echo "cuda build: $b bindings"
  "bindings/$b/test.sh" >"$PREFIX/$b.log" 2>&1 || { cat "$PREFIX/$b.log"; exit 1; }
  grep -E '^(ok|OK|Build Summary)' "$PREFIX/$b.log" || true
done
echo "cuda build: passed"
