//! Which kernel family computes a product: one table from (format, layout, activation
//! profile) to a [`Family`], the same for every device. [`super::supported`],
//! [`super::supported_activation`], [`super::PreparedWeight::new`] and
//! [`super::PreparedWeight::set_activation`] all read it; a backend (CPU, CUDA) then says
//! which families it runs ([`super::Device`]).

use super::Activation;
use crate::decode;
use crate::error::{Error, Result};
use crate::registry::{Category, Format, Layout, check_compatible};

/// A kernel family: what a product reads and how it multiplies (docs/linear.md, "Compute
/// profile per format family"). Device-neutral: each backend maps a family to its kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Family {
    /// bf16 / fp32 words read in place, x exact.
    Direct,
    /// q2/t2/q4/q5/q6/q8 codes and binary16 scales read in place (row_split_k128_v1), x
    /// exact.
    Grouped,
    /// fp8_e4m3fn_row_* codes and the row multiplier read in place, x exact.
    Fp8Row,
    /// nvfp4 codes, swizzled block scales and the divisor read in place, x exact.
    Nvfp4,
    /// gguf_* blocks against q8_1 activations (the spec's GGUF product).
    Gguf,
    /// A grouped format against q8_1 activations (the opt-in profile).
    GroupedQ8,
    /// nvfp4 against q8_1 activations (the opt-in profile).
    Nvfp4Q8,
    /// A GGUF k-quant or 256-value i-quant against q8_K activations (the opt-in profile).
    GgufQ8K,
    /// Any other decodable format: rows decoded to f32, x exact.
    Decoded,
}

/// A product's plan: the weight's format and layout, the activation profile and the kernel
/// family the table assigns them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    pub(crate) format: Format,
    pub(crate) layout: Layout,
    pub(crate) activation: Activation,
    pub(crate) family: Family,
}

impl Plan {
    /// The plan of a weight of `format` in `layout` under its default activation profile
    /// (q8_1 for gguf_*, exact for every other format). Errors: the pair's
    /// [`check_compatible`] error, [`Error::Unsupported`] when no family computes it.
    pub(crate) fn new(format: Format, layout: Layout) -> Result<Plan> {
        let activation = match format.info().category {
            Category::GgufBlock => Activation::Q8_1,
            _ => Activation::Exact,
        };
        Plan::with(format, layout, activation)
    }

    /// The plan for `activation` (the one table). Errors as [`Plan::new`], with a message
    /// that says why the profile is refused.
    pub(crate) fn with(format: Format, layout: Layout, activation: Activation) -> Result<Plan> {
        check_compatible(format, layout)?;
        let category = format.info().category;
        let decodable = decode::is_decodable_format(format);
        let family = match (category, activation) {
            (Category::GgufBlock, Activation::Q8_1) if decodable => Family::Gguf,
            (Category::GgufBlock, Activation::Q8K) if q8k_format(format) => Family::GgufQ8K,
            (_, Activation::Q8K) => {
                return Err(Error::Unsupported(format!(
                    "linear: no q8_K-activation kernel for {format} in {layout} (q8_K is for \
                     the GGUF k-quants Q2_K..Q6_K and the 256-value i-quants IQ4_XS, IQ1_S, \
                     IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S)"
                )));
            }
            (Category::GgufBlock, Activation::Exact) => {
                return Err(Error::Unsupported(format!(
                    "linear: {format} has no exact-activation profile (spec, paragraph after \
                     §3.4: a GGUF product quantizes x, to q8_1 blocks by default or to q8_K blocks \
                     for the k-quants and 256-value i-quants)"
                )));
            }
            (Category::DirectFloat, Activation::Exact) => Family::Direct,
            (Category::GroupedInt, Activation::Exact) if layout == Layout::RowSplitK128_V1 => {
                Family::Grouped
            }
            (Category::GroupedInt, Activation::Q8_1) if layout == Layout::RowSplitK128_V1 => {
                Family::GroupedQ8
            }
            (Category::RowScaledFloat, Activation::Exact) => Family::Fp8Row,
            (Category::BlockScaledFloat, Activation::Exact)
                if layout == Layout::BlockScaleK16_M128x4_V1 =>
            {
                Family::Nvfp4
            }
            (Category::BlockScaledFloat, Activation::Q8_1)
                if layout == Layout::BlockScaleK16_M128x4_V1 =>
            {
                Family::Nvfp4Q8
            }
            (_, Activation::Exact) if decodable => Family::Decoded,
            (_, Activation::Q8_1) if decodable => {
                return Err(Error::Unsupported(format!(
                    "linear: no q8_1-activation kernel for {format} in {layout} in this build"
                )));
            }
            _ => {
                return Err(Error::Unsupported(format!(
                    "linear: no kernel for {format} in {layout} in this build"
                )));
            }
        };
        Ok(Plan {
            format,
            layout,
            activation,
            family,
        })
    }

    /// Whether the activation is quantized to q8_1 blocks before the product (q8_K is not
    /// q8_1: see [`Family::GgufQ8K`]).
    pub(crate) fn quantizes_x(&self) -> bool {
        self.activation == Activation::Q8_1
    }
}

/// The formats with a q8_K-activation kernel (`cpu::gguf_q8k`): the GGUF k-quants and the
/// i-quants coded in 256-value super-blocks.
pub(crate) fn q8k_format(format: Format) -> bool {
    matches!(
        format,
        Format::GgufQ2_K
            | Format::GgufQ3_K
            | Format::GgufQ4_K
            | Format::GgufQ5_K
            | Format::GgufQ6_K
            | Format::GgufIq4Xs
            | Format::GgufIq1S
            | Format::GgufIq1M
            | Format::GgufIq2Xxs
            | Format::GgufIq2Xs
            | Format::GgufIq2S
            | Format::GgufIq3Xxs
            | Format::GgufIq3S
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table agrees with the documented support matrix (docs/linear.md): every
    /// registered pair gets a plan under its default profile except int32, GGUF only with
    /// q8_1, q8_1 only for GGUF, the six grouped formats and nvfp4.
    #[test]
    fn table_matches_the_documented_matrix() {
        for format in Format::all() {
            for layout in crate::registry::LAYOUTS.iter().map(|l| l.0) {
                if check_compatible(format, layout).is_err() {
                    assert!(Plan::new(format, layout).is_err());
                    continue;
                }
                let cat = format.info().category;
                let plan = Plan::new(format, layout);
                assert_eq!(plan.is_ok(), cat != Category::DirectInt, "{format}");
                let exact = Plan::with(format, layout, Activation::Exact);
                let q8 = Plan::with(format, layout, Activation::Q8_1);
                assert_eq!(
                    exact.is_ok(),
                    !matches!(cat, Category::GgufBlock | Category::DirectInt),
                    "{format}"
                );
                assert_eq!(
                    q8.is_ok(),
                    matches!(
                        cat,
                        Category::GgufBlock | Category::GroupedInt | Category::BlockScaledFloat
                    ),
                    "{format}"
                );
                if let Ok(p) = plan {
                    assert_eq!(p.quantizes_x(), cat == Category::GgufBlock);
                }
                let q8k = Plan::with(format, layout, Activation::Q8K);
                assert_eq!(q8k.is_ok(), q8k_format(format), "{format}");
                if let Ok(p) = q8k {
                    assert!(!p.quantizes_x() && p.family == Family::GgufQ8K);
                }
            }
        }
    }
}
