//! Element types of dense (non-persistent) buffers: decode outputs, encoder sources,
//! activations (C: `ninfer_dtype`, a `uint32_t`).

use crate::error::{Error, Result};

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

    /// Lower-case name: `f32`, `bf16`, `f16`.
    pub fn name(self) -> &'static str {
        match self {
            Dtype::F32 => "f32",
            Dtype::Bf16 => "bf16",
            Dtype::F16 => "f16",
        }
    }
}
