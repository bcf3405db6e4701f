"""Tests of the ctypes binding: hand-worked values, refused inputs as NinferError, and
decoded GGUF rows compared bit for bit with gguf-py's dequantizers (an independent oracle).
Run: python3 -m unittest discover -s bindings/python/tests -v (PYTHONPATH=bindings/python)."""

import ctypes
import os
import threading
import unittest

import numpy as np

import ninfer
from ninfer import NinferError, Status


def q8_0_blocks() -> bytes:
    """Two rows of K = 32 gguf_q8_0: row 0 d = 0.5, q = j - 16; row 1 d = -2^-24, q = 127 - j."""
    b = bytearray(68)
    b[0:2] = b"\x00\x38"
    b[2:34] = bytes((j - 16) & 0xFF for j in range(32))
    b[34:36] = b"\x01\x80"
    b[36:68] = bytes(127 - j for j in range(32))
    return bytes(b)


class Registry(unittest.TestCase):
    def test_versions(self):
        self.assertEqual(ninfer.abi_version(), ninfer.ABI_VERSION)
        self.assertRegex(ninfer.version(), r"^\d+\.\d+\.\d+$")
        self.assertEqual(".".join(map(str, ninfer.version_numbers())), ninfer.version())

    def test_lookup(self):
        f = ninfer.format_lookup("gguf_q8_0")
        self.assertEqual(ninfer.format_name(f), "gguf_q8_0")
        self.assertEqual(len(ninfer.format_names()), ninfer.format_count())
        self.assertEqual(ninfer.format_at(0), ninfer.format_lookup("bf16"))
        self.assertEqual(sorted(ninfer.format_at(i) for i in range(ninfer.format_count())),
                         sorted(ninfer.format_lookup(n) for n in ninfer.format_names()))
        with self.assertRaises(NinferError) as cm:
            ninfer.format_at(ninfer.format_count())
        self.assertEqual(cm.exception.status, Status.UNKNOWN_FORMAT)
        self.assertIn("nvfp4", ninfer.format_names())
        info = ninfer.format_info("gguf_q6_k")
        self.assertEqual((info.block_values, info.block_bytes, info.ggml_type), (256, 210, 14))
        self.assertEqual(info.bits_per_weight, 6.5625)
        self.assertEqual(ninfer.layout_name(info.layout), "gguf_blocks_v1")
        self.assertEqual(ninfer.format_from_ggml_type(12), ninfer.format_lookup("gguf_q4_k"))
        self.assertEqual(ninfer.plane_sizes(f, info.layout, 2, 32), (68, 0, 0))
        self.assertEqual(Status.OK, 0)
        self.assertEqual(Status.SIZE_MISMATCH, 9)
        self.assertEqual(Status.OUT_OF_MEMORY, 22)

    def test_linear_of_a_quantize_grouped_tuple_says_what_to_pass(self):
        src = np.linspace(-1, 1, 4 * 64, dtype=np.float32).reshape(4, 64)
        pair = ninfer.quantize_grouped("q8_g32_fp16", src)
        with self.assertRaises(TypeError) as cm:
            ninfer.Linear(pair)
        self.assertIn("(view, provenance)", str(cm.exception))
        with ninfer.Linear(pair[0]) as lin:
            self.assertEqual(lin.forward(np.ones(64, dtype=np.float32)).shape, (4,))

    def test_refused(self):
        with self.assertRaises(NinferError) as cm:
            ninfer.format_lookup("Q4")
        self.assertEqual(cm.exception.status, Status.UNKNOWN_FORMAT)
        self.assertIn("Q4", cm.exception.message)
        self.assertTrue(str(cm.exception).startswith("UNKNOWN_FORMAT: "))
        with self.assertRaises(NinferError) as cm:
            ninfer.format_from_ggml_type(3)
        self.assertEqual(cm.exception.status, Status.UNREGISTERED_TYPE)
        self.assertIn("Q4_1", cm.exception.message)
        f = ninfer.format_lookup("gguf_q8_0")
        with self.assertRaises(NinferError) as cm:
            ninfer.format_layout_compatible(f, ninfer.layout_lookup("row_split_k128_v1"))
        self.assertEqual(cm.exception.status, Status.INCOMPATIBLE_LAYOUT)

    def test_integers_outside_their_c_type_raise(self):
        # ctypes alone would wrap them: 2**32 + 18 would read as format 18.
        for call in (lambda: ninfer.format_info(2**32 + 18),
                     lambda: ninfer.format_info(np.int64(-1)),
                     lambda: ninfer.WeightView("gguf_q8_0", 2**64 + 2, 32, [bytes(68)]),
                     lambda: ninfer.WeightView(2**32 + 12, 1, 32, [bytes(34)])):
            with self.assertRaises(OverflowError):
                call()
        v = ninfer.WeightView("gguf_q8_0", 2, 32, [bytes(68)])
        with self.assertRaises(OverflowError):
            v.decode_rows(-1, 1)
        with self.assertRaises(OverflowError):
            v.decode_rows(0, 2**64 + 1)
        self.assertEqual(v.decode_rows(0, 2).shape, (2, 32))


class Decode(unittest.TestCase):
    def test_hand_made_q8_0(self):
        v = ninfer.WeightView("gguf_q8_0", 2, 32, [q8_0_blocks()])
        v.check()
        row0 = v.decode_row(0)
        np.testing.assert_array_equal(row0, (np.arange(32, dtype=np.float32) - 16) * 0.5)
        self.assertEqual(row0[16].view(np.uint32), 0)  # +0
        row1 = v.decode_row(1)
        self.assertEqual(int(row1[31].view(np.uint32)), 0xB6C00000)  # -96 * 2^-24
        bf16 = v.decode_row_as(0, ninfer.Dtype.BF16)
        np.testing.assert_array_equal(bf16, (row0.view(np.uint32) >> 16).astype(np.uint16))
        f16 = v.decode_row_as(0, ninfer.Dtype.F16)
        np.testing.assert_array_equal(f16, row0.astype(np.float16))
        full = v.decode()
        self.assertEqual(full.shape, (2, 32))
        np.testing.assert_array_equal(full[1], row1)

    def test_decode_rows_one_call(self):
        v = ninfer.WeightView("gguf_q8_0", 2, 32, [q8_0_blocks()])
        row0, row1 = v.decode_row(0), v.decode_row(1)
        np.testing.assert_array_equal(v.decode_rows(1, 1)[0].view(np.uint32), row1.view(np.uint32))
        np.testing.assert_array_equal(v.decode_rows(0, 2, ninfer.Dtype.BF16)[1],
                                      v.decode_row_as(1, ninfer.Dtype.BF16))
        np.testing.assert_array_equal(v.decode_rows(0, 2, ninfer.Dtype.F16)[0],
                                      v.decode_row_as(0, ninfer.Dtype.F16))
        self.assertEqual(v.decode_rows(2, 0).shape, (0, 32))
        # decode() is one ninfer_decode_rows call: it works with the per-row entry point gone.
        saved = ninfer._decode_row
        ninfer._decode_row = None
        try:
            full = v.decode()
        finally:
            ninfer._decode_row = saved
        np.testing.assert_array_equal(full, np.stack([row0, row1]))
        for call, status in [
            (lambda: v.decode_rows(1, 2), Status.ROW_OUT_OF_RANGE),
            (lambda: v.decode_rows(2**64 - 1, 2), Status.OVERFLOW),
            (lambda: v.decode_rows(0, 2, out=np.zeros(63, dtype=np.float32)),
             Status.BUFFER_TOO_SMALL),
            (lambda: v.decode_rows(0, 1, 7), None),
        ]:
            with self.assertRaises((NinferError, ValueError)) as cm:
                call()
            if status is not None:
                self.assertEqual(cm.exception.status, status)

    def test_decode_rows_refused_row_writes_nothing(self):
        # q8_g32_fp16 rows 0..3; row 2's first stored scale becomes +Inf (0x7C00): decoding
        # rows 0..3 is refused at row 2 and the output keeps its canary.
        src = np.arange(4 * 128, dtype=np.float32).reshape(4, 128) / 64.0 - 3.0
        view, _ = ninfer.quantize_grouped("q8_g32_fp16", src)
        planes = [p.copy() for p in view.planes]
        planes[2][2 * 8: 2 * 8 + 2] = [0x00, 0x7C]  # 4 groups × 2 bytes per row
        bad = ninfer.WeightView("q8_g32_fp16", 4, 128, planes)
        out = np.full((4, 128), 42.0, dtype=np.float32)
        with self.assertRaises(NinferError) as cm:
            bad.decode_rows(0, 4, out=out)
        self.assertEqual(cm.exception.status, Status.INVALID_ENCODING)
        self.assertIn("row 2", cm.exception.message)
        np.testing.assert_array_equal(out, 42.0)
        np.testing.assert_array_equal(bad.decode_rows(0, 2, out=out)[:2], view.decode()[:2])

    def test_out_array_zero_copy_and_refusals(self):
        blocks = np.frombuffer(q8_0_blocks(), dtype=np.uint8)
        v = ninfer.WeightView("gguf_q8_0", 2, 32, [blocks])
        out = np.full(32, 42.0, dtype=np.float32)
        self.assertIs(v.decode_row(0, out), out)
        out[:] = 42.0
        for call, status in [
            (lambda: v.decode_row(2, out), Status.ROW_OUT_OF_RANGE),
            (lambda: v.decode_row(0, out[:31]), Status.BUFFER_TOO_SMALL),
            (lambda: ninfer.WeightView("gguf_q8_0", 2, 32, [blocks[:67]]).check(),
             Status.SIZE_MISMATCH),
            (lambda: ninfer.WeightView("gguf_q8_0", 2, 48, [blocks]).decode_row(0),
             Status.BAD_SHAPE),
            (lambda: ninfer.WeightView("gguf_q8_0", 2, 32, [blocks], layout=0).check(),
             Status.INCOMPATIBLE_LAYOUT),
            (lambda: ninfer.WeightView(99, 2, 32, [blocks]), Status.UNKNOWN_FORMAT),
        ]:
            with self.assertRaises(NinferError) as cm:
                call()
            self.assertEqual(cm.exception.status, status)
            self.assertTrue(cm.exception.message)
        np.testing.assert_array_equal(out, 42.0)
        with self.assertRaises(ValueError):
            v.decode_row(0, np.zeros(32, dtype=np.float64))

    def test_messages_per_thread(self):
        bad = []

        def worker(k):
            for i in range(200):
                name = f"nope_{k}_{i}"
                try:
                    ninfer.format_lookup(name)
                    bad.append(name)
                except NinferError as e:
                    if name not in e.message:
                        bad.append(e.message)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(bad, [])


