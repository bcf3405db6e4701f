//! CPU kernels of `linear`: per-family dot products, each with a portable scalar reference
//! and x86 paths that return the same bits on every tier of [`Isa`] (the evaluation order is
//! fixed per family and written down next to each kernel; docs/linear.md).
//!
//! - [`float`] (AVX2: `float_avx2`): bf16 / fp32 words, grouped codes, E4M3FN and nvfp4
//!   codes read in place (and any decodable format, through a decoded f32 row) against f32
//!   activations.
//! - [`gguf`]: which family kernel a gguf_* block type runs on, all against q8_1
//!   activations: [`legacy`] (Q8_0, Q4_0, Q5_0, Q2_0, IQ4_NL, IQ4_XS), [`kquants`]
//!   (Q2_K..Q6_K), [`iquants`] (IQ1/IQ2/IQ3 grid types).
//! - [`grouped_q8`] (AVX2: `grouped_q8_avx2`): the grouped formats against q8_1 activations
//!   (the opt-in `Activation::Q8_1` profile).
//! - [`nvfp4_q8`] (AVX2: `nvfp4_q8_avx2`): nvfp4 against q8_1 activations (the same opt-in
//!   profile).

pub(crate) mod engine;
pub(crate) mod float;
#[cfg(target_arch = "x86_64")]
mod float_avx2;
pub(crate) mod gguf;
pub(crate) mod grouped_q8;
#[cfg(target_arch = "x86_64")]
mod grouped_q8_avx2;
pub(crate) mod iquants;
#[cfg(target_arch = "x86_64")]
mod iquants_avx2;
pub(crate) mod kquants;
#[cfg(target_arch = "x86_64")]
mod kquants_avx2;
pub(crate) mod legacy;
#[cfg(target_arch = "x86_64")]
mod legacy_avx2;
pub(crate) mod nvfp4_q8;
#[cfg(target_arch = "x86_64")]
mod nvfp4_q8_avx2;
#[cfg(test)]
mod tests;

pub use crate::isa::Isa;

/// Lane i of a chunk's vectors holds block `P[i]` of the chunk: what three `vphaddd` of
/// four block-pair vectors leave (the x86 legacy and grouped kernels).
#[cfg(target_arch = "x86_64")]
const P: [i32; 8] = [0, 2, 4, 6, 1, 3, 5, 7];
/// The inverse of [`P`]: block c of the chunk is lane `PINV[c]`.
#[cfg(target_arch = "x86_64")]
const PINV: [i32; 8] = [0, 4, 1, 5, 2, 6, 3, 7];

/// Sums eight lanes in the fixed tree every kernel uses: `t[i] = a[i] + a[i+4]`,
/// `u[i] = t[i] + t[i+2]`, `u[0] + u[1]` (the order of AVX2's 256 → 128 → 64 → 32 halving).
#[inline]
pub(crate) fn tree8(a: [f32; 8]) -> f32 {
    let t = [a[0] + a[4], a[1] + a[5], a[2] + a[6], a[3] + a[7]];
    let u = [t[0] + t[2], t[1] + t[3]];
    u[0] + u[1]
}
