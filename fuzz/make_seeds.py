#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora into fuzz/corpus/<target>/ (not checked in: this
script is their source). Seeds are small valid inputs in each target's input structure
(fuzz/src/lib.rs `Tensor::from_input`): every registered format with a zero payload (nvfp4
with divisor 1.0), the real GGUF blocks of tests/data/gguf, and the sample GGUF and the
nvfp4 safetensors checkpoint for the readers."""
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "fuzz", "corpus")

# Registry order (Format::all()); the index is the input's first byte.
FORMATS = """bf16 fp32 int32 q2_g64_fp16 q4_g64_fp16 q5_g64_fp16 q6_g64_fp16 q8_g32_fp16
t2_g128_fp16 nvfp4 fp8_e4m3fn_row_bf16 fp8_e4m3fn_row_fp16 gguf_q8_0 gguf_q4_0 gguf_q5_0
gguf_q2_0 gguf_q2_k gguf_q3_k gguf_q4_k gguf_q5_k gguf_q6_k gguf_iq2_xxs gguf_iq2_xs
gguf_iq3_xxs gguf_iq1_s gguf_iq4_nl gguf_iq3_s gguf_iq2_s gguf_iq4_xs gguf_iq1_m""".split()
UNIT = {"nvfp4": 16}
for f in FORMATS:
    if f.startswith("gguf_"):
        UNIT[f] = 256 if ("_k" in f or f in ("gguf_iq2_xxs", "gguf_iq2_xs", "gguf_iq3_xxs",
                                             "gguf_iq1_s", "gguf_iq3_s", "gguf_iq2_s",
                                             "gguf_iq4_xs", "gguf_iq1_m")) else 32


def header(fi, rows, units):
    # format, layout selector (own layout), rows - 1, K selector (units - 1) << 3, shape selector
    return bytes([fi, 0, rows - 1]) + struct.pack("<H", (units - 1) << 3) + bytes([0])


def write(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as fh:
        fh.write(data)


def main():
    tensor_seeds = {}
    for fi, f in enumerate(FORMATS):
        rows, units = 2, 2
        payload = b""
        if f == "nvfp4":
            payload = bytes(rows * units * 8) + bytes(128 * 4) + struct.pack("<f", 1.0)
        tensor_seeds[f"{f}_zero"] = header(fi, rows, units) + payload  # zero-filled planes
    index = os.path.join(ROOT, "tests", "data", "gguf", "index.txt")
    for line in open(index):
        if line.startswith("#") or not line.strip():
            continue
        f, kind, rows, k, fname = line.split()
        if kind != "real" or f not in FORMATS:
            continue
        rows, k = int(rows), int(k)
        blob = open(os.path.join(ROOT, "tests", "data", "gguf", fname), "rb").read()
        nblocks_bytes = len(blob) - rows * k * 4  # blocks, then rows*K f32
        units = k // UNIT[f]
        tensor_seeds[f"{f}_real"] = header(FORMATS.index(f), min(rows, 4), units) + blob[:nblocks_bytes]
    for target in ("decode", "validate", "linear"):
        for name, data in tensor_seeds.items():
            write(target, name, data + bytes(16))  # trailing bytes: the targets' own draws
    for sel in range(3):
        write("layouts", f"mode{sel}", bytes([sel]) + bytes(64))
        for kind in range(3):
            write("encoders", f"enc{sel}_{kind}", bytes([sel, 1, kind, 3, 0, 0]) + bytes(range(256)) * 4)
    write("gguf_reader", "sample.gguf", open(os.path.join(ROOT, "tests", "data", "sample.gguf"), "rb").read())
    write("st_reader", "checkpoint.safetensors",
          open(os.path.join(ROOT, "tests", "data", "nvfp4", "checkpoint.safetensors"), "rb").read())
    print(f"seed corpora written under {os.path.relpath(OUT, ROOT)}/", file=sys.stderr)


if __name__ == "__main__":
    main()
