"""ctypes binding of libninfer: format registry lookups and row decoding over numpy arrays.

The shared library is found, in order, at ``$NINFER_LIBRARY`` (a path), inside the
installed package (``pip install ./bindings/python`` builds and bundles it), through the
system loader (``libninfer.so.0``: an installed library, or ``LD_LIBRARY_PATH``), or in
the source tree's ``target/release``. Every failing call raises :class:`NinferError`
carrying the :class:`Status` and the library's message, read on the calling thread right
after the call. Byte planes and output arrays are passed to C without copies.

Encoders: :func:`quantize_grouped`, :func:`fp8_row_maxabs`, :func:`nvfp4_quantize`; checks:
:meth:`WeightView.validate`, :func:`fp8_row_validate`, :func:`nvfp4_validate`; row slicing:
:meth:`WeightView.rows_copy`, :meth:`WeightView.rows_gather`; products: :class:`Linear`
(``y = x · Wᵀ + bias`` over a prepared weight; a handle freed by ``close()``, ``with`` or
garbage collection), its :class:`Activation` profile (:meth:`Linear.set_activation`,
:func:`linear_activation_supported`). CUDA: :func:`cuda_compiled`, :func:`cuda_device_count`,
:func:`cuda_device_properties`, ``Linear(view, device=DEVICE_CUDA)`` (uploads numpy planes),
:meth:`Linear.from_device` (borrows device planes), :meth:`Linear.forward_device` and
:meth:`Linear.decode_rows_device` on device arrays exposing ``__cuda_array_interface__``
(torch, CuPy), parsed by :func:`cuda_array`. A new export is one ``_declare`` line plus a
function.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import enum
import numbers
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence, Tuple, Union

import numpy as np

__all__ = [
    "NinferError", "Status", "Dtype", "FormatInfo", "WeightView", "version", "abi_version",
    "version_numbers", "format_count", "format_at", "format_names", "format_lookup", "format_name", "format_from_ggml_type",
    "format_info", "layout_count", "layout_names", "layout_lookup", "layout_name",
    "format_layout_compatible", "plane_sizes", "library_path", "MAX_PLANES",
    "quantize_grouped", "fp8_row_maxabs", "nvfp4_quantize", "nvfp4_pack_scales",
    "nvfp4_unpack_scales", "Provenance", "Linear", "linear_supported", "DEVICE_CPU",
    "DEVICE_CUDA", "import_gguf", "import_gguf_ternary", "fp8_row_pack", "fp8_row_unpack", "Activation",
    "import_bitnet_packed", "import_ternary_values", "TERNARY_SCALE_RULES",
    "linear_activation_supported", "cuda_compiled", "cuda_device_count", "cuda_device_properties",
    "CudaDeviceInfo", "CudaArray", "cuda_array",
]

MAX_PLANES = 3
ABI_VERSION = 0  # the SONAME number this binding is written for


def _candidates():
    env = os.environ.get("NINFER_LIBRARY")
    if env:
        yield env
        return
    bundled = Path(__file__).resolve().parent / f"libninfer.so.{ABI_VERSION}"
    if bundled.exists():
        yield str(bundled)
    yield f"libninfer.so.{ABI_VERSION}"
    found = ctypes.util.find_library("ninfer")
    if found:
        yield found
    root = Path(__file__).resolve().parents[3]
    yield str(root / "target" / "release" / "libninfer.so")


def _load():
    errors = []
    for cand in _candidates():
        try:
            return ctypes.CDLL(cand), cand
        except OSError as e:
            errors.append(f"{cand}: {e}")
    raise ImportError("libninfer not found (set NINFER_LIBRARY):\n  " + "\n  ".join(errors))


_lib, _lib_path = _load()


def library_path() -> str:
    """The path or name the shared library was loaded from."""
    return _lib_path


class _Bytes(ctypes.Structure):
    _fields_ = [("ptr", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class _View(ctypes.Structure):
    _fields_ = [
        ("format", ctypes.c_uint32),
        ("layout", ctypes.c_uint32),
        ("rows", ctypes.c_uint64),
        ("cols", ctypes.c_uint64),
        ("planes", _Bytes * MAX_PLANES),
    ]


class _FormatInfo(ctypes.Structure):
    _fields_ = [
        ("format", ctypes.c_uint32),
        ("name", ctypes.c_char_p),
        ("category", ctypes.c_uint32),
        ("code_bits", ctypes.c_uint32),
        ("block_values", ctypes.c_uint32),
        ("block_bytes", ctypes.c_uint32),
        ("scale_type", ctypes.c_uint32),
        ("layout", ctypes.c_uint32),
        ("code_min", ctypes.c_int64),
        ("code_max", ctypes.c_int64),
        ("qmax", ctypes.c_int32),
        ("ggml_type", ctypes.c_int32),
        ("bits_per_weight", ctypes.c_double),
    ]


class _MutBytes(ctypes.Structure):
    _fields_ = [("ptr", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class _QuantizeOptions(ctypes.Structure):
    _fields_ = [
        ("method", ctypes.c_uint32),
        ("negative_scales", ctypes.c_uint32),
        ("importance", ctypes.c_void_p),
        ("importance_len", ctypes.c_size_t),
    ]


class _Provenance(ctypes.Structure):
    _fields_ = [
        ("method", ctypes.c_uint32),
        ("negative_scales", ctypes.c_uint32),
        ("importance", ctypes.c_uint32),
        ("parameters_version", ctypes.c_uint32),
        ("groups", ctypes.c_uint64),
        ("zero_groups", ctypes.c_uint64),
        ("rescued_groups", ctypes.c_uint64),
        ("improved_groups", ctypes.c_uint64),
        ("absmax_error", ctypes.c_double),
        ("error", ctypes.c_double),
    ]


_u32, _u64, _sz = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_size_t
_P = ctypes.POINTER


_BITS = {_u32: 32, _u64: 64, _sz: 8 * ctypes.sizeof(_sz)}


def _unsigned(value, bits: int, what: str):
    """``value`` when it is not an int or fits an unsigned ``bits``-bit word; ctypes would
    silently wrap it (2**32 + 18 as 18), so anything else raises OverflowError."""
    if isinstance(value, numbers.Integral) and not 0 <= value < 1 << bits:
        raise OverflowError(f"{what}: {value} does not fit a {bits}-bit unsigned integer")
    return value


def _declare(name, restype, *argtypes):
    fn = getattr(_lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)
    bits = [(i, _BITS[t]) for i, t in enumerate(argtypes) if t in _BITS]
    if not bits:
        return fn

    def checked(*args):
        for i, b in bits:
            if i < len(args):
                _unsigned(args[i], b, f"{name}: argument {i + 1}")
        return fn(*args)

    checked.__name__ = name
    return checked


def _set_view(v, fmt, layout, rows, cols) -> None:
    """The descriptor fields of a view struct, each checked against its C type."""
    for what, value, bits in (("format", fmt, 32), ("layout", layout, 32),
                              ("rows", rows, 64), ("cols", cols, 64)):
        _unsigned(value, bits, what)
    v.format, v.layout, v.rows, v.cols = fmt, layout, rows, cols


# One line per export: adding quantize / linear later is a declaration plus a wrapper.
_version = _declare("ninfer_version", ctypes.c_char_p)
_abi_version = _declare("ninfer_abi_version", _u32)
_version_major = _declare("ninfer_version_major", _u32)
_version_minor = _declare("ninfer_version_minor", _u32)
_version_patch = _declare("ninfer_version_patch", _u32)
_status_name = _declare("ninfer_status_name", ctypes.c_char_p, _u32)
_last_error_message = _declare("ninfer_last_error_message", _sz, ctypes.c_char_p, _sz)
_format_count = _declare("ninfer_format_count", _u32)
_format_at = _declare("ninfer_format_at", _u32, _u32, _P(_u32))
_format_lookup = _declare("ninfer_format_lookup", _u32, ctypes.c_char_p, _P(_u32))
_format_from_ggml_type = _declare("ninfer_format_from_ggml_type", _u32, _u32, _P(_u32))
_format_name = _declare("ninfer_format_name", ctypes.c_char_p, _u32)
_format_get_info = _declare("ninfer_format_get_info", _u32, _u32, _P(_FormatInfo))
_layout_count = _declare("ninfer_layout_count", _u32)
_layout_lookup = _declare("ninfer_layout_lookup", _u32, ctypes.c_char_p, _P(_u32))
_layout_name = _declare("ninfer_layout_name", ctypes.c_char_p, _u32)
_compatible = _declare("ninfer_format_layout_compatible", _u32, _u32, _u32)
_plane_sizes = _declare("ninfer_layout_plane_sizes", _u32, _u32, _u32, _u64, _u64, _P(_sz), _sz)
_view_check = _declare("ninfer_weight_view_check", _u32, _P(_View))
_decode_row = _declare("ninfer_decode_row", _u32, _P(_View), _u64, ctypes.c_void_p, _sz)
_decode_row_as = _declare("ninfer_decode_row_as", _u32, _P(_View), _u64, _u32, ctypes.c_void_p, _sz)
_quantize_row_q8_1 = _declare("ninfer_quantize_row_q8_1", _u32, ctypes.c_void_p, _sz,
                              ctypes.c_void_p, _sz, ctypes.c_void_p, _sz)
_quantize_row_q8_k = _declare("ninfer_quantize_row_q8_k", _u32, ctypes.c_void_p, _sz,
                              ctypes.c_void_p, _sz)
_convert = _declare("ninfer_convert", _u32, ctypes.c_void_p, _sz, _u32, ctypes.c_void_p, _sz,
                    _u32)
_decode_rows = _declare("ninfer_decode_rows", _u32, _P(_View), _u64, _u64, ctypes.c_void_p, _sz,
                        _u32)
_validate = _declare("ninfer_validate", _u32, _P(_View), _P(_u64), _P(_u64))
_rows_copy = _declare("ninfer_rows_copy", _u32, _P(_View), _u64, _u64, ctypes.c_void_p, _sz,
                      _P(_sz))
_rows_gather = _declare("ninfer_rows_gather", _u32, _P(_View), ctypes.c_void_p, _sz,
                        ctypes.c_void_p, _sz, _P(_sz))
_quantize_grouped = _declare("ninfer_quantize_grouped", _u32, _u32, ctypes.c_void_p, _sz, _u32,
                             _u64, _u64, _P(_QuantizeOptions), _P(_MutBytes), _P(_Provenance))
_fp8_row_maxabs = _declare("ninfer_fp8_row_maxabs", _u32, _u32, ctypes.c_void_p, _sz, _u32,
                           _u64, _u64, _P(_MutBytes))
_fp8_row_validate = _declare("ninfer_fp8_row_validate", _u32, _P(_View))
_nvfp4_quantize = _declare("ninfer_nvfp4_quantize", _u32, _u32, ctypes.c_void_p, _sz, _u32,
                           _u64, _u64, _u64, _P(_MutBytes))
_nvfp4_validate = _declare("ninfer_nvfp4_validate", _u32, _P(_View))
_nvfp4_pack_scales = _declare("ninfer_nvfp4_pack_scales", _u32, _u64, _u64, ctypes.c_void_p, _sz,
                              ctypes.c_void_p, _sz)
_nvfp4_unpack_scales = _declare("ninfer_nvfp4_unpack_scales", _u32, _u64, _u64, ctypes.c_void_p,
                                _sz, ctypes.c_void_p, _sz)

class _LinearHandle(ctypes.Structure):
    pass


_LinearP = _P(_LinearHandle)
_linear_supported = _declare("ninfer_linear_supported", _u32, _u32, _u32, _u32, _u32, _u32)
_linear_prepare = _declare("ninfer_linear_prepare", _u32, _P(_View), _u32, _P(_LinearP))
_linear_set_threads = _declare("ninfer_linear_set_threads", _u32, _LinearP, _u32)
_linear_activation_supported = _declare("ninfer_linear_activation_supported", _u32, _u32, _u32,
                                        _u32, _u32)
_linear_set_activation = _declare("ninfer_linear_set_activation", _u32, _LinearP, _u32)
_linear_shape = _declare("ninfer_linear_shape", _u32, _LinearP, _P(_u64), _P(_u64))
_linear_forward = _declare("ninfer_linear_forward", _u32, _LinearP, ctypes.c_void_p, _sz, _u32,
                           _u64, _u64, ctypes.c_void_p, _sz, ctypes.c_void_p, _sz, _u32)
_linear_forward_rows = _declare("ninfer_linear_forward_rows", _u32, _LinearP, ctypes.c_void_p,
                                _sz, _u32, _u64, _u64, _u64, ctypes.c_void_p, _sz, _u64, _u64,
                                ctypes.c_void_p, _sz, _u32, _u64)
_linear_free = _declare("ninfer_linear_free", None, _LinearP)
_import_gguf = _declare("ninfer_import_gguf", _u32, _P(_View), _u32, _P(_MutBytes))
_import_gguf_ternary = _declare("ninfer_import_gguf_ternary", _u32, _u32, ctypes.c_void_p, _sz,
                                _u64, _u64, _P(_MutBytes))
_import_bitnet_packed = _declare("ninfer_import_bitnet_packed", _u32, ctypes.c_void_p, _sz, _u64,
                                 _u64, ctypes.c_float, _u32, _P(_MutBytes))
_import_ternary_values = _declare("ninfer_import_ternary_values", _u32, ctypes.c_void_p, _sz, _u32,
                                  _u64, _u64, _u32, ctypes.c_float, _u32, _P(_MutBytes))
_fp8_row_pack = _declare("ninfer_fp8_row_pack", _u32, _u32, _u64, _u64, ctypes.c_void_p, _sz,
                         ctypes.c_void_p, _sz, _P(_MutBytes))
_fp8_row_unpack = _declare("ninfer_fp8_row_unpack", _u32, _P(_View), ctypes.c_void_p, _sz,
                           ctypes.c_void_p, _sz)


class _CudaDeviceInfo(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char * 256),
        ("compute_capability_major", ctypes.c_uint32),
        ("compute_capability_minor", ctypes.c_uint32),
        ("total_memory_bytes", ctypes.c_uint64),
        ("multiprocessors", ctypes.c_uint32),
        ("l2_cache_bytes", ctypes.c_uint32),
        ("native_cubin", ctypes.c_uint32),
    ]


class _DeviceView(ctypes.Structure):
    _fields_ = [
        ("format", ctypes.c_uint32),
        ("layout", ctypes.c_uint32),
        ("rows", ctypes.c_uint64),
        ("cols", ctypes.c_uint64),
        ("plane_addresses", ctypes.c_uint64 * MAX_PLANES),
        ("plane_lengths", ctypes.c_uint64 * MAX_PLANES),
    ]


_cuda_compiled = _declare("ninfer_cuda_compiled", _u32)
_cuda_device_count = _declare("ninfer_cuda_device_count", _u32, _P(_u32))
_cuda_device_properties = _declare("ninfer_cuda_device_properties", _u32, _u32,
                                   _P(_CudaDeviceInfo))
_cuda_linear_prepare = _declare("ninfer_cuda_linear_prepare", _u32, _P(_View), _u32,
                                _P(_LinearP))
_cuda_linear_prepare_device = _declare("ninfer_cuda_linear_prepare_device", _u32,
                                       _P(_DeviceView), _u32, _P(_LinearP))
_cuda_linear_workspace_size = _declare("ninfer_cuda_linear_workspace_size", _u32, _LinearP,
                                       _u64, _P(_u64))
_cuda_linear_forward = _declare("ninfer_cuda_linear_forward", _u32, _LinearP, _u64, _u32, _u64,
                                _u64, _u64, _u64, _u32, ctypes.c_void_p, _u64, _u64)
_cuda_linear_decode_rows = _declare("ninfer_cuda_linear_decode_rows", _u32, _LinearP, _u64,
                                    _u64, _u64, _u32, ctypes.c_void_p)

DEVICE_CPU = 0
DEVICE_CUDA = 1

if _abi_version() != ABI_VERSION:
    raise ImportError(f"{_lib_path}: ABI {_abi_version()}, this binding expects {ABI_VERSION}")


def _names(count_fn, name_fn):
    return [name_fn(i).decode() for i in range(count_fn())]


def _status_members():
    members, i = {}, 0
    while True:
        name = _status_name(i).decode()
        if name == "UNKNOWN_STATUS":
            return members
        members[name] = i
        i += 1


#: Status codes, read from the library (append-only numbers).
Status = enum.IntEnum("Status", _status_members())


class Dtype(enum.IntEnum):
    """Dense output element types (NINFER_DTYPE_*)."""

    F32 = 0
    BF16 = 1
    F16 = 2


class Activation(enum.IntEnum):
    """Activation profiles of :class:`Linear` (NINFER_ACTIVATION_*): what ``forward``
    multiplies the weight values with (spec §2: the consumer chooses activation precision;
    docs/linear.md "Activation profiles").

    ``EXACT``: x as given; the default of every non-GGUF format, unavailable for GGUF
    weights. ``Q8_1``: each row of x first quantized to ggml's q8_1 blocks (32 values, a
    binary16 scale d, codes round(x/d) in [-127, 127]), then x̂ = d·code; the default profile of
    GGUF weights, opt-in for q2/t2/q4/q5/q6/q8 grouped formats in row_split_k128_v1 and for nvfp4.
    ``Q8_K``: each row of x first quantized to ggml's q8_K blocks (256 values, a binary32
    scale d, codes in [-127, 127]), then x̂ = d·code; opt-in for the GGUF k-quants
    (Q2_K..Q6_K) and 256-value i-quants (IQ4_XS, IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S,
    IQ3_XXS, IQ3_S), on the CPU."""

    EXACT = 0
    Q8_1 = 1
    Q8_K = 2


_DTYPE_NUMPY = {Dtype.F32: np.float32, Dtype.BF16: np.uint16, Dtype.F16: np.float16}


class NinferError(Exception):
    """A failed call: ``status`` (a :class:`Status`) and the library's ``message``;
    :meth:`WeightView.validate` also sets ``row`` and ``block`` (else None)."""

    def __init__(self, status: int, message: str, row: Optional[int] = None,
                 block: Optional[int] = None):
        try:
            status = Status(status)
        except ValueError:
            pass
        self.status = status
        self.message = message
        self.row = row
        self.block = block
        name = status.name if isinstance(status, Status) else f"STATUS_{status}"
        super().__init__(f"{name}: {message}")


def _last_message() -> str:
    n = _last_error_message(None, 0)
    if n == 0:
        return ""
    buf = ctypes.create_string_buffer(n + 1)
    _last_error_message(buf, n + 1)
    return buf.value.decode("utf-8", "replace")


def _check(status: int) -> None:
    # ctypes calls run on the calling OS thread, so the thread-local message is this call's.
    if status != 0:
        raise NinferError(status, _last_message())


_SRC_DTYPES = {np.dtype(np.float32): Dtype.F32, np.dtype(np.float16): Dtype.F16}


def _source(src, bf16: bool):
    """(array, dtype) of a C-contiguous 2-D source: float32, float16, or uint16 words taken
    as bf16 when ``bf16`` is true (``ml_dtypes.bfloat16`` arrays are taken as bf16 too)."""
    a = np.ascontiguousarray(src)
    if a.ndim != 2:
        raise ValueError("source must be 2-D [rows, cols]")
    if a.dtype.name == "bfloat16" or (bf16 and a.dtype == np.uint16):
        return a.view(np.uint16), Dtype.BF16
    if a.dtype not in _SRC_DTYPES:
        raise ValueError(f"unsupported source dtype {a.dtype} (float32, float16, bf16)")
    return a, _SRC_DTYPES[a.dtype]


def _source_rows(src, bf16: bool):
    """As :func:`_source`, keeping a 2-D array whose rows are ascending and whose elements
    are contiguous (rows may be any distance apart: a row-strided view is not copied)."""
    if isinstance(src, np.ndarray) and src.ndim == 2 and src.shape[0] and src.shape[1] \
            and src.strides[1] == src.itemsize and src.strides[0] >= src.nbytes // src.shape[0] \
            and src.strides[0] % src.itemsize == 0:
        if src.dtype.name == "bfloat16" or (bf16 and src.dtype == np.uint16):
            return src.view(np.uint16), Dtype.BF16
        if src.dtype in _SRC_DTYPES:
            return src, _SRC_DTYPES[src.dtype]
    return _source(src, bf16)


def _ptr(a: np.ndarray):
    return a.ctypes.data if a.size else None


@dataclass(frozen=True)
class Provenance:
    """What ninfer_quantize_grouped reports: method, parameters and counters."""

    method: int
    negative_scales: int
    importance: int
    parameters_version: int
    groups: int
    zero_groups: int
    rescued_groups: int
    improved_groups: int
    absmax_error: float
    error: float


QUANTIZE_METHODS = {"grouped_absmax": 0, "grouped_search": 1}


def quantize_grouped(fmt: Union[int, str], src, method: str = "grouped_absmax",
                     negative_scales: bool = False, importance=None, bf16: bool = False):
    """Quantizes a [rows, cols] source into the row_split_k128_v1 planes of a grouped format.

    Returns ``(view, provenance)``: a :class:`WeightView` over the new planes and a
    :class:`Provenance`."""
    fmt = format_lookup(fmt) if isinstance(fmt, str) else int(fmt)
    a, dt = _source(src, bf16)
    rows, cols = a.shape
    layout = layout_lookup("row_split_k128_v1")
    sizes = plane_sizes(fmt, layout, rows, cols)
    planes = [np.zeros(n, dtype=np.uint8) for n in sizes]
    mut = (_MutBytes * MAX_PLANES)()
    for i, p in enumerate(planes):
        mut[i].ptr, mut[i].len = _ptr(p), p.size
    opts = None
    imp = None
    if method != "grouped_absmax" or negative_scales or importance is not None:
        if method not in QUANTIZE_METHODS:
            raise ValueError(f"unknown method {method!r}")
        opts = _QuantizeOptions()
        opts.method = QUANTIZE_METHODS[method]
        opts.negative_scales = int(bool(negative_scales))
        if importance is not None:
            imp = np.ascontiguousarray(importance, dtype=np.float32)
            opts.importance, opts.importance_len = _ptr(imp), imp.size
    prov = _Provenance()
    _check(_quantize_grouped(fmt, _ptr(a), a.nbytes, dt, rows, cols,
                             ctypes.byref(opts) if opts is not None else None, mut,
                             ctypes.byref(prov)))
    return (WeightView(fmt, rows, cols, planes, layout=layout),
            Provenance(**{f: getattr(prov, f) for f, _ in _Provenance._fields_}))


def _mut_planes(planes):
    """The ``NINFER_MAX_PLANES`` output entries for ``planes`` (unused ones {NULL, 0})."""
    mut = (_MutBytes * MAX_PLANES)()
    for i, p in enumerate(planes):
        if p.size:
            mut[i].ptr, mut[i].len = _ptr(p), p.size
    return mut


def fp8_row_maxabs(fmt: Union[int, str], src, bf16: bool = False) -> "WeightView":
    """Quantizes a [rows, cols] source with fp8_row_maxabs into an fp8_e4m3fn_row_* view."""
    fmt = format_lookup(fmt) if isinstance(fmt, str) else int(fmt)
    a, dt = _source(src, bf16)
    rows, cols = a.shape
    layout = format_info(fmt).layout
    sizes = plane_sizes(fmt, layout, rows, cols)
    p0, p1 = np.zeros(sizes[0], dtype=np.uint8), np.zeros(sizes[1], dtype=np.uint8)
    _check(_fp8_row_maxabs(fmt, _ptr(a), a.nbytes, dt, rows, cols, _mut_planes([p0, p1])))
    return WeightView(fmt, rows, cols, [p0, p1], layout=layout)


def nvfp4_quantize(src, sources: int = 1, bf16: bool = False) -> "WeightView":
    """Quantizes a [rows, cols] source of ``sources`` stacked matrices to an nvfp4 view."""
    a, dt = _source(src, bf16)
    rows, cols = a.shape
    fmt = format_lookup("nvfp4")
    layout = format_info(fmt).layout
    sizes = plane_sizes(fmt, layout, rows, cols)
    codes = np.zeros(sizes[0], dtype=np.uint8)
    scales = np.zeros(sizes[1], dtype=np.uint8)
    divisors = np.zeros(4 * sources, dtype=np.uint8)
    _check(_nvfp4_quantize(fmt, _ptr(a), a.nbytes, dt, rows, cols, sources,
                           _mut_planes([codes, scales, divisors])))
    return WeightView(fmt, rows, cols, [codes, scales, divisors], layout=layout)


def nvfp4_pack_scales(linear) -> np.ndarray:
    """Swizzles linear [rows, k_blocks] E4M3FN scale bytes into the 128x4 layout."""
    a = np.ascontiguousarray(linear, dtype=np.uint8)
    rows, kb = a.shape
    out = np.zeros(-(-rows // 128) * 128 * (-(-kb // 4) * 4), dtype=np.uint8)
    _check(_nvfp4_pack_scales(rows, kb, _ptr(a), a.size, _ptr(out), out.size))
    return out


def nvfp4_unpack_scales(swizzled, rows: int, k_blocks: int) -> np.ndarray:
    """The linear [rows, k_blocks] scales of a swizzled plane."""
    a = _as_bytes(swizzled)
    out = np.zeros((rows, k_blocks), dtype=np.uint8)
    _check(_nvfp4_unpack_scales(rows, k_blocks, _ptr(a), a.size, _ptr(out), out.size))
    return out


def version() -> str:
    """The library's version string."""
    return _version().decode()