class Encoders(unittest.TestCase):
    """Round trips whose exact result is known by construction (hand-worked oracles)."""

    def grouped_source(self, rng, rows, cols, group, qmax):
        # Codes in [-qmax, qmax] with one +qmax per group, times a power-of-two scale per
        # group: amax / qmax is that power of two, so absmax stores it exactly and every
        # code is exact; decoding must give the source back bit for bit.
        q = rng.integers(-qmax, qmax + 1, size=(rows, cols))
        q[:, ::group] = qmax
        s = 2.0 ** rng.integers(-6, 4, size=(rows, cols // group))
        return (q.reshape(rows, -1, group) * s[:, :, None]).reshape(rows, cols).astype(np.float32)

    def test_quantize_grouped_round_trip(self):
        rng = np.random.default_rng(3)
        for name in ("q8_g32_fp16", "q4_g64_fp16", "q6_g64_fp16", "q5_g64_fp16"):
            info = ninfer.format_info(name)
            rows, cols = 3, 256
            src = self.grouped_source(rng, rows, cols, info.block_values, info.qmax)
            src[2, : info.block_values] = 0.0  # one all-zero group
            view, prov = ninfer.quantize_grouped(name, src)
            self.assertEqual(prov.groups, rows * cols // info.block_values, name)
            self.assertEqual(prov.zero_groups, 1, name)
            self.assertEqual(prov.method, 0)
            view.check()
            got = view.decode()
            np.testing.assert_array_equal(got.view(np.uint32), src.view(np.uint32), err_msg=name)
            # float16 source: the same values (all exact in binary16 here).
            view16, _ = ninfer.quantize_grouped(name, src.astype(np.float16))
            np.testing.assert_array_equal(view16.decode(), src)
        _, prov = ninfer.quantize_grouped("q8_g32_fp16", src[:, :128], method="grouped_search")
        self.assertEqual((prov.method, prov.parameters_version), (1, 1))
        self.assertLessEqual(prov.error, prov.absmax_error)

    def test_grouped_search_negative_scales(self):
        # Hand-worked: integers in [-7, 8] with +8 in each 64-group are exact under scale -1
        # (codes -v in [-8, 7]), which only a negative scale reaches.
        i = np.arange(2 * 128)
        src = np.where(i % 64 == 3, 8.0, (i * 7) % 15 - 7.0).astype(np.float32).reshape(2, 128)
        pos, prov = ninfer.quantize_grouped("q4_g64_fp16", src, method="grouped_search")
        self.assertEqual(prov.negative_scales, 0)
        self.assertFalse(np.array_equal(pos.decode(), src))
        neg, prov = ninfer.quantize_grouped("q4_g64_fp16", src, method="grouped_search",
                                            negative_scales=True)
        self.assertEqual(prov.negative_scales, 1)
        self.assertTrue(np.all(neg.planes[2].view("<u2") == 0xBC00))  # every scale is -1
        np.testing.assert_array_equal(neg.decode(), src)

    def test_quantize_refusals(self):
        bad = np.zeros((2, 64), dtype=np.float32)
        bad[1, 5] = np.nan
        with self.assertRaises(NinferError) as cm:
            ninfer.quantize_grouped("q4_g64_fp16", bad)
        self.assertEqual(cm.exception.status, Status.NON_FINITE_SOURCE)
        with self.assertRaises(NinferError) as cm:
            ninfer.quantize_grouped("gguf_q8_0", np.zeros((1, 32), dtype=np.float32))
        self.assertIn(cm.exception.status, (Status.INCOMPATIBLE_LAYOUT, Status.INVALID_ARGUMENT))
        with self.assertRaises(NinferError) as cm:
            ninfer.quantize_grouped("q8_g32_fp16", np.ones((1, 32), np.float32),
                                    method="grouped_absmax", negative_scales=True)
        self.assertEqual(cm.exception.status, Status.INVALID_ARGUMENT)

    def test_fp8_row_maxabs_round_trip(self):
        import ml_dtypes

        rng = np.random.default_rng(5)
        rows, cols = 4, 64
        codes = rng.integers(0, 256, size=(rows, cols), dtype=np.uint8)
        codes[(codes & 0x7F) == 0x7F] = 0x38  # no NaN codes
        codes[:, 7] = 0x7E  # 448 = E4M3FN max, so max|x| / 448 is the row's power of two
        c = codes.view(ml_dtypes.float8_e4m3fn).astype(np.float32)
        s = 2.0 ** rng.integers(-8, 8, size=(rows, 1))
        src = (c * s).astype(np.float32)
        for name in ("fp8_e4m3fn_row_bf16", "fp8_e4m3fn_row_fp16"):
            view = ninfer.fp8_row_maxabs(name, src)
            view.fp8_row_validate()
            np.testing.assert_array_equal(view.decode().view(np.uint32), src.view(np.uint32),
                                          err_msg=name)

    def test_encoders_take_2_byte_sources(self):
        # src_bytes is a byte length: bf16 and f16 sources (2 bytes per value) encode to
        # the same planes as the same values in f32 (all exact in both).
        import ml_dtypes

        rng = np.random.default_rng(11)
        src = (rng.integers(-64, 64, size=(3, 32)) / 8.0).astype(np.float32)
        for name in ("fp8_e4m3fn_row_bf16", "fp8_e4m3fn_row_fp16"):
            want = ninfer.fp8_row_maxabs(name, src)
            for other in (src.astype(ml_dtypes.bfloat16), src.astype(np.float16)):
                got = ninfer.fp8_row_maxabs(name, other)
                for a, b in zip(got.planes, want.planes):
                    np.testing.assert_array_equal(a, b, err_msg=f"{name} {other.dtype}")
        want = ninfer.nvfp4_quantize(src[:, :32])
        got = ninfer.nvfp4_quantize(src[:, :32].astype(np.float16))
        for a, b in zip(got.planes, want.planes):
            np.testing.assert_array_equal(a, b)

    def test_nvfp4_quantize(self):
        rng = np.random.default_rng(9)
        src = rng.normal(size=(256, 64)).astype(np.float32)
        view = ninfer.nvfp4_quantize(src, sources=2)
        view.nvfp4_validate()
        # Per source, the divisor is binary32(2688 / amax) (spec §3.3).
        divisors = view.planes[2].view("<f4")
        for k, half in enumerate((src[:128], src[128:])):
            want = np.float32(2688.0) / np.float32(np.abs(half).max())
            self.assertEqual(divisors[k].view(np.uint32), want.view(np.uint32))
        self.assertEqual(view.decode().shape, (256, 64))
        linear = rng.integers(0, 0x7F, size=(130, 5), dtype=np.uint8)
        packed = ninfer.nvfp4_pack_scales(linear)
        np.testing.assert_array_equal(ninfer.nvfp4_unpack_scales(packed, 130, 5), linear)

    def test_rows_and_validate_gguf(self):
        blocks = np.frombuffer(q8_0_blocks(), dtype=np.uint8)
        v = ninfer.WeightView("gguf_q8_0", 2, 32, [blocks])
        v.validate()
        np.testing.assert_array_equal(v.rows_copy(1, 1), blocks[34:])
        np.testing.assert_array_equal(v.rows_gather([1, 0, 1]),
                                      np.concatenate([blocks[34:], blocks[:34], blocks[34:]]))
        with self.assertRaises(NinferError) as cm:
            v.rows_gather([0, 2])
        self.assertEqual(cm.exception.status, Status.INDEX_OUT_OF_RANGE)
        bad = blocks.copy()
        bad[34:36] = (0x00, 0x7C)  # row 1's d = +Inf
        with self.assertRaises(NinferError) as cm:
            ninfer.WeightView("gguf_q8_0", 2, 32, [bad]).validate()
        self.assertEqual((cm.exception.status, cm.exception.row, cm.exception.block),
                         (Status.INVALID_ENCODING, 1, 0))


class ImportAndPacking(unittest.TestCase):
    def test_import_gguf_q8_0_keeps_values(self):
        rng = np.random.default_rng(17)
        rows, cols = 3, 96
        data = rng.integers(-127, 128, size=(rows * cols // 32, 34)).astype(np.int8).view(np.uint8)
        data[:, 0:2] = rng.uniform(0.01, 2, size=len(data)).astype(np.float16).view(np.uint8).reshape(-1, 2)
        gguf = ninfer.WeightView("gguf_q8_0", rows, cols, [data.reshape(-1)])
        native = ninfer.import_gguf(gguf, "q8_g32_fp16")
        self.assertEqual(ninfer.format_name(native.format), "q8_g32_fp16")
        np.testing.assert_array_equal(native.decode().view(np.uint32), gguf.decode().view(np.uint32))
        bad = data.copy()
        bad[1, 5] = 0x80  # code -128: not a legal q8_g32_fp16 code
        with self.assertRaises(NinferError) as cm:
            ninfer.import_gguf(ninfer.WeightView("gguf_q8_0", rows, cols, [bad.reshape(-1)]),
                               "q8_g32_fp16")
        self.assertEqual(cm.exception.status, Status.INVALID_ENCODING)
        with self.assertRaises(NinferError) as cm:
            ninfer.import_gguf(gguf, "q4_g64_fp16")
        self.assertEqual(cm.exception.status, Status.UNSUPPORTED)

    def test_import_bitnet_ternary(self):
        rng = np.random.default_rng(158)
        rows, cols = 8, 256
        codes = rng.integers(-1, 2, size=(rows, cols))
        p = rows // 4
        packed = np.zeros((p, cols), dtype=np.uint8)
        for i in range(4):  # transformers' pack_weights, written out
            packed |= (codes[i * p:(i + 1) * p] + 1).astype(np.uint8) << (2 * i)
        t2 = ninfer.import_bitnet_packed(packed, 0.25)
        want = (codes / 0.25).astype(np.float32) + np.float32(0)
        np.testing.assert_array_equal(t2.decode().view(np.uint32), want.view(np.uint32))
        t2 = ninfer.import_bitnet_packed(packed, 3.0, rule="multiply")
        want = (codes * 3.0).astype(np.float32) + np.float32(0)
        np.testing.assert_array_equal(t2.decode().view(np.uint32), want.view(np.uint32))
        with self.assertRaises(NinferError) as cm:
            ninfer.import_bitnet_packed(packed, 3.0)
        self.assertEqual(cm.exception.status, Status.INVALID_ARGUMENT)
        vals = (codes * 0.375).astype(np.float32)
        t2 = ninfer.import_ternary_values(vals)
        np.testing.assert_array_equal(t2.decode().view(np.uint32),
                                      (vals + np.float32(0)).view(np.uint32))
        bad = codes.astype(np.float32)
        bad[1, 3] = 2.0
        with self.assertRaises(NinferError) as cm:
            ninfer.import_ternary_values(bad, weight_scale=1.0)
        self.assertEqual(cm.exception.status, Status.INVALID_ENCODING)
        self.assertIn("row 1, block 0", str(cm.exception))

    def test_import_gguf_ternary_matches_gguf_py(self):
        from gguf import GGMLQuantizationType as G
        from gguf.quants import dequantize, quantize
        rng = np.random.default_rng(23)
        rows, cols = 3, 512
        x = (rng.integers(-1, 2, size=(rows, cols)) * rng.uniform(0.5, 1, size=(rows, cols)))
        for name, ty in (("TQ1_0", G.TQ1_0), ("TQ2_0", G.TQ2_0)):
            blocks = quantize(x.astype(np.float32), ty)
            t2 = ninfer.import_gguf_ternary(name, blocks, rows, cols)
            self.assertEqual(ninfer.format_name(t2.format), "t2_g128_fp16")
            want = dequantize(blocks, ty).astype(np.float32).reshape(rows, cols)
            np.testing.assert_array_equal(t2.decode().view(np.uint32), want.view(np.uint32))
        bad = quantize(x.astype(np.float32), G.TQ2_0)
        bad[2, 7] = 0xFF  # four 2-bit words 3: not ternary
        with self.assertRaises(NinferError) as cm:
            ninfer.import_gguf_ternary("TQ2_0", bad, rows, cols)
        self.assertEqual(cm.exception.status, Status.INVALID_ENCODING)
        self.assertIn("row 2, block 0", str(cm.exception))
        with self.assertRaises(NinferError) as cm:
            ninfer.import_gguf_ternary(35, bad, rows, 384)
        self.assertEqual(cm.exception.status, Status.BAD_SHAPE)
        with self.assertRaises(NinferError) as cm:
            ninfer.import_gguf_ternary("Q8_0", bad, rows, cols)
        self.assertEqual(cm.exception.status, Status.UNREGISTERED_TYPE)

    def test_fp8_pack_unpack(self):
        rng = np.random.default_rng(19)
        codes = rng.integers(0, 0x7F, size=(4, 16), dtype=np.uint8)
        scales = np.array([0x3F80, 0x4000, 0x3F00, 0x0000], dtype=np.uint16)  # bf16 1, 2, 0.5, +0
        codes[3] = 0  # a +0 scale only with zero codes
        for name in ("fp8_e4m3fn_row_bf16", "fp8_e4m3fn_row_fp16"):
            sc = scales if name.endswith("bf16") else np.array([0x3C00, 0x4000, 0x3800, 0], np.uint16)
            view = ninfer.fp8_row_pack(name, codes, sc)
            view.fp8_row_validate()
            c2, s2 = ninfer.fp8_row_unpack(view)
            np.testing.assert_array_equal(c2, codes)
            np.testing.assert_array_equal(s2, sc)
            # decode = E4M3FN value × row scale (1, 2, 0.5, +0), exact in f32 (ml_dtypes oracle).
            import ml_dtypes

            want = codes.view(ml_dtypes.float8_e4m3fn).astype(np.float32) * np.array(
                [[1.0], [2.0], [0.5], [0.0]], np.float32)
            np.testing.assert_array_equal(view.decode().view(np.uint32), want.view(np.uint32))


class LinearTests(unittest.TestCase):
    """y = x · Wᵀ + bias on inputs where f32 accumulation is exact, so the expected values
    are the float64 products computed by numpy (hand-checkable oracles)."""

    def test_fp32_hand_worked(self):
        w = np.arange(6, dtype=np.float32).reshape(2, 3)  # [[0,1,2],[3,4,5]]
        with ninfer.Linear(ninfer.WeightView("fp32", 2, 3, [w])) as lin:
            self.assertEqual(lin.shape, (2, 3))
            y = lin.forward(np.array([[1, 2, 3], [0, 0, 1]], np.float32), bias=[10, 20])
            np.testing.assert_array_equal(y, [[18, 46], [12, 25]])

    def test_forward_rows_strided_and_concurrent(self):
        w = np.arange(6, dtype=np.float32).reshape(2, 3)  # [[0,1,2],[3,4,5]]
        with ninfer.Linear(ninfer.WeightView("fp32", 2, 3, [w])) as lin:
            lin.set_threads(1)
            big_x = np.full((2, 7), np.nan, np.float32)
            big_x[:, 2:5] = [[1, 2, 3], [0, 0, 1]]  # x rows 7 apart, NaN around
            big_y = np.full((2, 6), -1, np.float32)
            y = big_y[:, 1:3]  # y rows 6 apart inside a larger tensor
            threads = [threading.Thread(target=lin.forward_rows,
                                        args=(big_x[:, 2:5], y, n, n + 1, [10, 20]))
                       for n in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            np.testing.assert_array_equal(
                big_y, [[-1, 18, 46, -1, -1, -1], [-1, 12, 25, -1, -1, -1]])
            before = big_y.copy()
            for n0, n1, status in [(1, 0, ninfer.Status.INVALID_ARGUMENT),
                                   (0, 3, ninfer.Status.ROW_OUT_OF_RANGE)]:
                with self.assertRaises(ninfer.NinferError) as e:
                    lin.forward_rows(big_x[:, 2:5], y, n0, n1)
                self.assertEqual(e.exception.status, status)
            with self.assertRaises(ninfer.NinferError) as e:  # n1 beyond y's columns
                lin.forward_rows(big_x[:, 2:5], big_y[:, 1:2], 0, 2)
            self.assertEqual(e.exception.status, ninfer.Status.BUFFER_TOO_SMALL)
            np.testing.assert_array_equal(big_y, before)
            # bf16 outputs: the bits of the whole call's.
            yb = np.zeros((2, 2), np.uint16)
            lin.forward_rows(np.array([[1, 2, 3], [0, 0, 1]], np.float32), yb, 0, 2)
            np.testing.assert_array_equal(
                yb, lin.forward(np.array([[1, 2, 3], [0, 0, 1]], np.float32),
                                y_dtype=ninfer.Dtype.BF16))
            # No activation rows: nothing to do (numpy gives empty arrays strides (0, 0)).
            lin.forward_rows(np.zeros((0, 3), np.float32), np.zeros((0, 2), np.float32), 0, 2)

    def test_quantized_weights_exact(self):
        rng = np.random.default_rng(11)
        rows, cols = 8, 128
        q = rng.integers(-127, 128, size=(rows, cols))
        q[:, ::32] = 127
        s = 2.0 ** rng.integers(-2, 2, size=(rows, cols // 32))
        w = (q.reshape(rows, -1, 32) * s[:, :, None]).reshape(rows, cols).astype(np.float32)
        view, _ = ninfer.quantize_grouped("q8_g32_fp16", w)
        x = rng.integers(-2, 3, size=(5, cols)).astype(np.float32)
        bias = rng.integers(-4, 5, size=rows).astype(np.float32)
        want = (x.astype(np.float64) @ w.astype(np.float64).T + bias).astype(np.float32)
        lin = ninfer.Linear(view, threads=2)
        y = lin.forward(x, bias=bias)
        np.testing.assert_array_equal(y.view(np.uint32), want.view(np.uint32))
        y16 = lin.forward(x.astype(np.float16), bias=bias)  # small ints: exact in f16
        np.testing.assert_array_equal(y16, want)
        ybf = lin.forward(x, bias=bias, y_dtype=ninfer.Dtype.BF16)
        import ml_dtypes

        np.testing.assert_array_equal(ybf, want.astype(ml_dtypes.bfloat16).view(np.uint16))
        lin.close()
        lin.close()  # idempotent
        with self.assertRaises(ValueError):
            lin.forward(x)

    def test_gguf_q8_0_with_exact_q8_1_activations(self):
        # Each 32-block of x holds integers with max |x| = 127, so its q8_1 scale is 1 and
        # the q8_1 codes are x itself: the GGUF path is exact here too.
        blocks = np.frombuffer(q8_0_blocks(), dtype=np.uint8)
        w = ninfer.WeightView("gguf_q8_0", 2, 32, [blocks]).decode()
        rng = np.random.default_rng(13)
        x = rng.integers(-127, 128, size=(3, 32)).astype(np.float32)
        x[:, 0] = 127
        want = (x.astype(np.float64) @ w.astype(np.float64).T).astype(np.float32)
        with ninfer.Linear(ninfer.WeightView("gguf_q8_0", 2, 32, [blocks])) as lin:
            np.testing.assert_array_equal(lin.forward(x), want)

    def test_refusals(self):
        self.assertFalse(ninfer.linear_supported("int32"))
        self.assertTrue(ninfer.linear_supported("gguf_q4_k"))
        with self.assertRaises(NinferError) as cm:
            ninfer.linear_supported("fp32", device=7)
        self.assertEqual(cm.exception.status, Status.INVALID_ARGUMENT)
        w = np.ones((2, 3), np.float32)
        with ninfer.Linear(ninfer.WeightView("fp32", 2, 3, [w])) as lin:
            for call, status in [
                (lambda: lin.forward(np.ones((1, 4), np.float32)), Status.BAD_SHAPE),
                (lambda: lin.forward(np.ones((1, 3), np.float32), bias=[1.0]),
                 Status.BUFFER_TOO_SMALL),
                (lambda: lin.forward(np.ones((1, 3), np.float32), y_dtype=ninfer.Dtype.F16),
                 Status.UNSUPPORTED),
            ]:
                with self.assertRaises(NinferError) as cm:
                    call()
                self.assertEqual(cm.exception.status, status)
        with self.assertRaises(NinferError) as cm:
            ninfer.Linear(ninfer.WeightView("int32", 2, 3, [np.zeros(6, np.int32)]))
        self.assertEqual(cm.exception.status, Status.UNSUPPORTED)


def q8_1_values(x: np.ndarray):
    """(x̂, d): the q8_1 values of the rows of x and each block's binary32 d, from the
    equations of docs/linear.md (ggml's quantize_row_q8_1_ref, binary32 arithmetic): per 32
    values amax, d = amax/127, id = 1/d, q = roundf(x·id) (half away from zero),
    x̂ = binary16(d)·q."""
    xb = np.ascontiguousarray(x, dtype=np.float32).reshape(-1, 32)
    amax = np.abs(xb).max(axis=1)
    d = amax / np.float32(127)
    with np.errstate(divide="ignore"):
        inv = np.where(d != 0, np.float32(1) / d, np.float32(0)).astype(np.float32)
    v = (xb * inv[:, None]).astype(np.float64)  # the binary32 product, then exact rounding
    q = np.sign(v) * np.floor(np.abs(v) + 0.5)
    dh = d.astype(np.float16).astype(np.float32)
    xhat = (dh[:, None] * q.astype(np.float32)).astype(np.float32)
    return xhat.reshape(x.shape), d.reshape(x.shape[0], -1)


def f32acc_tol(k: int, sums: np.ndarray) -> np.ndarray:
    """linear_f32acc_v1 (docs/linear.md): (K + 8)·2⁻²³·Σ|w·v| + (K + 8)·2⁻¹⁴⁹."""
    return (k + 8) * 2.0 ** -23 * sums + (k + 8) * 2.0 ** -149


class ActivationTests(unittest.TestCase):
    """The activation profile (Linear.set_activation, linear_activation_supported) against
    the documented table, hand-worked values, a numpy q8_1 oracle and the C API itself."""

    RS = "row_split_k128_v1"

    def test_supported_table(self):
        A = ninfer.Activation
        rs = ninfer.layout_lookup(self.RS)
        for fmt, act, device, want in [
            ("q4_g64_fp16", A.EXACT, ninfer.DEVICE_CPU, True),
            ("q4_g64_fp16", A.Q8_1, ninfer.DEVICE_CPU, True),
            ("q8_g32_fp16", A.Q8_1, ninfer.DEVICE_CPU, True),
            ("q6_g64_fp16", A.Q8_1, ninfer.DEVICE_CPU, True),
            ("t2_g128_fp16", A.Q8_1, ninfer.DEVICE_CPU, True),
            ("gguf_q8_0", A.Q8_1, ninfer.DEVICE_CPU, True),
            ("gguf_q6_k", A.Q8_1, ninfer.DEVICE_CPU, True),
            ("gguf_q8_0", A.EXACT, ninfer.DEVICE_CPU, False),
            ("gguf_q4_k", A.Q8_K, ninfer.DEVICE_CPU, True),
            ("gguf_iq4_xs", A.Q8_K, ninfer.DEVICE_CPU, True),
            ("gguf_iq1_m", A.Q8_K, ninfer.DEVICE_CPU, True),
            ("gguf_q8_0", A.Q8_K, ninfer.DEVICE_CPU, False),
            ("gguf_iq4_nl", A.Q8_K, ninfer.DEVICE_CPU, False),
            ("q4_g64_fp16", A.Q8_K, ninfer.DEVICE_CPU, False),
            ("gguf_q4_k", A.Q8_K, ninfer.DEVICE_CUDA, False),
            ("bf16", A.EXACT, ninfer.DEVICE_CPU, True),
            ("bf16", A.Q8_1, ninfer.DEVICE_CPU, False),
            ("fp32", A.Q8_1, ninfer.DEVICE_CPU, False),
            ("nvfp4", A.Q8_1, ninfer.DEVICE_CPU, True),
            # CUDA: only in a build with CUDA support (a question about the build).
            ("q4_g64_fp16", A.Q8_1, ninfer.DEVICE_CUDA, ninfer.cuda_compiled()),
        ]:
            layout = rs if fmt[0] in "qt" else None
            self.assertIs(ninfer.linear_activation_supported(fmt, layout, act, device), want,
                          (fmt, act, device))
        for args, status in [
            (("q4_g64_fp16", rs, 7), Status.INVALID_ARGUMENT),
            (("q4_g64_fp16", rs, ninfer.Activation.Q8_1, 9), Status.INVALID_ARGUMENT),
            ((999, rs, 1), Status.UNKNOWN_FORMAT),
            (("q4_g64_fp16", ninfer.layout_lookup("contiguous_le_v1"), 1),
             Status.INCOMPATIBLE_LAYOUT),
        ]:
            with self.assertRaises(NinferError) as cm:
                ninfer.linear_activation_supported(*args)
            self.assertEqual(cm.exception.status, status, args)
            self.assertTrue(cm.exception.message)

    def test_hand_worked(self):
        # One row of K = 32, gguf_q8_0 d = 1 (0x3C00), codes 1: w = 1 everywhere.
        # x = 1: amax = 1, d = 1/127, q = round(1·(1/d)) = 127, stored d = binary16(1/127)
        # = 1032·2⁻¹⁷ (1/127 = 1032.06·2⁻¹⁷), x̂ = 127·1032·2⁻¹⁷, y = 32·x̂ = 4064·1032·2⁻¹⁷
        # = 31.998046875 with q8_1, 32 exact. x = (127, 1, …, 1): d = 1, x̂ = x, y = 158.
        row = bytes([0x00, 0x3C] + [1] * 32)
        ones = np.ones((1, 32), np.float32)
        mixed = ones.copy()
        mixed[0, 0] = 127
        q81 = np.float32(4064 * 1032 / 2 ** 17)
        self.assertEqual(q81, 31.998046875)
        A = ninfer.Activation
        g = ninfer.WeightView("gguf_q8_0", 1, 32, [row])
        with ninfer.Linear(g) as lin:
            self.assertEqual(lin.forward(ones)[0, 0], q81)  # GGUF: q8_1 by default
            with self.assertRaises(NinferError) as cm:
                lin.set_activation(A.EXACT)
            self.assertEqual(cm.exception.status, Status.UNSUPPORTED)
            self.assertTrue(cm.exception.message)
            self.assertEqual(lin.forward(ones)[0, 0], q81)  # unchanged
            lin.set_activation(A.Q8_1)
            self.assertEqual(lin.forward(mixed)[0, 0], 158)
        native = ninfer.import_gguf(g, "q8_g32_fp16")  # the same words, moved unchanged
        with ninfer.Linear(native) as lin:
            self.assertEqual(lin.forward(ones)[0, 0], 32)  # exact by default
            self.assertEqual(lin.forward(mixed)[0, 0], 158)
            lin.set_activation(A.Q8_1)
            self.assertEqual(lin.forward(ones)[0, 0].view(np.uint32), q81.view(np.uint32))
            self.assertEqual(lin.forward(mixed)[0, 0], 158)
            with self.assertRaises(NinferError) as cm:
                lin.set_activation(7)
            self.assertEqual(cm.exception.status, Status.INVALID_ARGUMENT)
            self.assertEqual(lin.forward(ones)[0, 0], q81)  # unchanged
            lin.set_activation(A.EXACT)
            self.assertEqual(lin.forward(ones)[0, 0], 32)
        with self.assertRaises(ValueError):
            lin.set_activation(A.Q8_1)  # closed
        with ninfer.Linear(native, activation=A.Q8_1) as lin:
            self.assertEqual(lin.forward(ones)[0, 0], q81)

    def _c_forward_q8_1(self, view, x):
        """The product through the C API called directly (own ctypes declarations): prepare,
        set_activation(NINFER_ACTIVATION_Q8_1 = 1), forward, free."""
        import ctypes

        lib = ctypes.CDLL(ninfer.library_path())
        lib.ninfer_linear_prepare.argtypes = [ctypes.c_void_p, ctypes.c_uint32,
                                              ctypes.POINTER(ctypes.c_void_p)]
        lib.ninfer_linear_set_activation.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
        lib.ninfer_linear_forward.argtypes = [
            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint32, ctypes.c_uint64,
            ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t,
            ctypes.c_uint32]
        lib.ninfer_linear_free.argtypes = [ctypes.c_void_p]
        for f in ("ninfer_linear_prepare", "ninfer_linear_set_activation",
                  "ninfer_linear_forward"):
            getattr(lib, f).restype = ctypes.c_uint32
        lib.ninfer_linear_free.restype = None
        h = ctypes.c_void_p()
        self.assertEqual(lib.ninfer_linear_prepare(ctypes.addressof(view._view), 0,
                                                   ctypes.byref(h)), 0)
        try:
            self.assertEqual(lib.ninfer_linear_set_activation(h, 1), 0)
            m, k = x.shape
            y = np.zeros((m, view.shape[0]), np.float32)
            self.assertEqual(lib.ninfer_linear_forward(h, x.ctypes.data, x.nbytes, 0, m, k, None,
                                                       0, y.ctypes.data, y.nbytes, 0), 0)
        finally:
            lib.ninfer_linear_free(h)
        return y

    def test_grouped_q4_q8_1(self):
        # q4_g64_fp16: with Q8_1 each output meets linear_f32acc_v1 against Σ w·x̂ in f64 (w
        # the decoded weight values, x̂ from q8_1_values), equals the C API's bits, differs
        # from the exact product, and stays within q8_1's quantization error:
        # |x − x̂| ≤ d·(1/2 + 127·2⁻¹¹) per value (rounding to the code, then binary16(d),
        # relative error ≤ 2⁻¹¹, times |q| ≤ 127).
        rng = np.random.default_rng(17)
        n, k, m = 6, 192, 3
        src = (rng.standard_normal((n, k)) * rng.uniform(0.5, 4, (n, 1))).astype(np.float32)
        view, _ = ninfer.quantize_grouped("q4_g64_fp16", src)
        w = view.decode().astype(np.float64)
        x = rng.standard_normal((m, k)).astype(np.float32)
        with ninfer.Linear(view) as lin:
            exact = lin.forward(x)
            lin.set_activation(ninfer.Activation.Q8_1)
            y = lin.forward(x)
            xhat, d = q8_1_values(x)
            ref = xhat.astype(np.float64) @ w.T
            tol = f32acc_tol(k, np.abs(xhat.astype(np.float64)) @ np.abs(w).T)
            self.assertTrue(np.all(np.abs(y - ref) <= tol), np.max(np.abs(y - ref) / tol))
            np.testing.assert_array_equal(y.view(np.uint32),
                                          self._c_forward_q8_1(view, x).view(np.uint32))
            differ = int(np.sum(y.view(np.uint32) != exact.view(np.uint32)))
            self.assertGreater(differ, 0)
            err_x = np.repeat(d, 32, axis=1).astype(np.float64) * (0.5 + 127 * 2.0 ** -11)
            bound = (err_x @ np.abs(w).T + tol
                     + f32acc_tol(k, np.abs(x.astype(np.float64)) @ np.abs(w).T))
            self.assertTrue(np.all(np.abs(y.astype(np.float64) - exact) <= bound))
            with self.assertRaises(NinferError) as cm:
                lin.set_activation(7)
            self.assertEqual(cm.exception.status, Status.INVALID_ARGUMENT)
            np.testing.assert_array_equal(lin.forward(x).view(np.uint32), y.view(np.uint32))
        print(f"\n  q4_g64_fp16 q8_1: {y.size} outputs within linear_f32acc_v1 of Σ w·x̂, "
              f"equal to the C API's bits, {differ} differ from exact")
        v200, _ = ninfer.quantize_grouped("q4_g64_fp16", rng.standard_normal((3, 200)).astype(
            np.float32))  # K = 200: not a multiple of 32
        with ninfer.Linear(v200) as lin:
            with self.assertRaises(NinferError) as cm:
                lin.set_activation(ninfer.Activation.Q8_1)
            self.assertEqual(cm.exception.status, Status.BAD_SHAPE)
            lin.set_activation(ninfer.Activation.EXACT)

    def test_q8_g32_q8_1_equals_gguf_q8_0(self):
        # One gguf_q8_0 block is one q8_g32 group with the same scale, and the grouped q8_1
        # kernels follow the legacy GGUF family's order (docs/linear.md): same bits.
        rng = np.random.default_rng(19)
        rows, cols, m = 4, 128, 3
        blocks = rng.integers(-127, 128, size=(rows * cols // 32, 34)).astype(np.int8)
        blocks = blocks.view(np.uint8)
        blocks[:, 0:2] = rng.uniform(0.01, 2, len(blocks)).astype(np.float16).view(
            np.uint8).reshape(-1, 2)
        g = ninfer.WeightView("gguf_q8_0", rows, cols, [blocks.reshape(-1)])
        x = rng.standard_normal((m, cols)).astype(np.float32)
        with ninfer.Linear(g) as lg, ninfer.Linear(ninfer.import_gguf(g, "q8_g32_fp16")) as ln:
            yg = lg.forward(x)
            self.assertFalse(np.array_equal(ln.forward(x).view(np.uint32), yg.view(np.uint32)))
            ln.set_activation(ninfer.Activation.Q8_1)
            np.testing.assert_array_equal(ln.forward(x).view(np.uint32), yg.view(np.uint32))

    def test_bf16_refuses_q8_1(self):
        import ml_dtypes

        w = np.array([[1, 2], [3, 4]], np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)
        with ninfer.Linear(ninfer.WeightView("bf16", 2, 2, [w])) as lin:
            with self.assertRaises(NinferError) as cm:
                lin.set_activation(ninfer.Activation.Q8_1)
            self.assertEqual(cm.exception.status, Status.UNSUPPORTED)
            self.assertTrue(cm.exception.message)
            lin.set_activation(ninfer.Activation.EXACT)
            np.testing.assert_array_equal(lin.forward(np.array([[0.5, 0.25]], np.float32)),
                                          [[1, 2.5]])


class CheckingAProduct(unittest.TestCase):
    """quantize_row_q8_1, quantize_row_q8_k and convert: the exports a consumer's f64 oracle
    needs."""

    @staticmethod
    def q8_1_plain(x):
        """ggml's quantize_row_q8_1_ref written plainly in numpy float32 (finite blocks)."""
        blocks, x_hat = [], []
        for b in x.reshape(-1, 32).astype(np.float32):
            amax = np.max(np.abs(b))
            d = np.float32(amax / np.float32(127))
            inv = np.float32(1) / d if d != 0 else np.float32(0)
            v = b * inv
            q = (np.trunc(v) + (v - np.trunc(v) >= 0.5) - (v - np.trunc(v) <= -0.5)).astype(np.int8)
            with np.errstate(over="ignore"):  # binary16 overflow gives ±Inf, as in ggml
                s = np.float16(np.float32(int(q.astype(np.int32).sum())) * d)
            dh = np.float16(d)
            blocks.append(np.concatenate([np.frombuffer(dh.tobytes() + s.tobytes(), np.uint8),
                                          q.view(np.uint8)]))
            x_hat.append(np.float32(dh) * q.astype(np.float32))
        return np.concatenate(blocks), np.concatenate(x_hat)

    def test_quantize_row_q8_1_matches_the_plain_rederivation(self):
        rng = np.random.default_rng(11)
        x = (rng.standard_normal(32 * 40) * np.repeat(10.0 ** rng.uniform(-6, 4, 40), 32))
        x = x.astype(np.float32)
        x[5 * 32: 6 * 32] = 0.0  # a zero block: d = 0, codes 0
        x[7 * 32] = 0.5 * 127 / 16  # halves round away from zero
        blocks, x_hat = ninfer.quantize_row_q8_1(x)
        want_blocks, want_hat = self.q8_1_plain(x)
        np.testing.assert_array_equal(blocks, want_blocks)
        np.testing.assert_array_equal(x_hat.view(np.uint32), want_hat.view(np.uint32))
        with self.assertRaises(NinferError) as cm:
            ninfer.quantize_row_q8_1(x[:33])
        self.assertEqual(cm.exception.status, Status.BAD_SHAPE)

    def test_quantize_row_q8_k_matches_hand_worked_blocks(self):
        # Block 0 (ggml's quantize_row_q8_K_ref): max = −127, the first of largest magnitude
        # (the later +127 does not replace it): iscale = 1, d = 1, 2.5 → 2 and −3.5 → −4
        # (ties to even). Block 1: max = 254: iscale = −0.5, d = −2, 3 → −1.5 → −2,
        # 5 → −2.5 → −2. Block 2: all zero: d = 0, codes and sums 0.
        x = np.zeros(3 * 256, np.float32)
        x[:4] = [2.5, -3.5, -127, 127]
        x[16] = 7
        x[256:260] = [3, 5, 254, -254]
        blocks = ninfer.quantize_row_q8_k(x).reshape(3, 292)
        d = blocks[:, :4].copy().view("<f4").reshape(3)
        q = blocks[:, 4:260].view(np.int8)
        sums = blocks[:, 260:].copy().view("<i2")
        np.testing.assert_array_equal(d, [1, -2, 0])
        np.testing.assert_array_equal(q[0, :5], [2, -4, -127, 127, 0])
        np.testing.assert_array_equal(q[0, 16], 7)
        np.testing.assert_array_equal(q[1, :4], [-2, -2, -127, 127])
        np.testing.assert_array_equal(q[2], 0)
        np.testing.assert_array_equal(sums, q.astype(np.int16).reshape(3, 16, 16).sum(axis=2))
        np.testing.assert_array_equal(sums[0, :2], [-2, 7])
        with self.assertRaises(NinferError) as cm:
            ninfer.quantize_row_q8_k(x[:255])
        self.assertEqual(cm.exception.status, Status.BAD_SHAPE)

    def test_convert_matches_ml_dtypes_and_numpy(self):
        import ml_dtypes
        rng = np.random.default_rng(12)
        x = (rng.standard_normal(4096) * 10.0 ** rng.uniform(-10, 6, 4096)).astype(np.float32)
        x[:6] = [0.0, -0.0, 65520.0, -65519.0, 2.0 ** -25, np.inf]
        bf = ninfer.convert(x, ninfer.Dtype.F32, ninfer.Dtype.BF16)
        np.testing.assert_array_equal(bf, x.astype(ml_dtypes.bfloat16).view(np.uint16))
        h = ninfer.convert(x, ninfer.Dtype.F32, ninfer.Dtype.F16)
        with np.errstate(over="ignore"):  # numpy's cast is the oracle, overflow included
            want16 = x.astype(np.float16)
        np.testing.assert_array_equal(h.view(np.uint16), want16.view(np.uint16))
        back = ninfer.convert(bf, ninfer.Dtype.BF16, ninfer.Dtype.F32)
        np.testing.assert_array_equal(back, bf.view(ml_dtypes.bfloat16).astype(np.float32))
        np.testing.assert_array_equal(ninfer.convert(h, ninfer.Dtype.F16, ninfer.Dtype.F32),
                                      h.astype(np.float32))


class FakeCudaArray:
    """A stand-in for a torch / CuPy device array: only ``__cuda_array_interface__``."""

    def __init__(self, shape, typestr="<f4", address=0x7F0000000000, strides=None,
                 readonly=False, version=3, **extra):
        self.__cuda_array_interface__ = dict(shape=tuple(shape), typestr=typestr,
                                             data=(address, readonly), strides=strides,
                                             version=version, **extra)


def fp32_view():
    w = np.arange(6, dtype=np.float32).reshape(2, 3)  # N = 2, K = 3
    return ninfer.WeightView("fp32", 2, 3, [w])


class CudaTests(unittest.TestCase):
    """The CUDA entry points on a machine without GPU or driver (and, in the default
    build, without CUDA support): NO_DEVICE with a message, outputs untouched, NULL refused,
    and the __cuda_array_interface__ parsing up to the library call."""

    def assertNoDevice(self, cm):
        self.assertEqual(cm.exception.status, Status.NO_DEVICE)
        self.assertTrue(cm.exception.message)

    def test_statuses(self):
        self.assertEqual(Status.NO_DEVICE, 20)
        self.assertEqual(Status.CUDA, 21)

    def test_compiled_agrees_with_the_build(self):
        compiled = ninfer.cuda_compiled()
        self.assertIsInstance(compiled, bool)
        expect = os.environ.get("NINFER_EXPECT_CUDA")
        if expect is not None:
            self.assertEqual(compiled, expect == "1")
        with self.assertRaises(NinferError) as cm:
            ninfer.cuda_device_count()
        self.assertNoDevice(cm)
        # The message says which: no CUDA support in this build, or no driver / GPU.
        self.assertEqual("no CUDA support" in cm.exception.message, not compiled)

    def test_no_device(self):
        with self.assertRaises(NinferError) as cm:
            ninfer.cuda_device_properties(0)
        self.assertNoDevice(cm)
        with self.assertRaises(NinferError) as cm:
            ninfer.Linear(fp32_view(), device=ninfer.DEVICE_CUDA)
        self.assertNoDevice(cm)
        with self.assertRaises(NinferError) as cm:
            ninfer.Linear(fp32_view(), device=ninfer.DEVICE_CUDA, ordinal=3)
        self.assertNoDevice(cm)
        with self.assertRaises(ValueError):
            ninfer.Linear(fp32_view(), ordinal=1)  # ordinal without DEVICE_CUDA

    def test_outputs_untouched(self):
        n = ctypes.c_uint32(77)
        self.assertEqual(ninfer._cuda_device_count(ctypes.byref(n)), Status.NO_DEVICE)
        self.assertEqual(n.value, 77)
        info = ninfer._CudaDeviceInfo()
        info.multiprocessors, info.name = 5, b"untouched"
        self.assertEqual(ninfer._cuda_device_properties(0, ctypes.byref(info)), Status.NO_DEVICE)
        self.assertEqual((info.multiprocessors, info.name), (5, b"untouched"))
        v = fp32_view()
        h = ctypes.cast(ctypes.c_void_p(0x1230), ninfer._LinearP)
        st = ninfer._cuda_linear_prepare(ctypes.byref(v._view), 0, ctypes.byref(h))
        self.assertEqual(st, Status.NO_DEVICE)
        self.assertEqual(ctypes.cast(h, ctypes.c_void_p).value, 0x1230)
        dv = ninfer._DeviceView()
        dv.format, dv.layout, dv.rows, dv.cols = v.format, v.layout, 2, 3
        dv.plane_addresses[0], dv.plane_lengths[0] = 0x7F0000000000, 24
        st = ninfer._cuda_linear_prepare_device(ctypes.byref(dv), 0, ctypes.byref(h))
        self.assertEqual(st, Status.NO_DEVICE)
        self.assertTrue(ninfer._last_message())
        self.assertEqual(ctypes.cast(h, ctypes.c_void_p).value, 0x1230)

    def test_null_pointers(self):
        h = ninfer._LinearP()
        n64 = ctypes.c_uint64(9)
        v = fp32_view()
        for st in [
            ninfer._cuda_device_count(None),
            ninfer._cuda_device_properties(0, None),
            ninfer._cuda_linear_prepare(None, 0, ctypes.byref(h)),
            ninfer._cuda_linear_prepare(ctypes.byref(v._view), 0, None),
            ninfer._cuda_linear_prepare_device(None, 0, ctypes.byref(h)),
            ninfer._cuda_linear_workspace_size(None, 1, ctypes.byref(n64)),
            ninfer._cuda_linear_forward(None, 1, 0, 1, 3, 0, 1, 0, None, 0, 0),
            ninfer._cuda_linear_decode_rows(None, 0, 1, 1, 0, None),
        ]:
            self.assertEqual(st, Status.NULL_POINTER)
            self.assertTrue(ninfer._last_message())
        self.assertEqual(n64.value, 9)
        with ninfer.Linear(v) as lin:  # x / y address 0 with m > 0
            st = ninfer._cuda_linear_forward(lin._handle, 0, 0, 1, 3, 0, 0, 0, None, 0, 0)
            self.assertEqual(st, Status.NULL_POINTER)
            self.assertEqual(ninfer._cuda_linear_workspace_size(lin._handle, 1, None),
                             Status.NULL_POINTER)
        # A device plane at address 0 with a length.
        with self.assertRaises(NinferError) as cm:
            ninfer.Linear.from_device("fp32", 2, 3, [(0, 24)])
        self.assertEqual(cm.exception.status, Status.NULL_POINTER)

    def test_from_device_parses_planes(self):
        # A well-formed plane reaches the library, which has no device.
        for plane in [FakeCudaArray((6,)), FakeCudaArray((2, 3)), FakeCudaArray((24,), "|u1"),
                      (0x7F0000000000, 24)]:
            with self.assertRaises(NinferError) as cm:
                ninfer.Linear.from_device("fp32", 2, 3, [plane])
            self.assertNoDevice(cm)
        # The plane length is the array's bytes: 5 floats are refused as such.
        with self.assertRaises(NinferError) as cm:
            ninfer.Linear.from_device("fp32", 2, 3, [FakeCudaArray((5,))])
        self.assertEqual(cm.exception.status, Status.SIZE_MISMATCH)
        with self.assertRaises(TypeError):
            ninfer.Linear.from_device("fp32", 2, 3, [np.zeros(6, np.float32)])
        with self.assertRaises(ValueError):
            ninfer.Linear.from_device("fp32", 2, 3, [FakeCudaArray((2, 3), strides=(4, 8))])

    def spy_forward(self):
        calls = []
        real = ninfer._cuda_linear_forward

        def spy(*args):
            calls.append(args[1:])
            return real(*args)
        ninfer._cuda_linear_forward = spy
        self.addCleanup(setattr, ninfer, "_cuda_linear_forward", real)
        return calls

    def test_forward_device_parses_interfaces(self):
        calls = self.spy_forward()

        class Stream:
            cuda_stream = 0x5000

        with ninfer.Linear(fp32_view()) as lin:
            self.assertEqual(lin.workspace_size(4), 0)  # a CPU handle needs none
            x = FakeCudaArray((4, 3), address=0x1000, strides=(12, 4))
            y = FakeCudaArray((4, 2), address=0x2000)
            bias = FakeCudaArray((2,), address=0x3000)
            ws = FakeCudaArray((256,), "|u1", address=0x4000)
            # The library is reached and refuses a CPU handle.
            with self.assertRaises(NinferError) as cm:
                lin.forward_device(x, y, bias=bias, stream=Stream(), workspace=ws)
            self.assertEqual(cm.exception.status, Status.UNSUPPORTED)
            self.assertEqual(calls[-1], (0x1000, ninfer.Dtype.F32, 4, 3, 0x3000, 0x2000,
                                         ninfer.Dtype.F32, 0x5000, 0x4000, 256))
            # f16 x, bf16 words for y, a 1-D row, a stream address, no bias / workspace.
            with self.assertRaises(NinferError):
                lin.forward_device(FakeCudaArray((3,), "<f2", address=0x1100),
                                   FakeCudaArray((2,), "<i2", address=0x2200), stream=0x77,
                                   bf16=True)
            self.assertEqual(calls[-1], (0x1100, ninfer.Dtype.F16, 1, 3, 0, 0x2200,
                                         ninfer.Dtype.BF16, 0x77, 0, 0))
            # Size-1 dimensions may carry any stride; an empty x has no strides to check.
            with self.assertRaises(NinferError):
                lin.forward_device(FakeCudaArray((1, 3), strides=(0, 4)), FakeCudaArray((1, 2)))
            n_calls = len(calls)
            # Refused before the library is called.
            refusals = [
                (TypeError, dict(x=np.zeros((4, 3), np.float32))),
                (ValueError, dict(x=FakeCudaArray((4, 3), strides=(4, 16)))),  # column-major
                (ValueError, dict(x=FakeCudaArray((4, 3), strides=(24, 4)))),  # a slice
                (ValueError, dict(x=FakeCudaArray((4, 3), "<f8"))),
                (ValueError, dict(x=FakeCudaArray((4, 3), "<i4"))),
                (ValueError, dict(x=FakeCudaArray((4, 3), "<u2"))),  # bf16 words need bf16=True
                (ValueError, dict(x=FakeCudaArray((4, 3), ">f4"))),
                (ValueError, dict(x=FakeCudaArray((4, 3), "f4"))),
                (ValueError, dict(x=FakeCudaArray((2, 2, 3)))),
                (ValueError, dict(x=FakeCudaArray((4, 3), mask=FakeCudaArray((4, 3), "|b1")))),
                (ValueError, dict(x=FakeCudaArray((4, 3), version=9))),
                (ValueError, dict(y=FakeCudaArray((4, 2), "<f2", ))),  # f16 outputs
                (ValueError, dict(y=FakeCudaArray((4, 3)))),  # N = 2
                (ValueError, dict(y=FakeCudaArray((3, 2)))),  # m = 4
                (ValueError, dict(y=FakeCudaArray((4, 2), readonly=True))),
                (ValueError, dict(bias=FakeCudaArray((3,)))),
                (ValueError, dict(bias=FakeCudaArray((2,), "<f2"))),
                (TypeError, dict(stream="default")),
            ]
            for exc, kw in refusals:
                args = dict(x=FakeCudaArray((4, 3)), y=FakeCudaArray((4, 2)))
                args.update(kw)
                with self.assertRaises(exc, msg=repr(kw)) as cm:
                    lin.forward_device(**args)
                self.assertTrue(str(cm.exception))
            broken = FakeCudaArray((4, 3))
            del broken.__cuda_array_interface__["data"]
            with self.assertRaises(ValueError):
                lin.forward_device(broken, FakeCudaArray((4, 2)))
            self.assertEqual(len(calls), n_calls)

    def test_decode_rows_device(self):
        with ninfer.Linear(fp32_view()) as lin:
            with self.assertRaises(NinferError) as cm:  # a CPU handle
                lin.decode_rows_device(0, FakeCudaArray((2, 3)))
            self.assertEqual(cm.exception.status, Status.UNSUPPORTED)
            with self.assertRaises(NinferError):
                lin.decode_rows_device(1, FakeCudaArray((1, 3), "<u2"), stream=0x9, bf16=True)
            with self.assertRaises(ValueError):
                lin.decode_rows_device(0, FakeCudaArray((2, 4)))  # K = 3
            with self.assertRaises(ValueError):
                lin.decode_rows_device(0, FakeCudaArray((2, 3), "<f2"))
            with self.assertRaises(ValueError):
                lin.decode_rows_device(0, FakeCudaArray((2, 3), readonly=True))


class AgainstGgufPy(unittest.TestCase):
    """Random blocks (finite binary16 scales), decoded by the library and by gguf-py."""

    LAYOUTS = {  # name: (ggml type name, byte offsets of binary16 scales in a block)
        "gguf_q8_0": ("Q8_0", (0,)),
        "gguf_q4_0": ("Q4_0", (0,)),
        "gguf_q5_0": ("Q5_0", (0,)),
        "gguf_q4_k": ("Q4_K", (0, 2)),
        "gguf_q6_k": ("Q6_K", (208,)),
    }

    def test_rows_bit_identical(self):
        try:
            import gguf
            from gguf.quants import dequantize
        except ImportError:
            self.fail("gguf-py (PyPI gguf) is required: pip install gguf")
        rng = np.random.default_rng(7)
        counts = {}
        for name, (ggml_name, scale_offsets) in self.LAYOUTS.items():
            info = ninfer.format_info(name)
            rows, blocks_per_row = 4, 2
            cols = blocks_per_row * info.block_values
            data = rng.integers(0, 256, size=(rows * blocks_per_row, info.block_bytes),
                                dtype=np.uint8)
            for off in scale_offsets:  # finite binary16 scales in (-2, 2)
                scales = (rng.uniform(-2, 2, size=len(data))).astype(np.float16)
                data[:, off:off + 2] = scales.view(np.uint8).reshape(-1, 2)
            data = data.reshape(rows, -1)
            want = dequantize(data, gguf.GGMLQuantizationType[ggml_name]).astype(np.float32)
            got = ninfer.WeightView(name, rows, cols, [data]).decode()
            self.assertEqual(got.shape, want.shape)
            np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32),
                                          err_msg=name)
            counts[name] = got.size
        print("\n  bit-identical to gguf-py:", ", ".join(f"{k} {v}" for k, v in counts.items()))


if __name__ == "__main__":
    unittest.main()
