//! GGUF block formats (the gguf_* rows of spec §1 and the paragraph after §3.4).
//!
//! A gguf_* weight is a row-major [N, K] matrix whose rows are K / block_values consecutive
//! ggml blocks, each the byte image of ggml's `block_*` struct (little-endian fields). The
//! value of every element is what ggml's `dequantize_row_*` computes: every function here
//! reproduces its f32 results bit for bit (tests compare against PyPI `gguf`, an
//! independent implementation). Block facts: `shared/reference/gguf-blocks.md`.

#[cfg(target_arch = "x86_64")]
mod avx2;
pub mod grids;
mod iquants;
mod kquants;
mod legacy;
mod validate;

pub use validate::validate;

use crate::error::{Error, Result};
use crate::registry::{Category, Format};

/// Reads the little-endian binary16 at `b[0..2]` as f32 (exact).
#[inline(always)]
pub(crate) fn f16_at(b: &[u8], at: usize) -> f32 {
    half::f16::from_bits(u16::from_le_bytes([b[at], b[at + 1]])).to_f32()
}

/// One block type's row dequantizer: `blocks` holds whole blocks, `out` their values.
type DequantizeFn = fn(blocks: &[u8], out: &mut [f32]);

fn dequantizer(format: Format) -> Option<DequantizeFn> {
    Some(match format {
        Format::GgufQ8_0 => legacy::dequantize_q8_0,
        Format::GgufQ4_0 => legacy::dequantize_q4_0,
        Format::GgufQ5_0 => legacy::dequantize_q5_0,
        Format::GgufQ2_0 => legacy::dequantize_q2_0,
        Format::GgufQ2_K => kquants::dequantize_q2_k,
        Format::GgufQ3_K => kquants::dequantize_q3_k,
        Format::GgufQ4_K => kquants::dequantize_q4_k,
        Format::GgufQ5_K => kquants::dequantize_q5_k,
        Format::GgufQ6_K => kquants::dequantize_q6_k,
        Format::GgufIq2Xxs => iquants::dequantize_iq2_xxs,
        Format::GgufIq2Xs => iquants::dequantize_iq2_xs,
        Format::GgufIq3Xxs => iquants::dequantize_iq3_xxs,
        Format::GgufIq1S => iquants::dequantize_iq1_s,
        Format::GgufIq4Nl => iquants::dequantize_iq4_nl,
        Format::GgufIq3S => iquants::dequantize_iq3_s,
        Format::GgufIq2S => iquants::dequantize_iq2_s,
        Format::GgufIq4Xs => iquants::dequantize_iq4_xs,
        Format::GgufIq1M => iquants::dequantize_iq1_m,
        _ => return None,
    })
}

/// A dequantization code path. Every path gives bit-identical results; [`dequantize`]
/// picks the fastest one this CPU runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// Portable scalar code (every gguf_* format).
    Scalar,
    /// x86-64 AVX2 (every gguf_* format), when the CPU has it.
    Avx2,
}

fn kernel_fn(format: Format, kernel: Kernel) -> Option<DequantizeFn> {
    match kernel {
        Kernel::Scalar => dequantizer(format),
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx2 => avx2::dequantizer(format),
        #[cfg(not(target_arch = "x86_64"))]
        Kernel::Avx2 => None,
    }
}

/// The kernel [`dequantize`] uses for `format` on this CPU.
pub fn best_kernel(format: Format) -> Kernel {
    if kernel_fn(format, Kernel::Avx2).is_some() {
        Kernel::Avx2
    } else {
        Kernel::Scalar
    }
}

/// Whether this build decodes `format` (a gguf_* format).
pub fn is_decodable(format: Format) -> bool {
    dequantizer(format).is_some()
}

/// Dequantizes whole blocks of a gguf_* format into f32, bit-exactly as ggml, with the
/// fastest [`Kernel`] this CPU runs.
///
/// `blocks.len()` must be `out.len() / block_values * block_bytes` and `out.len()` a
/// multiple of block_values (the view guarantees both). Decoding is a pure function of the
/// bytes: NaN/Inf scale fields decode as ggml would; `validate` reports them.
pub fn dequantize(format: Format, blocks: &[u8], out: &mut [f32]) -> Result<()> {
    dequantize_with(best_kernel(format), format, blocks, out)
}

/// [`dequantize`] on a chosen code path (for tests and benchmarks).
///
/// Errors: [`Error::Unsupported`] when `kernel` does not handle `format` or the CPU lacks
/// it; [`Error::Internal`] for a non-GGUF format or inconsistent lengths.
pub fn dequantize_with(
    kernel: Kernel,
    format: Format,
    blocks: &[u8],
    out: &mut [f32],
) -> Result<()> {
    let info = format.info();
    if info.category != Category::GgufBlock {
        return Err(Error::Internal(format!("{format} is not a GGUF format")));
    }
    let (bv, bb) = (info.block_values as usize, info.block_bytes as usize);
    if out.len() % bv != 0 || blocks.len() != out.len() / bv * bb {
        return Err(Error::Internal(format!(
            "{format}: {} bytes for {} values",
            blocks.len(),
            out.len()
        )));
    }
    let f = kernel_fn(format, kernel).ok_or_else(|| {
        Error::Unsupported(format!("no {kernel:?} kernel for {format} on this CPU"))
    })?;
    f(blocks, out);
    Ok(())
}
