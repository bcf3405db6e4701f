//! One error type for the whole library, and the C status each error maps to.
//!
//! Every fallible operation returns [`Result`]. The C boundary (`crate::ffi`) turns an
//! [`Error`] into its [`Status`] number and keeps the formatted message in a thread-local
//! slot read by `ninfer_last_error_message`.

/// Status codes of the C API (`ninfer_status`).
///
/// The numbers are part of the ABI: they are explicit, append-only and never reused.
/// `NINFER_STATUS_OK` (0) is success; every other value is an error whose detail is
/// available from `ninfer_last_error_message` on the same thread.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// Success.
    Ok = 0,
    /// A required pointer was NULL, or a `(ptr, len)` pair had a NULL pointer and a
    /// non-zero length.
    NullPointer = 1,
    /// A pointer was not aligned for the element type it carries (e.g. `float *`).
    Misaligned = 2,
    /// An argument has a value the function does not accept (e.g. zero rows).
    InvalidArgument = 3,
    /// The format name or number is not in the closed registry.
    UnknownFormat = 4,
    /// The layout name or number is not in the layout registry.
    UnknownLayout = 5,
    /// The format and layout are both known, but the pair is not a registered combination.
    IncompatibleLayout = 6,
    /// A ggml type id that names no registered format (F16, Q4_1, TQ1_0, MXFP4, ...).
    UnregisteredType = 7,
    /// The logical shape is not legal for the format (e.g. K not a multiple of the GGUF
    /// block's value count).
    BadShape = 8,
    /// A plane's byte length differs from the length the layout computes from
    /// (format, rows, K).
    SizeMismatch = 9,
    /// A size computation (rows × K, bytes, ...) overflows `size_t` / `isize::MAX`.
    Overflow = 10,
    /// A row index is not below the view's row count.
    RowOutOfRange = 11,
    /// An entry of a gather index list is not below the view's row count.
    IndexOutOfRange = 12,
    /// A caller-provided output buffer is shorter than the result.
    BufferTooSmall = 13,
    /// The format/layout pair is registered, but this operation is not implemented for it
    /// (or not on this device). Never a wrong value: the call fails without writing.
    Unsupported = 14,
    /// The payload breaks a rule of its format (a NaN or infinite scale, an illegal code,
    /// non-canonical padding, ...). The message names the row and block or group.
    InvalidEncoding = 15,
    /// An encoder was given a non-finite source value.
    NonFiniteSource = 16,
    /// An encoder's scale would round to infinity in its storage type.
    ScaleOverflow = 17,
    /// A dtype number is not one the function accepts.
    UnknownDtype = 18,
    /// A bug inside the library (a caught panic). Outputs are unspecified; please report it.
    Internal = 19,
    /// A CUDA entry point found no usable GPU: this build has no CUDA support, the NVIDIA
    /// driver (`libcuda.so`) is not installed, or it reports no device at that ordinal. The
    /// message says which. Never a crash: the CPU functions keep working.
    NoDevice = 20,
    /// A CUDA driver call failed; the message names the CUDA error (e.g.
    /// `CUDA_ERROR_OUT_OF_MEMORY`) and the call. Device outputs are unspecified.
    Cuda = 21,
    /// Memory for a temporary could not be allocated (the allocator refused it, e.g. under
    /// a memory limit). The message names the buffer and its size in bytes. Never an abort:
    /// the process keeps running, and the call's outputs are as its documentation says for
    /// errors (untouched unless stated otherwise).
    OutOfMemory = 22,
}

impl Status {
    /// Every status, in numeric order.
    /// cbindgen:ignore
    pub const ALL: [Status; 23] = [
        Status::Ok,
        Status::NullPointer,
        Status::Misaligned,
        Status::InvalidArgument,
        Status::UnknownFormat,
        Status::UnknownLayout,
        Status::IncompatibleLayout,
        Status::UnregisteredType,
        Status::BadShape,
        Status::SizeMismatch,
        Status::Overflow,
        Status::RowOutOfRange,
        Status::IndexOutOfRange,
        Status::BufferTooSmall,
        Status::Unsupported,
        Status::InvalidEncoding,
        Status::NonFiniteSource,
        Status::ScaleOverflow,
        Status::UnknownDtype,
        Status::Internal,
        Status::NoDevice,
        Status::Cuda,
        Status::OutOfMemory,
    ];

    /// The status for a raw number, if there is one.
    pub fn from_u32(v: u32) -> Option<Status> {
        Status::ALL.get(v as usize).copied()
    }

