"""Tests of the ctypes binding: hand-worked values, refused inputs as NinferError, and
decoded GGUF rows compared bit for bit with gguf-py's dequantizers (an independent oracle).
Run: python3 -m unittest discover -s bindings/python/tests -v (PYTHONPATH=bindings/python)."""

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
        self.assertIn("nvfp4", ninfer.format_names())
        info = ninfer.format_info("gguf_q6_k")
        self.assertEqual((info.block_values, info.block_bytes, info.ggml_type), (256, 210, 14))
        self.assertEqual(info.bits_per_weight, 6.5625)
        self.assertEqual(ninfer.layout_name(info.layout), "gguf_blocks_v1")
        self.assertEqual(ninfer.format_from_ggml_type(12), ninfer.format_lookup("gguf_q4_k"))
        self.assertEqual(ninfer.plane_sizes(f, info.layout, 2, 32), (68, 0, 0))
        self.assertEqual(Status.OK, 0)
        self.assertEqual(Status.SIZE_MISMATCH, 9)

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
