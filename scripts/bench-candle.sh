#!/usr/bin/env bash
# Peer benchmark, run by hand (never by CI or scripts/test.sh): ninfer's CPU GGUF products
# beside candle's quantized matmul (candle-core 0.11.1, `QMatMul`), one thread each.
#
# peers/candle-bench is a crate of its own (its own [workspace], its own target directory
# peers/candle-bench/target, git-ignored); it depends on this library by path and on
# candle-core, which is never a dependency of the library or the CLI. It is built here
# with -C target-cpu=native for both libraries (candle selects its AVX-512 VNNI / AVX-VNNI
# / AVX2 kernels, including its repacked Q4_K, Q6_K and Q8_0 tiles, at run time).
#
# For Q4_K, Q2_K, Q3_K, Q5_K, Q6_K, Q8_0, Q4_0 and Q5_0 (the block types both multiply),
# 4096 x 4096 and 16384 x 4096 (N x K), M = 1 and 32: the same random valid block bytes go
# to ninfer's PreparedWeight (set_threads(1), its q8_1 activation profile) and to candle
# (qtensor_from_ggml, RAYON_NUM_THREADS=1); both take f32 x and return f32 y. Timed
# alternately (ours, candle, ...), best per-call time of several loops of >= 0.3 s each;
# prints the CPU model and SIMD flags, GMAC/s for each, ratio = ours / candle (> 1: ours
# faster) and max|y_ours - y_candle| / max|y_candle| as a check that both were fed the
# same weights (they quantize x differently: a loose sanity bound, not an oracle).
#
# Activations: ours run the library's default q8_1 profile; candle quantizes x to q8_K for
# its k-quants and to q8_0 for Q4_0/Q5_0/Q8_0, so the outputs differ by those roundings and
# the ratios compare each library's own default path.
#
# Usage: scripts/bench-candle.sh [--shapes NxK,...] [--m M,...] [--formats q4_k,q8_0]
#                                [--rounds R] [--min-time SECONDS]
# Defaults: both shapes 4096x4096 and 16384x4096, M = 1 and 32, every type above, 5 rounds
# of at least 0.3 s per side (about 2 minutes in all). On a shared machine pin it
# (taskset -c 0 scripts/bench-candle.sh), run it twice, and compare the ratios of one run.
# The first build fetches candle-core and its dependencies from crates.io (network needed)
# and compiles them: 5 to 25 minutes on two cores; `--help` comes from the built binary.
set -euo pipefail
cd "$(dirname "$0")/../peers/candle-bench"
RUSTFLAGS="${RUSTFLAGS:+$RUSTFLAGS }-C target-cpu=native" cargo build --release --locked -q
RAYON_NUM_THREADS=1 exec target/release/candle-bench "$@"