    /// The constant's name without its prefix, e.g. `"SIZE_MISMATCH"`.
    pub fn name(self) -> &'static str {
        self.cname().to_str().unwrap_or("?")
    }

    /// The same name as a NUL-terminated C string.
    pub fn cname(self) -> &'static std::ffi::CStr {
        match self {
            Status::Ok => c"OK",
            Status::NullPointer => c"NULL_POINTER",
            Status::Misaligned => c"MISALIGNED",
            Status::InvalidArgument => c"INVALID_ARGUMENT",
            Status::UnknownFormat => c"UNKNOWN_FORMAT",
            Status::UnknownLayout => c"UNKNOWN_LAYOUT",
            Status::IncompatibleLayout => c"INCOMPATIBLE_LAYOUT",
            Status::UnregisteredType => c"UNREGISTERED_TYPE",
            Status::BadShape => c"BAD_SHAPE",
            Status::SizeMismatch => c"SIZE_MISMATCH",
            Status::Overflow => c"OVERFLOW",
            Status::RowOutOfRange => c"ROW_OUT_OF_RANGE",
            Status::IndexOutOfRange => c"INDEX_OUT_OF_RANGE",
            Status::BufferTooSmall => c"BUFFER_TOO_SMALL",
            Status::Unsupported => c"UNSUPPORTED",
            Status::InvalidEncoding => c"INVALID_ENCODING",
            Status::NonFiniteSource => c"NON_FINITE_SOURCE",
            Status::ScaleOverflow => c"SCALE_OVERFLOW",
            Status::UnknownDtype => c"UNKNOWN_DTYPE",
            Status::Internal => c"INTERNAL",
            Status::NoDevice => c"NO_DEVICE",
            Status::Cuda => c"CUDA",
            Status::OutOfMemory => c"OUT_OF_MEMORY",
        }
    }
}

/// Where in a payload an encoding rule was broken: row and block (or group) index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Location {
    /// Logical row; [`Location::NONE`] for layout padding that belongs to no logical row
    /// (e.g. the padding rows and K-blocks of nvfp4's swizzled scale plane).
    pub row: u64,
    /// Block (GGUF), group (grouped formats) or K-block (nvfp4) index within the row;
    /// [`Location::NONE`] when the rule concerns a field that is not per block: a row
    /// scale (fp8 row formats), a per-matrix field (an nvfp4 weight divisor, reported at
    /// the first row of its source) or layout padding.
    pub block: u64,
}

impl Location {
    /// The "no row" / "no block" value of [`Location::row`] and [`Location::block`]
    /// (`UINT64_MAX` in C).
    /// cbindgen:ignore
    pub const NONE: u64 = u64::MAX;
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.row, self.block) {
            (Location::NONE, _) => write!(f, "layout padding (no logical row)"),
            (row, Location::NONE) => write!(f, "row {row} (a row or matrix field, no block)"),
            (row, block) => write!(f, "row {row}, block {block}"),
        }
    }
}

/// The position part of an [`Error::ScaleOverflow`] message.
fn scale_position(row: u64, group: u64) -> String {
    match group {
        Location::NONE => format!("row {row} (a row or matrix scale, no group)"),
        group => format!("row {row}, group {group}"),
    }
}

