"""ctypes binding of libninfer: format registry lookups and row decoding over numpy arrays.

The shared library is found, in order, at ``$NINFER_LIBRARY`` (a path), through the
system loader (``libninfer.so.0``: an installed library, or ``LD_LIBRARY_PATH``), or in
the source tree's ``target/release``. Every failing call raises :class:`NinferError`
carrying the :class:`Status` and the library's message, read on the calling thread right
after the call. Byte planes and output arrays are passed to C without copies.

Quantize and linear wrappers join when the C API exports them (see ``_declare``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import enum
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence, Tuple, Union

import numpy as np

__all__ = [
    "NinferError", "Status", "Dtype", "FormatInfo", "WeightView", "version", "abi_version",
    "format_count", "format_names", "format_lookup", "format_name", "format_from_ggml_type",
    "format_info", "layout_count", "layout_names", "layout_lookup", "layout_name",
    "format_layout_compatible", "plane_sizes", "library_path", "MAX_PLANES",
]

MAX_PLANES = 3
ABI_VERSION = 0  # the SONAME number this binding is written for


def _candidates():
    env = os.environ.get("NINFER_LIBRARY")
    if env:
        yield env
        return
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


_u32, _u64, _sz = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_size_t
_P = ctypes.POINTER


def _declare(name, restype, *argtypes):
    fn = getattr(_lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)
    return fn


# One line per export: adding quantize / linear later is a declaration plus a wrapper.
_version = _declare("ninfer_version", ctypes.c_char_p)
_abi_version = _declare("ninfer_abi_version", _u32)
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


_DTYPE_NUMPY = {Dtype.F32: np.float32, Dtype.BF16: np.uint16, Dtype.F16: np.float16}


class NinferError(Exception):
    """A failed call: ``status`` (a :class:`Status`) and the library's ``message``."""

    def __init__(self, status: int, message: str):
        try:
            status = Status(status)
        except ValueError:
            pass
        self.status = status
        self.message = message
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


def version() -> str:
    """The library's version string."""
    return _version().decode()


def abi_version() -> int:
    return _abi_version()


def format_count() -> int:
    return _format_count()


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
        v.format, v.layout, v.rows, v.cols = fmt, layout, rows, cols
        for i, p in enumerate(self._planes):
            v.planes[i].ptr = p.ctypes.data if p.size else None
            v.planes[i].len = p.size
        self._view = v

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

    def decode(self) -> np.ndarray:
        """All rows as a [rows, cols] float32 array."""
        self.check()
        rows, cols = self.shape
        out = np.empty((rows, cols), dtype=np.float32)
        for r in range(rows):
            self.decode_row(r, out[r])
        return out
