#!/usr/bin/env bash
# Builds the benchmark peer, ggml 0.25.3 as vendored in PyPI llama-cpp-python 0.3.36, into
# .cache/ggml (shared libraries libggml-base.so and libggml-cpu.so; ggml-cpu with
# -march=native, ggml-base without, as upstream does). About 4 minutes on 2 cores.
# `ninfer bench linear` and the benchmarks load it at run time from .cache/ggml/lib under
# the current directory (--ggml DIR or NINFER_GGML_DIR override the location); without it
# they print ninfer's figures alone.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.cache/ggml}
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ -f "$out/lib/libggml-base.so" ] && [ -f "$out/lib/libggml-cpu.so" ]; then
  echo "ggml already built in $out"; exit 0
fi
command -v cmake >/dev/null || { apt-get update -qq && apt-get install -y -qq cmake >/dev/null; }
src="$out/src"
mkdir -p "$src"
if [ ! -d "$src/llama_cpp_python-0.3.36" ]; then
  python3 -m pip download -q --no-deps --no-binary :all: llama-cpp-python==0.3.36 -d "$src"
  tar xzf "$src/llama_cpp_python-0.3.36.tar.gz" -C "$src"
fi
# Configure from the llama.cpp top level: the sdist's ggml alone lacks ggml.pc.in.
cmake -S "$src/llama_cpp_python-0.3.36/vendor/llama.cpp" -B "$out/build" \
  -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DGGML_NATIVE=ON -DGGML_OPENMP=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF \
  -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF >/dev/null
cmake --build "$out/build" --target ggml-base ggml-cpu -j"$(nproc)" >/dev/null
mkdir -p "$out/lib"
find "$out/build" -name 'libggml-base.so*' -exec cp -P {} "$out/lib/" \;
find "$out/build" -name 'libggml-cpu.so*' -exec cp -P {} "$out/lib/" \;
echo "ggml built in $out/lib"
