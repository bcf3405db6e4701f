#!/usr/bin/env bash
# The CUDA checks that need a GPU, in two steps:
#
#   scripts/device-check.sh build   # here (Rust, NVRTC): builds the test binary with the
#                                   # `cuda` feature into target/device/
#   scripts/device-check.sh run     # on the GPU machine (driver; no Rust needed), from the
#                                   # repository root with target/device/ carried over
#   scripts/device-check.sh profile KERNEL FORMAT   # there too: Nsight Compute per SASS
#                                   # instruction of one kernel launch (see below)
#
# `run` prints the device, then, each step under its own time limit: CUDA vs CPU bit for
# bit on every format the kernels cover (M = 1, 2, 7, 8, 9, 17; odd N; K not a multiple of
# 128 where allowed; f32/bf16 in and out, bias; host-buffer and device paths; device row
# decode; every combination runs and the failures are listed together), `ninfer verify` on
# the built-in sample (the CLI built with the feature: linear on CUDA too, against the f64
# oracle and the CPU's bits), the GEMV benchmark (µs, weight GB/s, % of the memory
# bandwidth of a device-to-device copy in the same run; a forward replayed from a CUDA
# graph), a compute-sanitizer memcheck of the bitwise test and, when torch is importable,
# torch's bf16 GEMV on the same shapes.
set -euo pipefail
cd "$(dirname "$0")/.."
out=target/device
# The carried binaries, decompressed where they still are.
unpack() {
  for z in "$out"/*.gz; do
    [ -e "$z" ] && gunzip -f "$z" && chmod +x "${z%.gz}"
  done
  [ -x "$out/ninfer-lib-tests" ] || { echo "device-check: $out/ninfer-lib-tests missing: run '$0 build' first" >&2; exit 1; }
}
case "${1:-}" in
  build)
    mkdir -p "$out"
    exe=$(cargo test --release --features cuda --lib --no-run 2>&1 |
      tee target/device-build.log | sed -n 's/.*Executable unittests src\/lib.rs (\(.*\))/\1/p' | tail -1 || true)
    [ -n "$exe" ] || { tail -40 target/device-build.log >&2; echo "device-check: no test binary built" >&2; exit 1; }
    # Stripped and compressed (the embedded kernel images compress well): both binaries
    # travel to the GPU machine.
    rm -f "$out"/*
    strip -o "$out/ninfer-lib-tests" "$exe"
    cargo build --release --quiet -p ninfer-cli --features cuda
    strip -o "$out/ninfer" target/release/ninfer
    gzip -f "$out/ninfer-lib-tests" "$out/ninfer"
    cp scripts/device-check.sh "$out/"
    ls -la "$out"
    ;;
  run)
    unpack
    t="$out/ninfer-lib-tests"
    # Each step has its own time limit, so that one slow step leaves the others their turn.
    step() { echo "== $1 ($(date -u +%T))"; }
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
    step "CUDA vs CPU, bit for bit"
    timeout 240 "$t" --test-threads=1 --nocapture linear::cuda::device_tests 2>&1 |
      grep -v '^test \|^running\|^$\|^note: run with' || true
    step "ninfer verify (built-in sample: linear on every CPU path and CUDA vs the f64 oracle)"
    timeout 60 "$out/ninfer" verify --brief 2>&1 | tail -3 || true
    step "GEMV benchmark"
    timeout 240 "$t" --ignored --nocapture --test-threads=1 linear::cuda::device_tests::cuda_bench 2>&1 |
      grep -v '^test \|^running\|^$' || true
    if command -v compute-sanitizer >/dev/null; then
      step "compute-sanitizer memcheck (device tests, small K)"
      NINFER_CUDA_QUICK=1 timeout 120 compute-sanitizer --tool memcheck --print-limit 20 \
        "$t" --test-threads=1 linear::cuda::device_tests::cuda_matches 2>&1 | tail -8 || true
    fi
    if python3 -c 'import torch' 2>/dev/null; then
      step "torch bf16 GEMV (cuBLAS), weights rotated beyond L2"
      timeout 60 python3 - <<'PY' || true
import torch
for n, k in [(28672, 8192), (8192, 8192)]:
    copies = max(1, int(3 * 60e6 // (n * k * 2)) + 1)
    ws = [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) for _ in range(copies)]
    for m in [1, 8]:
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        for w in ws: torch.nn.functional.linear(x, w)
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        ts = []
        for _ in range(50):
            s.record()
            for w in ws: torch.nn.functional.linear(x, w)
            e.record(); e.synchronize()
            ts.append(s.elapsed_time(e) * 1e3 / len(ws))
        ts.sort(); us = ts[len(ts) // 2]
        print(f"torch bf16 {n}x{k} M={m}: {us:.2f} us, {n*k*2/us/1e3:.0f} GB/s")
PY
    fi
    ;;
  profile)
    # On the GPU machine: Nsight Compute on one launch of kernel $2 (e.g. nf_q8_4) in the
    # benchmark of format $3 (e.g. q4_g64_fp16), skipping the first $4 launches (default 2:
    # past the warm-up). Writes the speed-of-light, occupancy and instruction summary to
    # $dir/$2.details.txt and the executed count and stall samples of every SASS
    # instruction to $dir/$2.sass.csv ($dir: $OUT if set, else target/device).
    [ $# -ge 3 ] || { echo "usage: $0 profile KERNEL FORMAT [SKIP]" >&2; exit 2; }
    unpack
    ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
    dir=${OUT:-$out}
    NINFER_BENCH_FORMATS=$3 timeout 120 "$ncu" -k "$2" --launch-skip "${4:-2}" --launch-count 1 \
      --section SourceCounters --section InstructionStats --section SpeedOfLight --section Occupancy \
      -o "$dir/$2" -f "$out/ninfer-lib-tests" --ignored --nocapture --test-threads=1 \
      linear::cuda::device_tests::cuda_bench > "$dir/$2.ncu.log" 2>&1 || { tail -5 "$dir/$2.ncu.log"; exit 1; }
    "$ncu" -i "$dir/$2.ncu-rep" --page source --csv --print-source sass > "$dir/$2.sass.csv"
    "$ncu" -i "$dir/$2.ncu-rep" --page details > "$dir/$2.details.txt"
    rm -f "$dir/$2.ncu-rep"
    grep -E 'Duration|DRAM Throughput|Executed Instructions  |Achieved Active Warps' "$dir/$2.details.txt"
    ;;
  *)
    echo "usage: $0 build|run|profile" >&2
    exit 2
    ;;
esac
