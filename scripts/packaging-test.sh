#!/usr/bin/env bash
# Packaging and bindings tests: builds the release library once through CMake, runs ctest
# (C/C++ against shared and static, strict header builds, ASan/Valgrind, an installed and
# moved consumer with find_package and pkg-config), installs into a temporary prefix and
# runs the Go, Zig and Python binding tests against it. Fails first when an export of
# ninfer.h lacks a wrapper in the C++ header or a binding (tests/cmake/binding_coverage.sh).
# Last, when NVRTC is importable, a second build with -DNINFER_CUDA=ON must report
# ninfer_cuda_compiled() = 1 and pass the C++ and binding tests (tests/cmake/cuda_build.sh).
#
# Installs what it needs: apt cmake golang-go valgrind pkg-config (when missing), pip
# ziglang. Environment: NINFER_PKG_BUILD (build dir, default build/packaging),
# NINFER_SKIP_GO / NINFER_SKIP_ZIG / NINFER_SKIP_PYTHON=1 to skip a binding,
# NINFER_SKIP_CUDA=1 to skip the CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${NINFER_PKG_BUILD:-$ROOT/build/packaging}
JOBS=${NINFER_PKG_JOBS:-2}
start=$(date +%s)
step() { echo "== $* ($(( $(date +%s) - start ))s)"; }

need_apt=()
command -v cmake >/dev/null || need_apt+=(cmake)
command -v pkg-config >/dev/null || need_apt+=(pkg-config)
command -v valgrind >/dev/null || need_apt+=(valgrind)
command -v cc >/dev/null || need_apt+=(gcc)
command -v c++ >/dev/null || need_apt+=(g++)
command -v readelf >/dev/null || need_apt+=(binutils)
if [ -z "${NINFER_SKIP_GO:-}" ] && ! command -v go >/dev/null; then need_apt+=(golang-go); fi
if [ ${#need_apt[@]} -gt 0 ]; then
  step "apt-get install ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null 2>&1 ||
    { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null; }
fi

if [ -z "${NINFER_SKIP_PYTHON:-}" ] && ! python3 -c "import numpy, gguf, ml_dtypes" 2>/dev/null; then
  step "pip install -r scripts/requirements.txt (Python oracles)"
  python3 -m pip install -q --disable-pip-version-check -r scripts/requirements.txt
fi

step "binding coverage: every C export wrapped by C++, Go, Zig and Python"
tests/cmake/binding_coverage.sh

step "cmake configure + build ($BUILD)"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DNINFER_BUILD_TESTS=ON >/dev/null
cmake --build "$BUILD" -j "$JOBS"

step "ctest"
ctest --test-dir "$BUILD" -j "$JOBS" --output-on-failure

PREFIX=$(mktemp -d "${TMPDIR:-/tmp}/ninfer-prefix.XXXXXX")
trap 'rm -rf "$PREFIX"' EXIT
step "install into $PREFIX"
cmake --install "$BUILD" --prefix "$PREFIX" >/dev/null
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export LD_LIBRARY_PATH="$PREFIX/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NINFER_LIBRARY="$PREFIX/lib/libninfer.so.0"
export NINFER_EXPECT_CUDA=0  # this build has no CUDA support: the binding tests check it

for b in go zig python; do
  if [ -x "bindings/$b/test.sh" ]; then
    var="NINFER_SKIP_$(echo "$b" | tr a-z A-Z)"
    if [ -n "${!var:-}" ]; then step "$b: skipped ($var)"; continue; fi
    step "$b bindings"
    "bindings/$b/test.sh"
  fi
done
if [ -z "${NINFER_SKIP_PYTHON:-}" ]; then
  step "python: pip install ./bindings/python into a fresh venv (bundled library)"
  bindings/python/install_test.sh
fi
if [ -n "${NINFER_SKIP_CUDA:-}" ]; then
  step "CMake -DNINFER_CUDA=ON: skipped (NINFER_SKIP_CUDA)"
else
  step "CMake -DNINFER_CUDA=ON build (${BUILD}-cuda): ninfer_cuda_compiled() = 1"
  NINFER_PKG_JOBS=$JOBS tests/cmake/cuda_build.sh "${BUILD}-cuda"
fi
step "packaging tests passed"
