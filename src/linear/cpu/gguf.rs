//! GGUF vec_dot against q8_1 activations: one unpack function per block type, one shared
//! evaluation order (scalar reference here, AVX2 in `gguf_avx2`; identical bits). The
//! k-quants have their own family ([`super::kquants`]), dispatched from here.
//!
//! Every kernel walks the weight row's 32-value blocks b in order. A block unpacks to 32
//! signed integer codes `q` (the type's offset applied: Q4_0 q−8, Q5_0 q−16), an integer
//! scale factor per 16 values `sc` (1 for the legacy types) and a float block scale `d`
//! (the block's binary16 d). With the activation block's codes `x` and scale `dx`:
//!
//! - `S[l] = Σ_{e=4l..4l+3} sc[e/16]·q[e]·x[e]` for l = 0..8 (exact integers);
//! - `acc[b mod 2][l] ← fma(d·dx, S[l], acc[b mod 2][l])` (`d·dx` is exact: two binary16);
//! - `accm` (a type's min term) stays 0 for the legacy types;
//! - result: `tree8(l ↦ (acc[0][l] + acc[1][l]) − accm[l])`.

// Index loops mirror the lane equations of the module docs.
#![allow(clippy::needless_range_loop)]

use super::kquants::Kq;
use super::{Isa, tree8};
use crate::formats::gguf::f16_at;
use crate::linear::q8_1::Row;
use crate::registry::Format;

/// The block types with a dedicated vec_dot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Q8_0,
    Q4_0,
    Q5_0,
    /// The k-quant super-blocks ([`super::kquants`]).
    KQuant(Kq),
    /// The grid-coded i-quants ([`super::iquants`]).
    Iq(super::iquants::IqKind),
}

impl Kind {
    /// The dedicated kernel for `format`, if there is one.
    pub(crate) fn of(format: Format) -> Option<Kind> {
        Some(match format {
            Format::GgufQ8_0 => Kind::Q8_0,
            Format::GgufQ4_0 => Kind::Q4_0,
            Format::GgufQ5_0 => Kind::Q5_0,
            f => {
                return Kq::of(f)
                    .map(Kind::KQuant)
                    .or_else(|| super::iquants::IqKind::of(f).map(Kind::Iq));
            }
        })
    }
}

/// One unpacked 32-value block.
pub(super) struct Unpacked {
    pub q: [i8; 32],
    pub sc: [i32; 2],
    pub d: f32,
}

/// `block_q8_0 { f16 d; i8 qs[32]; }`.
fn unpack_q8_0(row: &[u8], b: usize) -> Unpacked {
    let blk = &row[34 * b..34 * b + 34];
    let mut q = [0i8; 32];
    for (o, &c) in q.iter_mut().zip(&blk[2..]) {
        *o = c as i8;
    }
    Unpacked {
        q,
        sc: [1, 1],
        d: f16_at(blk, 0),
    }
}

/// `block_q4_0 { f16 d; u8 qs[16]; }`: value e < 16 is the low nibble of qs[e], value e ≥ 16
/// the high nibble of qs[e−16]; code − 8.
fn unpack_q4_0(row: &[u8], b: usize) -> Unpacked {
    let blk = &row[18 * b..18 * b + 18];
    let mut q = [0i8; 32];
    for e in 0..16 {
        q[e] = (blk[2 + e] & 0x0F) as i8 - 8;
        q[e + 16] = (blk[2 + e] >> 4) as i8 - 8;
    }
    Unpacked {
        q,
        sc: [1, 1],
        d: f16_at(blk, 0),
    }
}

/// `block_q5_0 { f16 d; u32 qh; u8 qs[16]; }`: nibbles as Q4_0, bit e of qh is bit 4 of
/// value e; code − 16.
fn unpack_q5_0(row: &[u8], b: usize) -> Unpacked {
    let blk = &row[22 * b..22 * b + 22];
    let qh = u32::from_le_bytes([blk[2], blk[3], blk[4], blk[5]]);
    let mut q = [0i8; 32];
    for e in 0..16 {
        let lo = (blk[6 + e] & 0x0F) | ((((qh >> e) & 1) as u8) << 4);
        let hi = (blk[6 + e] >> 4) | ((((qh >> (e + 16)) & 1) as u8) << 4);
        q[e] = lo as i8 - 16;
        q[e + 16] = hi as i8 - 16;
    }
    Unpacked {
        q,
        sc: [1, 1],
        d: f16_at(blk, 0),
    }
}

fn unpack(kind: Kind, row: &[u8], b: usize) -> Unpacked {
    match kind {
        Kind::Q8_0 => unpack_q8_0(row, b),
        Kind::Q4_0 => unpack_q4_0(row, b),
        Kind::Q5_0 => unpack_q5_0(row, b),
        Kind::KQuant(_) => unreachable!("k-quants run in kquants"),
        Kind::Iq(_) => unreachable!("i-quants run in iquants"),
    }
}

/// Up to [`ROW_GROUP`](crate::linear) consecutive weight rows `ws` against every q8_1 row
/// `xs`: `out[i·M + r]` = the product of `ws[i]` with `xs[r]` (row of W major). A family
/// may compute several weight rows in one pass (M = 1 GEMV), but each output's bits must
/// not depend on how many rows share the pass.
pub(crate) fn dot_row_group(isa: Isa, kind: Kind, ws: &[&[u8]], xs: &[Row<'_>], out: &mut [f32]) {
    debug_assert_eq!(ws.len() * xs.len(), out.len());
    match kind {
        Kind::KQuant(kq) => return super::kquants::dot_row_group(isa, kq, ws, xs, out),
        Kind::Iq(k) => return super::iquants::dot_row_group(isa, k, ws, xs, out),
        _ => {}
    }
    for (w, o) in ws.iter().zip(out.chunks_exact_mut(xs.len())) {
        dot_rows(isa, kind, w, xs, o);
    }
}

/// `out[r]` = the product of weight row `w` (whole blocks of `kind`) with q8_1 row `xs[r]`.
pub(crate) fn dot_rows(isa: Isa, kind: Kind, w: &[u8], xs: &[Row<'_>], out: &mut [f32]) {
    debug_assert_eq!(xs.len(), out.len());
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prepared weight selects Isa::Avx2 only after run-time detection.
        Isa::Avx2 => unsafe { super::gguf_avx2::dot_rows(kind, w, xs, out) },
        _ => {
            for (o, x) in out.iter_mut().zip(xs) {
                *o = dot_scalar(kind, w, x);
            }
        }
    }
}

/// The reference order of the module docs.
fn dot_scalar(kind: Kind, w: &[u8], x: &Row<'_>) -> f32 {
    let nb = x.d.len();
    let mut acc = [[0f32; 8]; 2];
    let accm = [0f32; 8];
    for b in 0..nb {
        let u = unpack(kind, w, b);
        let ds = u.d * x.d[b];
        let xq = &x.qs[32 * b..32 * b + 32];
        for l in 0..8 {
            let mut s = 0i32;
            for e in 4 * l..4 * l + 4 {
                s += u.sc[e / 16] * u.q[e] as i32 * xq[e] as i32;
            }
            let a = &mut acc[b % 2][l];
            *a = ds.mul_add(s as f32, *a);
        }
    }
    finish(&acc, &accm)
}

/// The final combination shared by both paths.
#[inline]
pub(super) fn finish(acc: &[[f32; 8]; 2], accm: &[f32; 8]) -> f32 {
    let mut s = [0f32; 8];
    for l in 0..8 {
        s[l] = (acc[0][l] + acc[1][l]) - accm[l];
    }
    tree8(s)
}
