//! [`FloatSource`]: the dense floating-point matrix an encoder quantizes.

use crate::dtype::Dtype;
use crate::error::{Error, Result, mul};

/// A row-major `rows × cols` source matrix for an encoder, in one of the dense dtypes. The
/// 16-bit variants hold raw words (native endianness), so any bit pattern can be passed;
/// every finite word has an exact binary32 value.
#[derive(Clone, Copy, Debug)]
pub enum FloatSource<'a> {
    /// binary32 values.
    F32(&'a [f32]),
    /// bfloat16 words.
    Bf16(&'a [u16]),
    /// binary16 words.
    F16(&'a [u16]),
}

impl<'a> FloatSource<'a> {
    /// Element count.
    pub fn len(&self) -> usize {
        match self {
            FloatSource::F32(s) => s.len(),
            FloatSource::Bf16(s) | FloatSource::F16(s) => s.len(),
        }
    }

    /// Whether the source is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The dtype.
    pub fn dtype(&self) -> Dtype {
        match self {
            FloatSource::F32(_) => Dtype::F32,
            FloatSource::Bf16(_) => Dtype::Bf16,
            FloatSource::F16(_) => Dtype::F16,
        }
    }

    /// The exact binary32 value of element `i` (16-bit words expand exactly).
    #[inline]
    pub fn get(&self, i: usize) -> f32 {
        match self {
            FloatSource::F32(s) => s[i],
            FloatSource::Bf16(s) => f32::from_bits((s[i] as u32) << 16),
            FloatSource::F16(s) => half::f16::from_bits(s[i]).to_f32(),
        }
    }

    /// Writes the exact binary32 values of elements `start .. start + out.len()` to `out`
    /// (one tight loop per dtype, for the encoders' per-row scratch buffers).
    pub fn read_into(&self, start: usize, out: &mut [f32]) {
        let n = out.len();
        match self {
            FloatSource::F32(s) => out.copy_from_slice(&s[start..start + n]),
            FloatSource::Bf16(s) => {
                for (o, &w) in out.iter_mut().zip(&s[start..start + n]) {
                    *o = f32::from_bits((w as u32) << 16);
                }
            }
            FloatSource::F16(s) => {
                for (o, &w) in out.iter_mut().zip(&s[start..start + n]) {
                    *o = half::f16::from_bits(w).to_f32();
                }
            }
        }
    }

    /// Row `r` (of `cols` values) as binary32: borrowed for f32, widened exactly into `buf`
    /// (at least `cols` long) for bf16 and binary16.
    pub fn row<'b>(&'b self, r: usize, cols: usize, buf: &'b mut [f32]) -> &'b [f32] {
        match self {
            FloatSource::F32(s) => &s[r * cols..(r + 1) * cols],
            _ => {
                let buf = &mut buf[..cols];
                self.read_into(r * cols, buf);
                buf
            }
        }
    }

    /// The sub-range `start .. start + len` of the elements.
    pub fn slice(&self, start: usize, len: usize) -> FloatSource<'a> {
        match *self {
            FloatSource::F32(s) => FloatSource::F32(&s[start..start + len]),
            FloatSource::Bf16(s) => FloatSource::Bf16(&s[start..start + len]),
            FloatSource::F16(s) => FloatSource::F16(&s[start..start + len]),
        }
    }

    /// Checks that the source holds exactly `rows × cols` elements, both positive.
    ///
    /// Errors: [`Error::BadShape`], [`Error::SizeMismatch`] (plane `"source"`, counted in
    /// elements), [`Error::Overflow`].
    pub fn check_shape(&self, rows: usize, cols: usize) -> Result<()> {
        if rows == 0 || cols == 0 {
            return Err(Error::BadShape(format!(
                "shape [{rows}, {cols}]: both dimensions must be positive"
            )));
        }
        let n = mul(rows, cols, "rows × K")?;
        if self.len() != n {
            return Err(Error::SizeMismatch {
                unit: "values",
                plane: "source",
                expected: n,
                actual: self.len(),
            });
        }
        Ok(())
    }
}