/// The library's error. Each variant maps to exactly one [`Status`].
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Error {
    /// A required pointer (a handle, an out-pointer, a string) is NULL.
    #[error("{0} is NULL")]
    NullPointer(&'static str),
    /// A buffer's pointer is NULL while its length is not zero.
    #[error("{0} is NULL but its length is non-zero")]
    NullWithLength(&'static str),
    #[error("{0} is not aligned to {1} bytes")]
    Misaligned(&'static str, usize),
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    #[error(
        "unknown format {0:?}: formats are looked up by exact canonical name (see `ninfer formats`)"
    )]
    UnknownFormat(String),
    /// A format number that names no registered format.
    #[error("unknown format number {0}: formats are numbered 0 to {n} (`ninfer_format_count`)", n = .1 - 1)]
    UnknownFormatNumber(u32, usize),
    #[error("unknown layout {0:?}")]
    UnknownLayout(String),
    /// A layout number that names no registered layout.
    #[error("unknown layout number {0}: layouts are numbered 0 to {n}", n = .1 - 1)]
    UnknownLayoutNumber(u32, usize),
    #[error("format {format} cannot be stored in layout {layout}")]
    IncompatibleLayout {
        format: &'static str,
        layout: &'static str,
    },
    #[error("ggml type {name} ({id}) {why}")]
    UnregisteredType {
        id: u32,
        name: String,
        /// What the call takes instead, e.g. "has no registered format".
        why: &'static str,
    },
    #[error("bad shape: {0}")]
    BadShape(String),
    #[error("{plane}: {actual} {unit} given, {expected} {unit} expected")]
    SizeMismatch {
        /// The buffer or plane.
        plane: &'static str,
        /// What `expected` and `actual` count: `"bytes"` for planes and C byte lengths,
        /// else the element (`"values"`, `"codes"`, `"scale words"`).
        unit: &'static str,
        expected: usize,
        actual: usize,
    },
    #[error("size overflow: {0}")]
    Overflow(String),
    #[error("row {row} out of range (rows = {rows})")]
    RowOutOfRange { row: u64, rows: u64 },
    /// The exclusive end of a row range (`n1`) is beyond the row count.
    #[error("n1 = {end} is beyond N = {rows} (n1 is an exclusive end: at most N)")]
    RangeEndOutOfRange { end: u64, rows: u64 },
    #[error("index list entry {position} = {index} out of range (rows = {rows})")]
    IndexOutOfRange {
        position: usize,
        index: u64,
        rows: u64,
    },
    #[error("{what}: buffer holds {actual}, {needed} needed")]
    BufferTooSmall {
        what: &'static str,
        needed: usize,
        actual: usize,
    },
    #[error("unsupported: {0}")]
    Unsupported(String),
    #[error("invalid encoding at {at}: {reason}")]
    InvalidEncoding { at: Location, reason: String },
    #[error("non-finite source value at row {row}, column {col}")]
    NonFiniteSource { row: u64, col: u64 },
    #[error("scale overflows its storage type at {}", scale_position(*.row, *.group))]
    ScaleOverflow { row: u64, group: u64 },
    #[error("unknown dtype {0}")]
    UnknownDtype(u32),
    #[error("internal error: {0}")]
    Internal(String),
    #[error("no CUDA device: {0}")]
    NoDevice(String),
    #[error("CUDA: {0}")]
    Cuda(String),
    #[error("out of memory: {0}")]
    OutOfMemory(String),
}

impl Error {
    /// The C status this error is reported as.
    pub fn status(&self) -> Status {
        match self {
            Error::NullPointer(_) | Error::NullWithLength(_) => Status::NullPointer,
            Error::Misaligned(..) => Status::Misaligned,
            Error::InvalidArgument(_) => Status::InvalidArgument,
            Error::UnknownFormat(_) | Error::UnknownFormatNumber(..) => Status::UnknownFormat,
            Error::UnknownLayout(_) | Error::UnknownLayoutNumber(..) => Status::UnknownLayout,
            Error::IncompatibleLayout { .. } => Status::IncompatibleLayout,
            Error::UnregisteredType { .. } => Status::UnregisteredType,
            Error::BadShape(_) => Status::BadShape,
            Error::SizeMismatch { .. } => Status::SizeMismatch,
            Error::Overflow(_) => Status::Overflow,
            Error::RowOutOfRange { .. } | Error::RangeEndOutOfRange { .. } => Status::RowOutOfRange,
            Error::IndexOutOfRange { .. } => Status::IndexOutOfRange,
            Error::BufferTooSmall { .. } => Status::BufferTooSmall,
            Error::Unsupported(_) => Status::Unsupported,
            Error::InvalidEncoding { .. } => Status::InvalidEncoding,
            Error::NonFiniteSource { .. } => Status::NonFiniteSource,
            Error::ScaleOverflow { .. } => Status::ScaleOverflow,
            Error::UnknownDtype(_) => Status::UnknownDtype,
            Error::Internal(_) => Status::Internal,
            Error::NoDevice(_) => Status::NoDevice,
            Error::Cuda(_) => Status::Cuda,
            Error::OutOfMemory(_) => Status::OutOfMemory,
        }
    }

    /// Shorthand for an [`Error::InvalidEncoding`].
    pub fn encoding(row: u64, block: u64, reason: impl Into<String>) -> Error {
        Error::InvalidEncoding {
            at: Location { row, block },
            reason: reason.into(),
        }
    }
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `a * b` or an [`Error::Overflow`] naming what was being computed.
pub(crate) fn mul(a: usize, b: usize, what: &str) -> Result<usize> {
    a.checked_mul(b)
        .filter(|&v| v <= isize::MAX as usize)
        .ok_or_else(|| Error::Overflow(format!("{what}: {a} × {b}")))
}

/// An empty vector with room for `len` elements, allocated fallibly: an
/// [`Error::OutOfMemory`] naming `what` and the bytes when the allocator refuses.
pub(crate) fn try_vec<T>(len: usize, what: &str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    try_grow(&mut v, len, what)?;
    Ok(v)
}

/// `v` holding `len` copies of `fill` (its first elements overwritten), allocated fallibly
/// (see [`try_vec`]).
pub(crate) fn try_filled<T: Clone>(len: usize, fill: T, what: &str) -> Result<Vec<T>> {
    let mut v = try_vec(len, what)?;
    v.resize(len, fill);
    Ok(v)
}

/// Makes room in `v` for `len` elements in all (no-op when it has it), fallibly (see
/// [`try_vec`]).
pub(crate) fn try_grow<T>(v: &mut Vec<T>, len: usize, what: &str) -> Result<()> {
    v.try_reserve_exact(len.saturating_sub(v.len()))
        .map_err(|_| oom(what, len, size_of::<T>()))
}

/// The [`Error::OutOfMemory`] of `len` elements of `size` bytes for `what`.
pub(crate) fn oom(what: &str, len: usize, size: usize) -> Error {
    match len.checked_mul(size) {
        Some(bytes) => Error::OutOfMemory(format!(
            "{what}: {bytes} bytes ({len} × {size}) could not be allocated"
        )),
        None => Error::OutOfMemory(format!(
            "{what}: {len} elements of {size} bytes could not be allocated"
        )),
    }
}

/// `u64` to `usize`, or an [`Error::Overflow`].
pub(crate) fn to_usize(v: u64, what: &str) -> Result<usize> {
    usize::try_from(v)
        .ok()
        .filter(|&v| v <= isize::MAX as usize)
        .ok_or_else(|| Error::Overflow(format!("{what} = {v} does not fit in memory")))
}