def version_numbers() -> Tuple[int, int, int]:
    """The library's (major, minor, patch)."""
    return (_version_major(), _version_minor(), _version_patch())


def abi_version() -> int:
    return _abi_version()


def format_count() -> int:
    return _format_count()


def format_at(index: int) -> int:
    """The format number at registry index ``index`` (0 .. format_count() - 1)."""
    out = _u32()
    _check(_format_at(index, ctypes.byref(out)))
    return out.value


def format_names() -> list:
    """Canonical names of all registered formats, by number."""
    return _names(_format_count, _format_name)


def format_lookup(name: str) -> int:
    """The format number of an exact canonical name (``"gguf_q4_k"``)."""
    out = _u32()
    _check(_format_lookup(name.encode(), ctypes.byref(out)))
    return out.value


def format_name(fmt: int) -> Optional[str]:
    p = _format_name(fmt)
    return None if p is None else p.decode()


def format_from_ggml_type(ggml_type: int) -> int:
    out = _u32()
    _check(_format_from_ggml_type(ggml_type, ctypes.byref(out)))
    return out.value


@dataclass(frozen=True)
class FormatInfo:
    """The registry's facts about one format (ninfer_format_info)."""

    format: int
    name: str
    category: int
    code_bits: int
    block_values: int
    block_bytes: int
    scale_type: int
    layout: int
    code_min: int
    code_max: int
    qmax: int
    ggml_type: int
    bits_per_weight: float


