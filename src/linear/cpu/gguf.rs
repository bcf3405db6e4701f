//! GGUF vec_dot against q8_1 activations: one unpack function per block type, one shared
//! evaluation order (scalar reference here, AVX2 in `gguf_avx2`; identical bits).
//!
//! Every kernel walks the weight row's 32-value blocks b in order (for the 256-value
//! k-quants, the eight 32-value sub-blocks of each super-block). A block unpacks to 32
//! signed integer codes `q` (the type's offset applied: Q4_0 q−8, Q5_0 q−16, Q6_K q−32), an
//! integer scale factor per 16 values `sc` (Q4_K: the sub-block's 6-bit scale, Q6_K: its
//! signed 8-bit scales, else 1) and a float block scale `d` (the block's or super-block's
//! binary16 d). With the activation block's codes `x` and scale `dx`:
//!
//! - `S[l] = Σ_{e=4l..4l+3} sc[e/16]·q[e]·x[e]` for l = 0..8 (exact integers);
//! - `acc[b mod 2][l] ← fma(d·dx, S[l], acc[b mod 2][l])` (`d·dx` is exact: two binary16);
//! - Q4_K only, per sub-block j of a super-block: `accm[j] ← fma(dmin·dx, m_j·Σx, accm[j])`
//!   with Σx the activation block's exact code sum;
//! - result: `tree8(l ↦ (acc[0][l] + acc[1][l]) − accm[l])`.

// Index loops mirror the lane equations of the module docs.
#![allow(clippy::needless_range_loop)]

use super::legacy::Legacy;
use super::{Isa, tree8};
use crate::formats::gguf::{f16_at, scale_min_k4};
use crate::linear::q8_1::{Row, Rows};
use crate::registry::Format;

/// The block types with a dedicated vec_dot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The legacy-block family (Q8_0, Q4_0, Q5_0, Q2_0, IQ4_NL, IQ4_XS): [`super::legacy`].
    Legacy(Legacy),
    Q4K,
    Q6K,
}

impl Kind {
    /// The dedicated kernel for `format`, if there is one.
    pub(crate) fn of(format: Format) -> Option<Kind> {
        if let Some(l) = Legacy::of(format) {
            return Some(Kind::Legacy(l));
        }
        Some(match format {
            Format::GgufQ4_K => Kind::Q4K,
            Format::GgufQ6_K => Kind::Q6K,
            _ => return None,
        })
    }
}

/// Activation rows as `kind`'s kernel on `isa` reads them (some kernels read a rearranged
/// copy of the codes, made once per forward).
pub(crate) fn prepare(isa: Isa, kind: Kind, rows: Rows) -> Rows {
    match kind {
        Kind::Legacy(l) => super::legacy::prepare(isa, l, rows),
        _ => rows,
    }
}

/// One unpacked 32-value block.
pub(super) struct Unpacked {
    pub q: [i8; 32],
    pub sc: [i32; 2],
    pub d: f32,
}

/// `block_q4_K { f16 d; f16 dmin; u8 scales[12]; u8 qs[128]; }`: sub-block j uses
/// qs[32·(j/2) ..][0..32], low nibbles for even j, high for odd; scale from
/// [`scale_min_k4`]. The min term is applied separately ([`q4k_min`]).
fn unpack_q4_k(row: &[u8], b: usize) -> Unpacked {
    let (sb, j) = (b / 8, b % 8);
    let blk = &row[144 * sb..144 * sb + 144];
    let qs = &blk[16 + 32 * (j / 2)..48 + 32 * (j / 2)];
    let shift = 4 * (j % 2);
    let mut q = [0i8; 32];
    for (o, &c) in q.iter_mut().zip(qs) {
        *o = ((c >> shift) & 0x0F) as i8;
    }
    let sc = scale_min_k4(j, &blk[4..16]).0 as i32;
    Unpacked {
        q,
        sc: [sc, sc],
        d: f16_at(blk, 0),
    }
}

/// Q4_K super-block `sb`: `dmin` and the eight 6-bit mins.
pub(super) fn q4k_min(row: &[u8], sb: usize) -> (f32, [u8; 8]) {
    let blk = &row[144 * sb..144 * sb + 144];
    let mut m = [0u8; 8];
    for (j, o) in m.iter_mut().enumerate() {
        *o = scale_min_k4(j, &blk[4..16]).1;
    }
    (f16_at(blk, 2), m)
}

/// `block_q6_K { u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d; }`: value v = 32j + e of the
/// super-block lies in half h = j/4, quarter i = j%4; its low 4 bits are nibble i/2 of
/// ql[64h + 32(i%2) + e], its high 2 bits are bits 2i..2i+1 of qh[32h + e]; code − 32;
/// scale scales[v/16].
fn unpack_q6_k(row: &[u8], b: usize) -> Unpacked {
    let (sb, j) = (b / 8, b % 8);
    let blk = &row[210 * sb..210 * sb + 210];
    let (h, i) = (j / 4, j % 4);
    let ql = &blk[64 * h + 32 * (i % 2)..64 * h + 32 * (i % 2) + 32];
    let qh = &blk[128 + 32 * h..160 + 32 * h];
    let mut q = [0i8; 32];
    for e in 0..32 {
        let lo = (ql[e] >> (4 * (i / 2))) & 0x0F;
        let hi = (qh[e] >> (2 * i)) & 3;
        q[e] = (lo | (hi << 4)) as i8 - 32;
    }
    let sc = [blk[192 + 2 * j] as i8 as i32, blk[193 + 2 * j] as i8 as i32];
    Unpacked {
        q,
        sc,
        d: f16_at(blk, 208),
    }
}

fn unpack(kind: Kind, row: &[u8], b: usize) -> Unpacked {
    match kind {
        Kind::Legacy(_) => unreachable!("legacy kinds run in linear::cpu::legacy"),
        Kind::Q4K => unpack_q4_k(row, b),
        Kind::Q6K => unpack_q6_k(row, b),
    }
}

/// Up to [`ROW_GROUP`](crate::linear) consecutive weight rows `ws` against every q8_1 row
/// `xs`: `out[i·M + r]` = the product of `ws[i]` with `xs[r]` (row of W major). A family
/// may compute several weight rows in one pass (M = 1 GEMV), but each output's bits must
/// not depend on how many rows share the pass.
pub(crate) fn dot_row_group(isa: Isa, kind: Kind, ws: &[&[u8]], xs: &[Row<'_>], out: &mut [f32]) {
    debug_assert_eq!(ws.len() * xs.len(), out.len());
    if let Kind::Legacy(l) = kind {
        return super::legacy::dot_row_group(isa, l, ws, xs, out);
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
    let mut accm = [0f32; 8];
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
        if kind == Kind::Q4K && b % 8 == 7 {
            let sb = b / 8;
            let (dmin, m) = q4k_min(w, sb);
            for j in 0..8 {
                let t = 8 * sb + j;
                let a = &mut accm[j];
                *a = (dmin * x.d[t]).mul_add((m[j] as i32 * x.sum[t]) as f32, *a);
            }
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
