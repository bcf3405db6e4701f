#!/usr/bin/env python3
"""ggml's own dequantizers (``to_float``, through PyPI ``libgguf``'s native module) on the
same workload as ``benches/decode.rs``: a 4096 x 4096 matrix of random blocks with small
finite scales, decoded 16 rows per call (a 256 KB output that stays in cache). Run it
pinned to one core for a single-thread figure: ``taskset -c 0 python3 benches/decode_ggml.py``.
"""

import os
import sys
import time

import numpy as np
import libgguf

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "scripts", "fixtures"))
from gguf_fixtures import TYPES  # noqa: E402

N = int(os.environ.get("NINFER_BENCH_N", "4096"))
CHUNK = 16


def payload(rng, ty):
    name, gid, bv, bb, f16_fields = ty
    b = rng.integers(0, 256, size=(N * N // bv, bb), dtype=np.uint8)
    for off in f16_fields:
        h = (0x1800 | (rng.integers(0, 1 << 16, size=b.shape[0]) & 0x83FF)).astype("<u2")
        b[:, off : off + 2] = h.view(np.uint8).reshape(-1, 2)
    if gid == 29:
        b[:, 49:56:2] &= 0x0F
        b[:, 55] |= 0x20
    return b.reshape(N, -1)


def main():
    rng = np.random.default_rng(1)
    print(f"ggml to_float via libgguf, {N} x {N}, {CHUNK} rows per call (best of 5)")
    for ty in TYPES:
        name, gid = ty[0], ty[1]
        if gid == 42:
            print(f"{name:>14}: (not in libgguf)")
            continue
        p = payload(rng, ty)
        out = np.empty((CHUNK, N), np.float32)
        best = float("inf")
        for _ in range(5):
            t = time.perf_counter()
            for r in range(0, N, CHUNK):
                libgguf.dequantize_rows_into_raw(gid, p[r : r + CHUNK], out, CHUNK, N)
            best = min(best, time.perf_counter() - t)
        print(f"{name:>14}: {N * N / best / 1e9:6.2f} Gvalues/s")


if __name__ == "__main__":
    main()
