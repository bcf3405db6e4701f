//! CPU kernels of `linear`: per-family dot products, each with a portable scalar reference
//! and an AVX2+FMA+F16C path that returns the same bits (the evaluation order is fixed per
//! family and written down next to each kernel; docs/linear.md).
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

/// The instruction set a prepared weight runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Isa {
    /// Portable Rust: the reference order every other path reproduces bit for bit.
    Scalar,
    /// x86-64 AVX2 + FMA + F16C (detected at run time).
    Avx2,
}

impl Isa {
    /// Every instruction set of this build, the portable reference first ([`Isa::available`]
    /// says which this machine runs); a new variant is added here too.
    pub const ALL: &'static [Isa] = &[Isa::Scalar, Isa::Avx2];

    /// The best instruction set of this machine.
    pub fn detect() -> Isa {
        if Isa::Avx2.available() {
            Isa::Avx2
        } else {
            Isa::Scalar
        }
    }

    /// Whether this machine can run `self`.
    pub fn available(self) -> bool {
        match self {
            Isa::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => {
                is_x86_feature_detected!("avx2")
                    && is_x86_feature_detected!("fma")
                    && is_x86_feature_detected!("f16c")
            }
            #[cfg(not(target_arch = "x86_64"))]
            Isa::Avx2 => false,
        }
    }

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Avx2 => "avx2",
        }
    }
}

/// Sums eight lanes in the fixed tree every kernel uses: `t[i] = a[i] + a[i+4]`,
/// `u[i] = t[i] + t[i+2]`, `u[0] + u[1]` (the order of AVX2's 256 → 128 → 64 → 32 halving).
#[inline]
pub(crate) fn tree8(a: [f32; 8]) -> f32 {
    let t = [a[0] + a[4], a[1] + a[5], a[2] + a[6], a[3] + a[7]];
    let u = [t[0] + t[2], t[1] + t[3]];
    u[0] + u[1]
}