def format_info(fmt: Union[int, str]) -> FormatInfo:
    if isinstance(fmt, str):
        fmt = format_lookup(fmt)
    ci = _FormatInfo()
    _check(_format_get_info(fmt, ctypes.byref(ci)))
    return FormatInfo(**{f: getattr(ci, f) for f, _ in _FormatInfo._fields_ if f != "name"},
                      name=ci.name.decode())


def layout_count() -> int:
    return _layout_count()


def layout_names() -> list:
    return _names(_layout_count, _layout_name)


def layout_lookup(name: str) -> int:
    out = _u32()
    _check(_layout_lookup(name.encode(), ctypes.byref(out)))
    return out.value


def layout_name(layout: int) -> Optional[str]:
    p = _layout_name(layout)
    return None if p is None else p.decode()


def format_layout_compatible(fmt: int, layout: int) -> None:
    """Raises NinferError unless ``fmt`` may be stored in ``layout``."""
    _check(_compatible(fmt, layout))


def plane_sizes(fmt: int, layout: int, rows: int, cols: int) -> Tuple[int, ...]:
    """Byte length of each plane of a rows × cols tensor (unused planes 0)."""
    sizes = (_sz * MAX_PLANES)()
    _check(_plane_sizes(fmt, layout, rows, cols, sizes, MAX_PLANES))
    return tuple(sizes)


