#!/usr/bin/env bash
# Builds the library through CMake with -DNINFER_CUDA=ON (cargo feature cuda) and checks
# that ninfer_cuda_compiled() returns 1 (tests/cmake/cuda_compiled.c), that the C++ wrapper
# test and the Python binding's CUDA tests pass against it (no driver or GPU needed: the
# entry points answer NO_DEVICE naming the driver). Skipped, with a message, when NVRTC is
# not importable (`pip install nvidia-cuda-nvrtc-cu12`). Run by scripts/packaging-test.sh.
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
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DNINFER_CUDA=ON -DNINFER_TEST_ASAN=OFF >/dev/null
cmake --build "$BUILD" -j "$JOBS" --target c_cuda_compiled cpp_wrapper_cxx17 cpp_wrapper_noexcept
ctest --test-dir "$BUILD" -R '^(c_cuda_compiled|cpp_wrapper_cxx17|cpp_wrapper_noexcept)$' \
  --output-on-failure
out=$("$BUILD/tests/cmake/c_cuda_compiled")
echo "$out"
grep -q '^ninfer_cuda_compiled() = 1$' <<<"$out" ||
  { echo "cuda build: ninfer_cuda_compiled() is not 1" >&2; exit 1; }
if python3 -c 'import numpy' 2>/dev/null; then
  NINFER_LIBRARY="$BUILD/stage/lib/libninfer.so.0" NINFER_EXPECT_CUDA=1 \
    PYTHONPATH="$PWD/bindings/python" python3 -m unittest discover -s bindings/python/tests -k CudaTests
fi
echo "cuda build: passed"
