//! GGUF products against q8_1 activations: which family kernel a block type runs on.
//!
//! Every registered gguf_* type has a dedicated vec_dot in one of three families, each with
//! its scalar reference, its AVX2 path (same bits) and its evaluation order documented in
//! its module and in docs/linear.md:
//!
//! - [`super::legacy`]: 32-value blocks and IQ4_XS (Q8_0, Q4_0, Q5_0, Q2_0, IQ4_NL,
//!   IQ4_XS);
//! - [`super::kquants`]: the 256-value k-quant super-blocks (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K);
//! - [`super::iquants`]: the grid-coded i-quants (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S,
//!   IQ3_XXS, IQ3_S).

use super::Isa;
use super::iquants::IqKind;
use super::kquants::Kq;
use super::legacy::Legacy;
use crate::linear::q8_1::{Row, Rows};
use crate::registry::Format;

/// A GGUF block type's kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The legacy-block family ([`super::legacy`]).
    Legacy(Legacy),
    /// The k-quant super-blocks ([`super::kquants`]).
    KQuant(Kq),
    /// The grid-coded i-quants ([`super::iquants`]).
    Iq(IqKind),
}

impl Kind {
    /// The kernel for `format`, if it is a GGUF block type with one.
    pub(crate) fn of(format: Format) -> Option<Kind> {
        Legacy::of(format)
            .map(Kind::Legacy)
            .or_else(|| Kq::of(format).map(Kind::KQuant))
            .or_else(|| IqKind::of(format).map(Kind::Iq))
    }
}

/// Per-forward rearrangement of the quantized activations a family wants (done once, shared
/// by every weight row).
pub(crate) fn prepare(isa: Isa, kind: Kind, rows: Rows) -> Rows {
    match kind {
        Kind::Legacy(l) => super::legacy::prepare(isa, l, rows),
        Kind::KQuant(k) => super::kquants::prepare(isa, k, rows),
        Kind::Iq(k) => super::iquants::prepare(isa, k, rows),
    }
}

/// Consecutive weight rows `ws`, up to 16 (the engine's row group: 16 at M = 1 and for
/// the AMX kernels, `kquants::amx_rows`, `legacy::amx_rows`, `iquants::amx_rows`) against
/// every q8_1 row `xs`: `out[i·M + r]` = the product of `ws[i]` with `xs[r]` (row of W major). A family
/// may compute several weight rows in one pass, but each output's bits never depend on how
/// many rows share the pass.
pub(crate) fn dot_row_group(isa: Isa, kind: Kind, ws: &[&[u8]], xs: &[Row<'_>], out: &mut [f32]) {
    debug_assert_eq!(ws.len() * xs.len(), out.len());
    match kind {
        Kind::Legacy(l) => super::legacy::dot_row_group(isa, l, ws, xs, out),
        Kind::KQuant(k) => super::kquants::dot_row_group(isa, k, ws, xs, out),
        Kind::Iq(k) => super::iquants::dot_row_group(isa, k, ws, xs, out),
    }
}