def _as_bytes(plane) -> np.ndarray:
    """A zero-copy uint8 view of a bytes-like object or a C-contiguous numpy array."""
    if isinstance(plane, np.ndarray):
        if not plane.flags.c_contiguous:
            raise ValueError("planes must be C-contiguous")
        return plane.reshape(-1).view(np.uint8)
    return np.frombuffer(memoryview(plane).cast("B"), dtype=np.uint8)


class WeightView:
    """A borrowed persistent tensor: format, layout, logical [rows, cols] (cols = K) and the
    layout's byte planes (bytes, bytearray, memoryview or numpy arrays; not copied).

    ``format`` may be a number or a canonical name; ``layout`` defaults to the format's
    registered layout.
    """

    def __init__(self, format: Union[int, str], rows: int, cols: int,
                 planes: Sequence, layout: Optional[int] = None):
        fmt = format_lookup(format) if isinstance(format, str) else int(format)
        if layout is None:
            layout = format_info(fmt).layout
        if len(planes) > MAX_PLANES:
            raise ValueError(f"at most {MAX_PLANES} planes")
        self._planes = [_as_bytes(p) for p in planes]  # keeps the buffers alive
        v = _View()
        _set_view(v, fmt, layout, rows, cols)
        for i, p in enumerate(self._planes):
            v.planes[i].ptr = p.ctypes.data if p.size else None
            v.planes[i].len = p.size
        self._view = v

    def __repr__(self) -> str:
        return (f"WeightView({format_name(self.format)!r}, {layout_name(self.layout)!r}, "
                f"shape={list(self.shape)}, planes={[p.size for p in self._planes]} bytes)")

    @property
    def format(self) -> int:
        return self._view.format

    @property
    def layout(self) -> int:
        return self._view.layout

    @property
    def shape(self) -> Tuple[int, int]:
        return (self._view.rows, self._view.cols)

    def check(self) -> None:
        """Structural check (format, layout, shape, plane lengths); raises NinferError."""
        _check(_view_check(ctypes.byref(self._view)))

    def decode_row(self, row: int, out: Optional[np.ndarray] = None) -> np.ndarray:
        """Row ``row`` as float32 (exact values; GGUF bit-identical to ggml)."""
        if out is None:
            self.check()  # before allocating cols floats
            out = np.empty(self._view.cols, dtype=np.float32)
        elif out.dtype != np.float32 or not out.flags.c_contiguous or not out.flags.writeable:
            raise ValueError("out must be a writeable C-contiguous float32 array")
        _check(_decode_row(ctypes.byref(self._view), row, out.ctypes.data if out.size else None,
                           out.size))
        return out

    def decode_row_as(self, row: int, dtype: Dtype) -> np.ndarray:
        """Row ``row`` as float32, bf16 (uint16 words) or float16 (round to nearest even)."""
        dtype = Dtype(dtype)
        self.check()
        out = np.empty(self._view.cols, dtype=_DTYPE_NUMPY[dtype])
        _check(_decode_row_as(ctypes.byref(self._view), row, dtype, out.ctypes.data, out.nbytes))
        return out

    @property
    def planes(self) -> list:
        """The byte planes (uint8 arrays sharing the caller's memory)."""
        return list(self._planes)

    def validate(self) -> None:
        """Checks every encoding rule over the whole payload; raises NinferError (with
        ``row`` and ``block`` set for INVALID_ENCODING)."""
        row, block = _u64(), _u64()
        st = _validate(ctypes.byref(self._view), ctypes.byref(row), ctypes.byref(block))
        if st == Status.INVALID_ENCODING:
            raise NinferError(st, _last_message(), row.value, block.value)
        _check(st)

    def fp8_row_validate(self) -> None:
        _check(_fp8_row_validate(ctypes.byref(self._view)))

    def nvfp4_validate(self) -> None:
        _check(_nvfp4_validate(ctypes.byref(self._view)))

    def _rows_bytes(self, count: int) -> int:
        if count == 0:
            return 0
        return sum(plane_sizes(self.format, self.layout, count, self._view.cols))

    def rows_copy(self, start: int, count: int) -> np.ndarray:
        """The payload of rows start .. start + count (planes back to back)."""
        self.check()
        out = np.zeros(self._rows_bytes(count), dtype=np.uint8)
        written = _sz()
        _check(_rows_copy(ctypes.byref(self._view), start, count, _ptr(out), out.size,
                          ctypes.byref(written)))
        return out[: written.value]

    def rows_gather(self, indices) -> np.ndarray:
        """The payload of the rows ``indices`` (any order, repeats allowed)."""
        idx = np.ascontiguousarray(indices, dtype=np.uint64)
        self.check()
        out = np.zeros(self._rows_bytes(idx.size), dtype=np.uint8)
        written = _sz()
        _check(_rows_gather(ctypes.byref(self._view), _ptr(idx), idx.size, _ptr(out), out.size,
                            ctypes.byref(written)))
        return out[: written.value]

    def decode_rows(self, first: int, count: int, dtype: Dtype = Dtype.F32,
                    out: Optional[np.ndarray] = None) -> np.ndarray:
        """Rows ``first .. first + count`` as a [count, cols] array of ``dtype`` (float32,
        bf16 as uint16 words, float16), in one library call (``ninfer_decode_rows``).
        ``out``, when given, is a writeable C-contiguous array of that element type with at
        least count × cols elements; it is written only on success."""
        dtype = Dtype(dtype)
        np_type = _DTYPE_NUMPY[dtype]
        if out is None:
            self.check()  # before allocating count × cols values
            if not 0 <= first <= self._view.rows or not 0 <= count <= self._view.rows - first:
                # The library's refusal of the range, without allocating from `count`.
                _check(_decode_rows(ctypes.byref(self._view), first, count, None, 0, dtype))
            out = np.empty((count, self._view.cols), dtype=np_type)
        elif out.dtype != np_type or not out.flags.c_contiguous or not out.flags.writeable:
            raise ValueError(f"out must be a writeable C-contiguous {np.dtype(np_type).name} array")
        _check(_decode_rows(ctypes.byref(self._view), first, count,
                            out.ctypes.data if out.size else None, out.nbytes, dtype))
        return out

    def decode(self, dtype: Dtype = Dtype.F32) -> np.ndarray:
        """All rows as a [rows, cols] array of ``dtype`` (one ``ninfer_decode_rows`` call)."""
        return self.decode_rows(0, self._view.rows, dtype)


