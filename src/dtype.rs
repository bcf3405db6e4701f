//! Element types of dense (non-persistent) buffers: decode outputs, encoder sources,
//! activations (C: `ninfer_dtype`, a `uint32_t`).

use crate::error::{Error, Result, mul};

/// A dense element type. Numbers are part of the ABI (append-only).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dtype {
    /// IEEE-754 binary32, native endianness.
    F32 = 0,
    /// bfloat16 (the high half of a binary32), native endianness.
    Bf16 = 1,
    /// IEEE-754 binary16, native endianness.
    F16 = 2,
}

impl Dtype {
    /// The dtype with this number, or [`Error::UnknownDtype`].
    pub fn from_u32(v: u32) -> Result<Dtype> {
        match v {
            0 => Ok(Dtype::F32),
            1 => Ok(Dtype::Bf16),
            2 => Ok(Dtype::F16),
            _ => Err(Error::UnknownDtype(v)),
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Dtype::F32 => 4,
            Dtype::Bf16 | Dtype::F16 => 2,
        }
    }

    /// The element count of a dense row-major `rows × cols` source given as `src_bytes`
    /// bytes of this dtype (the C encoders' `src_bytes`).
    ///
    /// The length is checked in bytes, so the message states bytes: `src_bytes` must be
    /// exactly `rows × cols × size()`. With a zero dimension the count is returned as is
    /// (when whole) for the encoder to report [`Error::BadShape`].
    ///
    /// Errors: [`Error::SizeMismatch`] (plane `"source"`, unit bytes), [`Error::Overflow`].
    pub fn source_len(self, rows: usize, cols: usize, src_bytes: usize) -> Result<usize> {
        let size = self.size();
        let expected = match rows == 0 || cols == 0 {
            true if src_bytes.is_multiple_of(size) => return Ok(src_bytes / size),
            true => 0,
            false => mul(mul(rows, cols, "rows × cols")?, size, "source bytes")?,
        };
        if src_bytes != expected {
            return Err(Error::SizeMismatch {
                unit: "bytes",
                plane: "source",
                expected,
                actual: src_bytes,
            });
        }
        Ok(expected / size)
    }

    /// Lower-case name: `f32`, `bf16`, `f16`.
    pub fn name(self) -> &'static str {
        match self {
            Dtype::F32 => "f32",
            Dtype::Bf16 => "bf16",
            Dtype::F16 => "f16",
        }
    }
}