def quantize_row_q8_1(x) -> Tuple[np.ndarray, np.ndarray]:
    """Quantizes one activation row (K float32 values, K a positive multiple of 32) as the
    q8_1 activation profile does (``ninfer_quantize_row_q8_1``). Returns ``(blocks,
    x_hat)``: K/32 ggml block_q8_1 as a uint8 array of K/32 × 36 bytes (binary16 d at 0,
    binary16 s at 2, 32 int8 codes at 4) and the K float32 values f32(d)·q a q8_1 product
    multiplies (the values for an f64 oracle; docs/linear.md, "Checking a product")."""
    a = np.ascontiguousarray(x, dtype=np.float32).reshape(-1)
    if a.size == 0 or a.size % 32:
        _check(_quantize_row_q8_1(a.ctypes.data if a.size else None, a.size, None, 0, None, 0))
    blocks = np.zeros(a.size // 32 * 36, dtype=np.uint8)
    x_hat = np.zeros(a.size, dtype=np.float32)
    _check(_quantize_row_q8_1(a.ctypes.data, a.size, blocks.ctypes.data, blocks.size,
                              x_hat.ctypes.data, x_hat.size))
    return blocks, x_hat


def quantize_row_q8_k(x) -> np.ndarray:
    """Quantizes one activation row (K float32 values, K a positive multiple of 256) as the
    opt-in q8_K activation profile does (``ninfer_quantize_row_q8_k``). Returns K/256 ggml
    block_q8_K as a uint8 array of K/256 × 292 bytes (binary32 d at 0, 256 int8 codes at 4,
    16 int16 sums at 260, little-endian). The product multiplies x̂ = d·q, exact in float64
    (not in float32): the values for an f64 oracle (docs/linear.md, "Checking a product")."""
    a = np.ascontiguousarray(x, dtype=np.float32).reshape(-1)
    if a.size == 0 or a.size % 256:
        _check(_quantize_row_q8_k(a.ctypes.data if a.size else None, a.size, None, 0))
    blocks = np.zeros(a.size // 256 * 292, dtype=np.uint8)
    _check(_quantize_row_q8_k(a.ctypes.data, a.size, blocks.ctypes.data, blocks.size))
    return blocks


def convert(src: np.ndarray, src_dtype: Dtype, dst_dtype: Dtype) -> np.ndarray:
    """The values of ``src`` (float32, bf16 as uint16 words, or float16, as ``src_dtype``
    says) as ``dst_dtype`` (``ninfer_convert``): widening exact, narrowing rounded to
    nearest even (binary16 overflow gives ±Inf). Returns a new array of the same shape."""
    src_dtype, dst_dtype = Dtype(src_dtype), Dtype(dst_dtype)
    a = np.ascontiguousarray(src, dtype=_DTYPE_NUMPY[src_dtype])
    out = np.empty(a.shape, dtype=_DTYPE_NUMPY[dst_dtype])
    _check(_convert(a.ctypes.data if a.size else None, a.nbytes, src_dtype,
                    out.ctypes.data if out.size else None, out.nbytes, dst_dtype))
    return out


def linear_supported(fmt: Union[int, str], layout: Optional[int] = None, x_dtype: int = 0,
                     y_dtype: int = 0, device: int = DEVICE_CPU) -> bool:
    """True when this build has a linear kernel for the combination, False when it is
    valid but not implemented; raises NinferError for numbers that name nothing."""
    fmt = format_lookup(fmt) if isinstance(fmt, str) else int(fmt)
    if layout is None:
        layout = format_info(fmt).layout
    st = _linear_supported(fmt, layout, x_dtype, y_dtype, device)
    if st == Status.UNSUPPORTED:
        _last_message()
        return False
    _check(st)
    return True


def linear_activation_supported(fmt: Union[int, str], layout: Optional[int] = None,
                                activation: int = Activation.Q8_1,
                                device: int = DEVICE_CPU) -> bool:
    """True when this build computes ``linear`` for ``fmt`` in ``layout`` (default: the
    format's registered layout) on ``device`` with the :class:`Activation` profile
    ``activation`` (default: Q8_1, the opt-in one), False when the numbers are valid but it does not (EXACT on GGUF formats,
    Q8_1 on bf16, fp32, fp8 rows, CUDA in a build without CUDA support); raises NinferError for numbers that name
    nothing (UNKNOWN_FORMAT, UNKNOWN_LAYOUT, INCOMPATIBLE_LAYOUT, INVALID_ARGUMENT for the
    activation or device). Q8_1 also needs K to be a multiple of 32, checked by
    :meth:`Linear.set_activation`."""
    fmt = format_lookup(fmt) if isinstance(fmt, str) else int(fmt)
    if layout is None:
        layout = format_info(fmt).layout
    st = _linear_activation_supported(fmt, layout, int(activation), device)
    if st == Status.UNSUPPORTED:
        _last_message()
        return False
    _check(st)
    return True


class Linear:
    """A weight prepared for ``y = x · Wᵀ (+ bias)`` (ninfer_linear). It borrows the view's
    planes, which this object keeps alive; free it with ``close()`` or ``with``.
    ``threads`` and ``activation``, when given, are passed to :meth:`set_threads` and
    :meth:`set_activation`.

    CUDA: ``Linear(view, device=DEVICE_CUDA, ordinal=0)`` copies the view's planes (numpy
    arrays or any buffer) once to CUDA device ``ordinal``; :meth:`forward` then still takes
    and returns host arrays (copies in and out, synchronous), and :meth:`forward_device` /
    :meth:`decode_rows_device` work on device arrays (torch, CuPy, Numba: anything with
    ``__cuda_array_interface__``) on a stream. :meth:`from_device` borrows planes already in
    device memory. Without a GPU, driver or CUDA support in the library these raise
    NinferError with ``Status.NO_DEVICE`` (see :func:`cuda_compiled`)."""

    def __init__(self, view: WeightView, device: int = DEVICE_CPU, threads: Optional[int] = None,
                 activation: Optional[int] = None, ordinal: int = 0):
        if not isinstance(view, WeightView):
            hint = ""
            if isinstance(view, tuple) and view and isinstance(view[0], WeightView):
                hint = (": quantize_grouped returns (view, provenance); "
                        "write `view, prov = ninfer.quantize_grouped(...)` and pass the view")
            raise TypeError(f"Linear takes a WeightView, not {type(view).__name__}{hint}")
        handle = _LinearP()
        if device == DEVICE_CUDA:
            # Uploads the planes once to CUDA device `ordinal` (ninfer_cuda_linear_prepare;
            # ninfer_linear_prepare with NINFER_DEVICE_CUDA is the same on device 0).
            _check(_cuda_linear_prepare(ctypes.byref(view._view), ordinal, ctypes.byref(handle)))
        elif ordinal != 0:
            raise ValueError("ordinal applies to device=DEVICE_CUDA only")
        else:
            _check(_linear_prepare(ctypes.byref(view._view), device, ctypes.byref(handle)))
        # A CPU handle reads the view's planes until close(); a CUDA one holds its own copy.
        self._adopt(handle, None if device == DEVICE_CUDA else view, device, ordinal)
        if threads is not None:
            self.set_threads(threads)
        if activation is not None:
            self.set_activation(activation)

    def _adopt(self, handle, keep, device: int, ordinal: int) -> None:
        self._handle = handle
        self._view = keep  # the handle reads these planes until close()
        self.device = device
        self.ordinal = ordinal
        rows, cols = _u64(), _u64()
        _check(_linear_shape(handle, ctypes.byref(rows), ctypes.byref(cols)))
        self.shape = (rows.value, cols.value)

    def _live(self):
        if not self._handle:
            raise ValueError("Linear is closed")
        return self._handle

    def set_threads(self, threads: int) -> None:
        """0 = process-wide pool (default), 1 = calling thread, n = calling thread + own pool of n - 1."""
        _check(_linear_set_threads(self._live(), threads))

    def set_activation(self, activation: int) -> None:
        """Chooses the :class:`Activation` profile of ``forward`` (defaults: GGUF formats
        Q8_1, every other format EXACT). Raises NinferError, with the setting unchanged:
        INVALID_ARGUMENT (an unknown profile number), UNSUPPORTED (EXACT on a GGUF weight,
        Q8_1 or Q8_K on a format without it; see :func:`linear_activation_supported`),
        BAD_SHAPE (Q8_1 with K not a multiple of 32, Q8_K with K not a multiple of 256)."""
        _check(_linear_set_activation(self._live(), int(activation)))

    def forward(self, x, bias=None, y_dtype: Dtype = Dtype.F32, bf16: bool = False) -> np.ndarray:
        """``x`` [m, K] (float32, float16, or bf16 words) -> y [m, N] float32 (or bf16 words
        as uint16 with ``y_dtype=Dtype.BF16``); a 1-D ``x`` [K] gives a 1-D y [N]."""
        one = np.ndim(x) == 1
        y = self._forward2d(np.atleast_2d(x), bias, y_dtype, bf16)
        return y[0] if one else y

    def _forward2d(self, x, bias, y_dtype, bf16) -> np.ndarray:
        a, x_dtype = _source(x, bf16)
        m, k = a.shape
        n = self.shape[0]
        y_dtype = Dtype(y_dtype)
        y = np.empty((m, n), dtype=np.float32 if y_dtype == Dtype.F32 else np.uint16)
        b = None if bias is None else np.ascontiguousarray(bias, dtype=np.float32)
        _check(_linear_forward(self._live(), _ptr(a), a.nbytes, x_dtype, m, k,
                               None if b is None else _ptr(b), 0 if b is None else b.size,
                               _ptr(y), y.nbytes, y_dtype))
        return y

    def forward_rows(self, x, y, n0: int, n1: int, bias=None, bf16: bool = False) -> None:
        """Writes the outputs ``n0:n1`` of :meth:`forward` into ``y[:, n0:n1]`` in place
        (ninfer_linear_forward_rows), the same bits as the whole call, touching nothing else
        of ``y``. ``x`` [m, K] (float32, float16, or bf16 words) may be a row-strided view
        of a larger array (rows any distance apart, elements contiguous; anything else is
        copied first). ``y`` [m, >= n1] is a writable float32 (or uint16 bf16 words) array
        whose rows may be any distance apart (e.g. ``big[:, 8:8 + N]``); its column 0 is
        output 0. ``bias`` None or at least n1 floats, indexed by the absolute n. Threads
        may fill disjoint ranges of one ``y`` at once (``set_threads(1)`` keeps each call on
        its thread). Raises NinferError (nothing written): INVALID_ARGUMENT (n0 > n1),
        ROW_OUT_OF_RANGE (n1 > N), BAD_SHAPE (n1 beyond y's columns when y's row stride
        is below n1, e.g. a contiguous y; K or ldx wrong), BUFFER_TOO_SMALL (n1 beyond y's
        columns of a strided view whose rows are wide enough apart, short bias); ValueError
        for a y whose elements are not contiguous within a row."""
        a, x_dtype = _source_rows(x, bf16)
        m, k = a.shape
        ldx = a.strides[0] // a.itemsize if m > 1 else k
        if not isinstance(y, np.ndarray) or y.ndim != 2 or not y.flags.writeable:
            raise ValueError("y must be a writable 2-D numpy array")
        if y.dtype == np.float32:
            y_dtype = Dtype.F32
        elif y.dtype == np.uint16 or y.dtype.name == "bfloat16":
            y_dtype = Dtype.BF16
        else:
            raise ValueError(f"unsupported y dtype {y.dtype} (float32, bf16 words)")
        if y.shape[0] != m:
            raise ValueError(f"y has {y.shape[0]} rows, x has {m}")
        # An empty y (numpy gives it strides (0, 0)) has no row to check.
        if y.size and (y.strides[1] != y.itemsize or y.strides[0] < 0
                       or y.strides[0] % y.itemsize):
            raise ValueError("y: elements of a row must be contiguous, rows ascending")
        ldy = y.strides[0] // y.itemsize if m > 1 else y.shape[1]
        y_elems = (m - 1) * ldy + y.shape[1] if m else 0
        x_elems = (m - 1) * ldx + k if m else 0
        b = None if bias is None else np.ascontiguousarray(bias, dtype=np.float32)
        _check(_linear_forward_rows(
            self._live(), a.ctypes.data if x_elems else None, x_elems * a.itemsize, x_dtype, m,
            k, ldx, None if b is None else _ptr(b), 0 if b is None else b.size, n0, n1,
            y.ctypes.data if y_elems else None, y_elems * y.itemsize, y_dtype, ldy))

    @classmethod
    def from_device(cls, format: Union[int, str], rows: int, cols: int, planes: Sequence,
                    layout: Optional[int] = None, ordinal: int = 0) -> "Linear":
        """A weight whose planes are already in the memory of CUDA device ``ordinal``
        (ninfer_cuda_linear_prepare_device, zero copy). ``planes``: the layout's planes in
        order, each an object with ``__cuda_array_interface__`` (C-contiguous, any dtype:
        its bytes are the plane) or an ``(address, nbytes)`` pair. The planes are borrowed:
        this object keeps the array objects alive, and they must not change until
        ``close()``."""
        fmt = format_lookup(format) if isinstance(format, str) else int(format)
        if layout is None:
            layout = format_info(fmt).layout
        if len(planes) > MAX_PLANES:
            raise ValueError(f"at most {MAX_PLANES} planes")
        v = _DeviceView()
        _set_view(v, fmt, layout, rows, cols)
        keep = []
        for i, p in enumerate(planes):
            if isinstance(p, tuple) and len(p) == 2 and all(isinstance(n, int) for n in p):
                address, nbytes = p
            else:
                a = cuda_array(p, f"plane {i}")
                address, nbytes = a.address, a.nbytes
            if address < 0 or nbytes < 0:
                raise ValueError(f"plane {i}: negative address or length")
            v.plane_addresses[i], v.plane_lengths[i] = address, nbytes
            keep.append(p)
        handle = _LinearP()
        _check(_cuda_linear_prepare_device(ctypes.byref(v), ordinal, ctypes.byref(handle)))
        self = cls.__new__(cls)
        self._adopt(handle, keep, DEVICE_CUDA, ordinal)
        return self

    def workspace_size(self, m: int) -> int:
        """Bytes of device workspace :meth:`forward_device` of ``m`` rows needs (0 for a
        CPU handle and for products that need none)."""
        n = _u64()
        _check(_cuda_linear_workspace_size(self._live(), m, ctypes.byref(n)))
        return n.value

    def forward_device(self, x, y, bias=None, stream=None, workspace=None,
                       bf16: bool = False) -> None:
        """``y = x · Wᵀ (+ bias)`` on the handle's CUDA device, enqueued on ``stream``
        (ninfer_cuda_linear_forward; returns without waiting).

        ``x`` [m, K] and ``y`` [m, N] (or [K] and [N] for m = 1) are device arrays exposing
        ``__cuda_array_interface__`` (torch CUDA tensors, CuPy arrays), C-contiguous. ``x``:
        float32, float16, or bf16; ``y``: float32 or bf16. bf16 travels as 2-byte words
        (``<u2``, ``<i2`` or ``<V2``, e.g. ``t.view(torch.int16)``) with ``bf16=True``.
        ``bias``: None or N float32 values on the device. ``stream``: None (the default
        stream), an address (int), or an object with ``cuda_stream`` (torch) or ``ptr``
        (CuPy). ``workspace``: None (the library allocates in stream order) or a device
        array of at least :meth:`workspace_size` bytes (then nothing is allocated, so the
        call can be captured in a CUDA graph). The arrays must stay alive until the stream
        has run the product. Raises ValueError / TypeError for a missing or non-contiguous
        interface, a wrong dtype or shape, a read-only ``y``; NinferError for the library's
        refusals (UNSUPPORTED on a CPU handle)."""
        xa = cuda_array(x, "x")
        ya = cuda_array(y, "y")
        x_dtype = _cuda_dtype(xa, "x", bf16, (Dtype.F32, Dtype.F16, Dtype.BF16))
        y_dtype = _cuda_dtype(ya, "y", bf16, (Dtype.F32, Dtype.BF16))
        if ya.readonly:
            raise ValueError("y: the array is read-only")
        m, k = _matrix(xa, "x")
        n = self.shape[0]
        if _matrix(ya, "y") != (m, n):
            raise ValueError(f"y: shape {ya.shape}, expected ({m}, {n})")
        b = 0
        if bias is not None:
            ba = cuda_array(bias, "bias")
            _cuda_dtype(ba, "bias", False, (Dtype.F32,))
            if ba.size != n:
                raise ValueError(f"bias: {ba.size} values, expected {n}")
            b = ba.address
        ws, ws_bytes = 0, 0
        if workspace is not None:
            wa = cuda_array(workspace, "workspace")
            ws, ws_bytes = wa.address, wa.nbytes
        _check(_cuda_linear_forward(self._live(), xa.address, x_dtype, m, k, b, ya.address,
                                    y_dtype, _stream(stream), ws, ws_bytes))

    def decode_rows_device(self, first: int, out, stream=None, bf16: bool = False) -> None:
        """Rows ``first .. first + count`` of the weight decoded into the device array
        ``out`` [count, K] (float32, or bf16 words with ``bf16=True``), enqueued on
        ``stream`` (ninfer_cuda_linear_decode_rows; arguments as :meth:`forward_device`)."""
        oa = cuda_array(out, "out")
        dtype = _cuda_dtype(oa, "out", bf16, (Dtype.F32, Dtype.BF16))
        if oa.readonly:
            raise ValueError("out: the array is read-only")
        count, k = _matrix(oa, "out")
        if k != self.shape[1]:
            raise ValueError(f"out: {k} columns, expected K = {self.shape[1]}")
        _check(_cuda_linear_decode_rows(self._live(), first, count, oa.address, dtype,
                                        _stream(stream)))

    def close(self) -> None:
        if getattr(self, "_handle", None):
            _linear_free(self._handle)
            self._handle = _LinearP()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()


def import_gguf(view: WeightView, target: Union[int, str]) -> WeightView:
    """Moves a gguf_q8_0 / gguf_q2_0 view's words into the row_split_k128_v1 planes of
    q8_g32_fp16 / q2_g64_fp16 (no rounding; spec §2 import_encoded)."""
    target = format_lookup(target) if isinstance(target, str) else int(target)
    layout = layout_lookup("row_split_k128_v1")
    rows, cols = view.shape
    planes = [np.zeros(n, dtype=np.uint8) for n in plane_sizes(target, layout, rows, cols)]
    mut = (_MutBytes * MAX_PLANES)()
    for i, p in enumerate(planes):
        mut[i].ptr, mut[i].len = _ptr(p), p.size
    _check(_import_gguf(ctypes.byref(view._view), target, mut))
    return WeightView(target, rows, cols, planes, layout=layout)


_TERNARY_TYPES = {"TQ1_0": (34, 54), "TQ2_0": (35, 66)}


def import_gguf_ternary(ggml_type: Union[int, str], blocks, rows: int, cols: int) -> WeightView:
    """Moves a ternary GGUF tensor into the row_split_k128_v1 planes of t2_g128_fp16 without
    rounding (spec §2 import_encoded).

    ``ggml_type``: ``"TQ1_0"`` / 34 (54-byte blocks) or ``"TQ2_0"`` / 35 (66-byte blocks);
    ``blocks``: the tensor's data as in the GGUF file (uint8, rows × cols / 256 blocks);
    ``cols`` is GGUF's ne[0], a multiple of 256. Each block's binary16 d becomes the scale of
    its two 128-value groups; codes map to -1, 0, +1, so the result decodes to exactly
    gguf-py's / ggml's dequantized values. Raises NinferError (INVALID_ENCODING for a TQ2_0
    word 3 or a NaN/Inf/-0 d or a +0 d over non-zero codes; BAD_SHAPE; SIZE_MISMATCH;
    UNREGISTERED_TYPE)."""
    ty = _TERNARY_TYPES.get(ggml_type, (0, 0))[0] if isinstance(ggml_type, str) else int(ggml_type)
    b = np.ascontiguousarray(blocks, dtype=np.uint8).reshape(-1)
    layout = layout_lookup("row_split_k128_v1")
    target = format_lookup("t2_g128_fp16")
    bb = {34: 54, 35: 66}.get(ty, 0)
    mut = (_MutBytes * MAX_PLANES)()
    if bb == 0 or rows <= 0 or cols <= 0 or cols % 256 or rows * (cols // 256) * bb != b.size:
        # The library names the problem; no plane is sized from an unchecked shape.
        _check(_import_gguf_ternary(ty, _ptr(b), b.size, max(rows, 0), max(cols, 0), mut))
        raise AssertionError("unreachable: the library accepted a mismatched input")
    planes = [np.zeros(n, dtype=np.uint8) for n in plane_sizes(target, layout, rows, cols)]
    for i, p in enumerate(planes):
        mut[i].ptr, mut[i].len = _ptr(p), p.size
    _check(_import_gguf_ternary(ty, _ptr(b), b.size, rows, cols, mut))
    return WeightView(target, rows, cols, planes, layout=layout)


TERNARY_SCALE_RULES = {"divide": 0, "multiply": 1}


def _t2_planes(rows: int, cols: int):
    layout = layout_lookup("row_split_k128_v1")
    target = format_lookup("t2_g128_fp16")
    planes = [np.zeros(n, dtype=np.uint8) for n in plane_sizes(target, layout, rows, cols)]
    return target, layout, planes, _mut_planes(planes)


def import_bitnet_packed(packed, weight_scale: float, rule: str = "divide") -> WeightView:
    """Moves a BitNet b1.58 weight packed as Hugging Face transformers packs it (uint8
    ``[N / 4, K]``: weight row n is the 2-bit field n // (N/4) of packed row n % (N/4),
    holding code + 1) into t2_g128_fp16 planes without rounding.

    ``weight_scale``: the checkpoint's per-tensor scale s; ``rule``: ``"divide"`` (value =
    code / s, transformers' BitLinear) or ``"multiply"`` (code × s). Raises NinferError
    (INVALID_ARGUMENT when the scale word binary16(1/s) or binary16(s) is not exact;
    INVALID_ENCODING for a word 3; BAD_SHAPE when K is not a multiple of 128)."""
    p = np.ascontiguousarray(packed, dtype=np.uint8)
    if p.ndim != 2:
        raise ValueError("packed must be 2-D [N / 4, K]")
    rows, cols = p.shape[0] * 4, p.shape[1]
    if rows == 0 or cols == 0 or cols % 128:
        _check(_import_bitnet_packed(_ptr(p), p.size, rows, cols, float(weight_scale),
                                     TERNARY_SCALE_RULES[rule], (_MutBytes * MAX_PLANES)()))
        raise AssertionError("unreachable: the library accepted a bad shape")
    target, layout, planes, mut = _t2_planes(rows, cols)
    _check(_import_bitnet_packed(_ptr(p), p.size, rows, cols, float(weight_scale),
                                 TERNARY_SCALE_RULES[rule], mut))
    return WeightView(target, rows, cols, planes, layout=layout)


def import_ternary_values(src, weight_scale=None, rule: str = "divide",
                          bf16: bool = False) -> WeightView:
    """Moves a ternary weight stored one word per value (float32, float16, or uint16 bf16
    words with ``bf16=True``) ``[rows, cols]`` into t2_g128_fp16 planes without rounding.

    With ``weight_scale`` the words must be codes -1, 0, +1 and the scale applies by ``rule``
    as in :func:`import_bitnet_packed`; without it every 128-value group must hold only -s,
    0, +s for one s exact in binary16. Raises NinferError otherwise."""
    a, dt = _source(src, bf16)
    rows, cols = a.shape
    has = 0 if weight_scale is None else 1
    s = 0.0 if weight_scale is None else float(weight_scale)
    if rows == 0 or cols == 0 or cols % 128:
        _check(_import_ternary_values(_ptr(a), a.nbytes, dt, rows, cols, has, s,
                                      TERNARY_SCALE_RULES[rule], (_MutBytes * MAX_PLANES)()))
        raise AssertionError("unreachable: the library accepted a bad shape")
    target, layout, planes, mut = _t2_planes(rows, cols)
    _check(_import_ternary_values(_ptr(a), a.nbytes, dt, rows, cols, has, s,
                                  TERNARY_SCALE_RULES[rule], mut))
    return WeightView(target, rows, cols, planes, layout=layout)


def fp8_row_pack(fmt: Union[int, str], codes, scales) -> WeightView:
    """Lays out E4M3FN ``codes`` [rows, cols] (uint8) and 16-bit row ``scales`` [rows]
    (uint16 words: BF16 or binary16 bits) in the planes of an fp8_e4m3fn_row_* format."""
    fmt = format_lookup(fmt) if isinstance(fmt, str) else int(fmt)
    c = np.ascontiguousarray(codes, dtype=np.uint8)
    sc = np.ascontiguousarray(scales, dtype=np.uint16)
    rows, cols = c.shape
    layout = format_info(fmt).layout
    sizes = plane_sizes(fmt, layout, rows, cols)
    p0, p1 = np.zeros(sizes[0], dtype=np.uint8), np.zeros(sizes[1], dtype=np.uint8)
    _check(_fp8_row_pack(fmt, rows, cols, _ptr(c), c.size, _ptr(sc), sc.size,
                         _mut_planes([p0, p1])))
    return WeightView(fmt, rows, cols, [p0, p1], layout=layout)


def fp8_row_unpack(view: WeightView):
    """The logical words of a row-scaled FP8 view: (codes [rows, cols] uint8, scales [rows]
    uint16)."""
    rows, cols = view.shape
    codes = np.zeros((rows, cols), dtype=np.uint8)
    scales = np.zeros(rows, dtype=np.uint16)
    _check(_fp8_row_unpack(ctypes.byref(view._view), _ptr(codes), codes.size, _ptr(scales),
                           scales.size))
    return codes, scales


# ---- CUDA -------------------------------------------------------------------------------


def cuda_compiled() -> bool:
    """True when the loaded library was built with CUDA support (cargo feature ``cuda``,
    CMake ``-DNINFER_CUDA=ON``); says nothing about the machine (:func:`cuda_device_count`)."""
    return bool(_cuda_compiled())


def cuda_device_count() -> int:
    """The number of CUDA devices. Raises NinferError with ``Status.NO_DEVICE`` when the
    library has no CUDA support or the NVIDIA driver is missing (the message says which)."""
    n = _u32()
    _check(_cuda_device_count(ctypes.byref(n)))
    return n.value


@dataclass(frozen=True)
class CudaDeviceInfo:
    """Properties of one CUDA device (ninfer_cuda_device_info)."""

    name: str
    compute_capability: Tuple[int, int]
    total_memory_bytes: int
    multiprocessors: int
    l2_cache_bytes: int
    native_cubin: bool  # the library holds a CUBIN for it (else the PTX is JIT-compiled)


def cuda_device_properties(ordinal: int = 0) -> CudaDeviceInfo:
    """The properties of CUDA device ``ordinal``; NinferError NO_DEVICE as
    :func:`cuda_device_count`, or for an ordinal with no device."""
    info = _CudaDeviceInfo()
    _check(_cuda_device_properties(ordinal, ctypes.byref(info)))
    return CudaDeviceInfo(info.name.decode("utf-8", "replace"),
                          (info.compute_capability_major, info.compute_capability_minor),
                          info.total_memory_bytes, info.multiprocessors, info.l2_cache_bytes,
                          bool(info.native_cubin))


@dataclass(frozen=True)
class CudaArray:
    """A device array as read from its ``__cuda_array_interface__``: address, shape,
    ``typestr`` (e.g. ``<f4``), item size in bytes, read-only flag; ``obj`` keeps the
    owner alive."""

    address: int
    shape: Tuple[int, ...]
    typestr: str
    itemsize: int
    readonly: bool
    obj: object

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize


def cuda_array(obj, what: str = "array") -> CudaArray:
    """Reads ``obj.__cuda_array_interface__`` (versions 0 to 3: ``data``, ``shape``,
    ``typestr``, ``strides``, ``mask``). Raises TypeError when ``obj`` has no interface,
    ValueError for a malformed one, a mask, a big-endian type, or strides that are not
    C-contiguous (``x.contiguous()`` / ``cupy.ascontiguousarray(x)`` first)."""
    try:
        cai = obj.__cuda_array_interface__
    except AttributeError:
        cai = None
    if not isinstance(cai, dict):
        raise TypeError(f"{what}: expected a CUDA device array (an object with "
                        f"__cuda_array_interface__, e.g. a torch CUDA tensor or a CuPy array), "
                        f"got {type(obj).__name__}")
    version = cai.get("version", 0)
    if not isinstance(version, int) or not 0 <= version <= 3:
        raise ValueError(f"{what}: __cuda_array_interface__ version {version!r} (0 to 3 known)")
    try:
        shape = tuple(int(d) for d in cai["shape"])
        typestr = cai["typestr"]
        address, readonly = cai["data"]
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"{what}: malformed __cuda_array_interface__ "
                         f"(shape, typestr, data=(address, readonly)): {e!r}") from None
    if any(d < 0 for d in shape):
        raise ValueError(f"{what}: negative extent in shape {shape}")
    if not isinstance(typestr, str) or len(typestr) < 3 or typestr[0] not in "<>|=" \
            or not typestr[2:].isdigit():
        raise ValueError(f"{what}: malformed typestr {typestr!r}")
    itemsize = int(typestr[2:])
    if typestr[0] == ">" and itemsize > 1:
        raise ValueError(f"{what}: big-endian typestr {typestr!r}")
    if cai.get("mask") is not None:
        raise ValueError(f"{what}: masked arrays are not supported")
    address = 0 if address is None else int(address)
    strides = cai.get("strides")
    if strides is not None:
        strides = tuple(int(s) for s in strides)
        if len(strides) != len(shape):
            raise ValueError(f"{what}: strides {strides} do not match shape {shape}")
        expect = itemsize
        if 0 not in shape:
            for d, s in zip(reversed(shape), reversed(strides)):
                if d != 1 and s != expect:
                    raise ValueError(f"{what}: not C-contiguous (shape {shape}, strides "
                                     f"{strides}); make a contiguous copy first")
                expect *= d
    return CudaArray(address, shape, typestr, itemsize, bool(readonly), obj)


def _cuda_dtype(a: CudaArray, what: str, bf16: bool, allowed) -> Dtype:
    kind = a.typestr[1:]
    if kind == "f4":
        dt = Dtype.F32
    elif kind == "f2":
        dt = Dtype.F16
    elif kind in ("u2", "i2", "V2") and bf16:
        dt = Dtype.BF16
    else:
        dt = None
    if dt not in allowed:
        names = {Dtype.F32: "float32", Dtype.F16: "float16", Dtype.BF16: "bf16 words (bf16=True)"}
        raise ValueError(f"{what}: dtype {a.typestr!r} not accepted "
                         f"({', '.join(names[d] for d in allowed)})")
    return dt


def _matrix(a: CudaArray, what: str) -> Tuple[int, int]:
    if len(a.shape) == 2:
        return a.shape
    if len(a.shape) == 1:
        return 1, a.shape[0]
    raise ValueError(f"{what}: shape {a.shape}, expected 1-D or 2-D")


def _stream(stream) -> Optional[int]:
    if stream is None:
        return None
    if isinstance(stream, int):
        return stream or None
    for attr in ("cuda_stream", "ptr", "handle"):
        h = getattr(stream, attr, None)
        if isinstance(h, int):
            return h or None
    raise TypeError(f"stream: expected None, an address or a stream object "
                    f"(cuda_stream / ptr), got {type(stream).__name__}")
