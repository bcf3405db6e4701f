//! GGUF k-quant vec_dot (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) against q8_1 activations: the
//! scalar reference order here, the AVX2 and AVX-VNNI tiers in `kquants_avx2`, the AVX-512
//! tier in `kquants_avx512`, and with several activation rows the tile kernels
//! `kquants_tile_avx2` (256-bit tiers) and `kquants_tile_avx512` (identical bits).
//!
//! A weight row is a sequence of 256-value super-blocks; super-block `s` meets the eight
//! q8_1 blocks `t = 8s + j` (j = 0..8) of the activation row. Every super-block unpacks to
//! 256 signed integer codes `q` (the type's offset applied: Q3_K's hmask bit, Q6_K's −32),
//! an integer scale `sc` and an integer min `m` per 16 values (Q4_K/Q5_K: the 6-bit scale and
//! min of the 32-value sub-block, for both halves; Q2_K: its 4-bit nibbles; Q3_K: the
//! signed 6-bit scales; Q6_K: the signed 8-bit scales; `m = 0` for Q3_K/Q6_K) and the
//! binary16 `d` and `dmin`. With the activation block's codes `x` and scale `dx_t`:
//!
//! - `S_j = Σ_{e<32} sc[(32j+e)/16]·q[32j+e]·x[e]` and `M_j = Σ_{e<32} m[(32j+e)/16]·x[e]`:
//!   exact integers (|S_j| ≤ 32·128·32·127 < 2²⁴, so also exact in f32);
//! - one accumulator lane per sub-block position j, in super-block order:
//!   `acc[j] ← fma(d·dx_t, S_j, acc[j])` and, for the types with mins (Q2_K, Q4_K, Q5_K),
//!   `accm[j] ← fma(dmin·dx_t, M_j, accm[j])` (`d·dx_t` is exact: two binary16);
//! - result: `tree8(j ↦ acc[j] − accm[j])` (types with mins), `tree8(acc)` otherwise.
//!
//! Only the fmas and the final tree round, so any exact way of forming `S_j` and `M_j`
//! (the SIMD paths use unsigned codes, `vpmaddubsw` or `vpdpbusd`, and subtract the offsets
//! through the activation's half-block sums; AVX-512 forms two blocks per `vpdpbusd` and
//! keeps `acc` and `accm` in the two halves of one register, each lane fma'd on its own)
//! gives the same bits. The result does not depend on how
//! many weight rows or activation rows share a pass.

// Index loops mirror the layout equations of the docs.
#![allow(clippy::needless_range_loop)]

use super::engine::{AMX_GROUP, ROW_GROUP};
use super::{Isa, tree8};
use crate::formats::gguf::blocks::{BlockType, q2_k, q3_k, q4_k, q5_k, q6_k, scale_min_k4};
use crate::formats::gguf::f16_at;
use crate::linear::q8_1::{Row, Rows};
use crate::registry::Format;

/// The k-quant block types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kq {
    Q2K,
    Q3K,
    Q4K,
    Q5K,
    Q6K,
}

impl Kq {
    /// The k-quant kernel for `format`, if it is one.
    pub(crate) fn of(format: Format) -> Option<Kq> {
        Some(match format {
            Format::GgufQ2_K => Kq::Q2K,
            Format::GgufQ3_K => Kq::Q3K,
            Format::GgufQ4_K => Kq::Q4K,
            Format::GgufQ5_K => Kq::Q5K,
            Format::GgufQ6_K => Kq::Q6K,
            _ => return None,
        })
    }

    /// The block descriptor.
    pub(super) const fn block(self) -> &'static BlockType {
        match self {
            Kq::Q2K => &q2_k::BLOCK,
            Kq::Q3K => &q3_k::BLOCK,
            Kq::Q4K => &q4_k::BLOCK,
            Kq::Q5K => &q5_k::BLOCK,
            Kq::Q6K => &q6_k::BLOCK,
        }
    }

    /// Bytes per 256-value super-block.
    pub(super) const fn block_bytes(self) -> usize {
        self.block().bytes
    }

    /// The byte offsets of the binary16 `d` and, for the types with mins, `dmin` in a
    /// super-block.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(super) const fn d_dmin(self) -> (usize, Option<usize>) {
        match self {
            Kq::Q2K => (q2_k::D.at, Some(q2_k::DMIN.at)),
            Kq::Q3K => (q3_k::D.at, None),
            Kq::Q4K => (q4_k::D.at, Some(q4_k::DMIN.at)),
            Kq::Q5K => (q5_k::D.at, Some(q5_k::DMIN.at)),
            Kq::Q6K => (q6_k::D.at, None),
        }
    }

    /// Whether the type subtracts `dmin·m` (the `accm` lanes of the module docs).
    pub(super) const fn has_min(self) -> bool {
        matches!(self, Kq::Q2K | Kq::Q4K | Kq::Q5K)
    }
}

/// One super-block as integers (module docs; also read by the q8_K kernels).
pub(super) struct Super {
    pub(super) q: [i8; 256],
    pub(super) sc: [i32; 16],
    pub(super) m: [i32; 16],
    pub(super) d: f32,
    pub(super) dmin: f32,
}

/// `block_q2_K` ([`q2_k`]): value 128h + 32i + l is bits 2i..2i+1 of qs[32h + l];
/// 16-value sub-block s has scale scales[s] & 15, min scales[s] >> 4.
fn unpack_q2_k(b: &[u8], o: &mut Super) {
    let qs = q2_k::QS.of(b);
    for v in 0..256 {
        let (h, i, l) = (v / 128, (v / 32) % 4, v % 32);
        o.q[v] = ((qs[32 * h + l] >> (2 * i)) & 3) as i8;
    }
    for (s, &b) in q2_k::SCALES.of(b).iter().enumerate() {
        o.sc[s] = (b & 15) as i32;
        o.m[s] = (b >> 4) as i32;
    }
    o.d = f16_at(b, q2_k::D.at);
    o.dmin = f16_at(b, q2_k::DMIN.at);
}

/// `block_q3_K` ([`q3_k`]): value 128h + 32i + l is bits 2i..2i+1 of qs[32h + l], minus 4
/// when bit 4h + i of hmask[l] is CLEAR; signed scales from [`q3_k::scales`].
fn unpack_q3_k(b: &[u8], o: &mut Super) {
    let (hmask, qs) = (q3_k::HMASK.of(b), q3_k::QS.of(b));
    for v in 0..256 {
        let (h, i, l) = (v / 128, (v / 32) % 4, v % 32);
        let low = ((qs[32 * h + l] >> (2 * i)) & 3) as i8;
        let set = (hmask[l] >> (4 * h + i)) & 1 == 1;
        o.q[v] = if set { low } else { low - 4 };
    }
    for (o, s) in o.sc.iter_mut().zip(q3_k::scales(q3_k::SCALES.of(b))) {
        *o = s as i32;
    }
    o.m = [0; 16];
    o.d = f16_at(b, q3_k::D.at);
    o.dmin = 0.0;
}

/// `block_q4_K` ([`q4_k`]) and `block_q5_K` ([`q5_k`], the same d, dmin and scales):
/// sub-block j (32 values) is nibble j%2 of qs[32·(j/2) ..][0..32], Q5_K adds bit j of
/// qh[l] as bit 4; 6-bit scale and min from [`scale_min_k4`].
fn unpack_q45_k(b: &[u8], five: bool, o: &mut Super) {
    let qs = if five { q5_k::QS.of(b) } else { q4_k::QS.of(b) };
    for v in 0..256 {
        let (j, l) = (v / 32, v % 32);
        let mut c = (qs[32 * (j / 2) + l] >> (4 * (j % 2))) & 15;
        if five {
            c |= ((q5_k::QH.of(b)[l] >> j) & 1) << 4;
        }
        o.q[v] = c as i8;
    }
    let scales = q4_k::SCALES.of(b);
    for s in 0..16 {
        let (sc, m) = scale_min_k4(s / 2, scales);
        o.sc[s] = sc as i32;
        o.m[s] = m as i32;
    }
    o.d = f16_at(b, q4_k::D.at);
    o.dmin = f16_at(b, q4_k::DMIN.at);
}

/// `block_q6_K` ([`q6_k`]): value 128h + 32i + l has its low 4 bits in nibble i/2 of
/// ql[64h + 32(i%2) + l], its high 2 bits at bit 2i of qh[32h + l]; − 32; scale
/// scales[v/16].
fn unpack_q6_k(b: &[u8], o: &mut Super) {
    let (ql, qh) = (q6_k::QL.of(b), q6_k::QH.of(b));
    for v in 0..256 {
        let (h, i, l) = (v / 128, (v / 32) % 4, v % 32);
        let lo = (ql[64 * h + 32 * (i % 2) + l] >> (4 * (i / 2))) & 15;
        let hi = (qh[32 * h + l] >> (2 * i)) & 3;
        o.q[v] = (lo | (hi << 4)) as i8 - 32;
    }
    for (o, &s) in o.sc.iter_mut().zip(q6_k::SCALES.of(b)) {
        *o = s as i8 as i32;
    }
    o.m = [0; 16];
    o.d = f16_at(b, q6_k::D.at);
    o.dmin = 0.0;
}

/// Unpacks super-block `b` of type `kq` into `o` (module docs).
pub(super) fn unpack(kq: Kq, b: &[u8], o: &mut Super) {
    match kq {
        Kq::Q2K => unpack_q2_k(b, o),
        Kq::Q3K => unpack_q3_k(b, o),
        Kq::Q4K => unpack_q45_k(b, false, o),
        Kq::Q5K => unpack_q45_k(b, true, o),
        Kq::Q6K => unpack_q6_k(b, o),
    }
}

/// The activation rows from which `kq` takes the tile kernel of `isa`, if it has one for
/// it (`kquants_tile_avx512::min_m`, `kquants_tile_avx2::min_m`): from there the rows are
/// interleaved in groups of four ([`prepare`]; in groups of 16 instead where [`amx_rows`]
/// holds), and a product's workspace reserves room for that.
#[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))]
pub(crate) fn tile_min_m(isa: Isa, kq: Kq) -> Option<usize> {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => super::kquants_tile_avx512::min_m(kq),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 | Isa::AvxVnni => super::kquants_tile_avx2::min_m(kq),
        _ => None,
    }
}

/// Weight rows the engine hands each call with `m` > 1 activation rows of `kq` on `isa`:
/// 16 where they take the AMX kernel ([`amx_rows`]), 8 where they take the 512-bit tile
/// kernel (two sets of four sharing each activation load), else 4.
pub(crate) fn rows_per_call(isa: Isa, kq: Kq, m: usize) -> usize {
    if amx_rows(isa, kq, m) {
        return AMX_GROUP;
    }
    #[cfg(target_arch = "x86_64")]
    if isa == Isa::Avx512 && tile_min_m(isa, kq).is_some_and(|min| m >= min) {
        return super::kquants_tile_avx512::ROWS;
    }
    ROW_GROUP
}

/// Whether `m` activation rows of `kq` on `isa` take the AMX kernel (the AVX-512 tier on a
/// CPU with AMX-INT8, from `kquants_amx::min_m` rows): the rows are then interleaved in
/// groups of 16 ([`prepare`]) and the engine hands the kernel up to 16 weight rows a call.
#[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))]
pub(crate) fn amx_rows(isa: Isa, kq: Kq, m: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    if isa == Isa::Avx512 && crate::isa::Cpu::get().amx_int8 {
        return super::kquants_amx::min_m(kq).is_some_and(|min| m >= min);
    }
    false
}

/// Activation rows as the kernel on `isa` reads them: where [`amx_rows`] holds, interleaved
/// in groups of 16 for the AMX kernel; else from [`tile_min_m`] rows on, interleaved in
/// groups of four for the tile kernel; below, on the AVX-512 tier, Q2_K–Q5_K's codes in the
/// order of that tier's pass kernel (chunk- or group-major), and Q3_K's and Q6_K's offset
/// terms (4·Σx16, 32·Σx16) in the lane order of their per-16 sums.
pub(crate) fn prepare(isa: Isa, kq: Kq, rows: Rows) -> Rows {
    let mut rows = rows;
    if amx_rows(isa, kq, rows.rows()) {
        #[cfg(target_arch = "x86_64")]
        rows.arrange_groups(super::amx::WIDTH, false);
    } else if tile_min_m(isa, kq).is_some_and(|min| rows.rows() >= min) {
        rows.arrange_quads(false);
    } else {
        #[cfg(target_arch = "x86_64")]
        if isa == Isa::Avx512 {
            if let Some(order) = super::kquants_avx512::arrangement(kq) {
                rows.arrange_pairs(order, false);
            }
            if let Some((order, offset)) = super::kquants_avx512::offsets(kq) {
                rows.arrange_offsets(order, offset);
            }
        }
    }
    rows
}

/// Up to 16 consecutive weight rows `ws` (whole super-blocks of `kq`; four beyond M = 1
/// but where the rows are interleaved for the AMX kernel, [`amx_rows`], or the tile kernel
/// takes more, [`rows_per_call`]) against every q8_1
/// row `xs`: `out[i·M + r]` = the product of `ws[i]` with `xs[r]` (row of W major).
pub(crate) fn dot_row_group(isa: Isa, kq: Kq, ws: &[&[u8]], xs: &[Row<'_>], out: &mut [f32]) {
    dot_row_group_in(isa, true, kq, ws, xs, out)
}

/// [`dot_row_group`], with the AVX-512 tier's GFNI form of Q2_K–Q6_K where `gfni` and
/// the CPU has GFNI ([`Cpu::gfni`](crate::isa::Cpu::gfni)); the same bits in either form.
#[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))]
fn dot_row_group_in(isa: Isa, gfni: bool, kq: Kq, ws: &[&[u8]], xs: &[Row<'_>], out: &mut [f32]) {
    debug_assert_eq!(ws.len() * xs.len(), out.len());
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY (each tier): a prepared weight selects a tier only after run-time detection
        // of all its features (`Isa::available`), those its kernels are compiled for; GFNI
        // only where detected.
        Isa::Avx512 => unsafe {
            // Several activation rows: the AMX or the tile kernel when the rows are
            // interleaved for it, else the pair kernels; the same bits.
            if super::kquants_amx::applies(kq, xs) {
                super::kquants_amx::dot_row_group(kq, ws, xs, out)
            } else if super::kquants_tile_avx512::applies(kq, xs) {
                super::kquants_tile_avx512::dot_row_group(kq, ws, xs, out)
            } else {
                // The GFNI form only where detected.
                let gfni = gfni && super::kquants_avx512::gfni_form();
                super::kquants_avx512::dot_row_group(kq, gfni, ws, xs, out)
            }
        },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above (AVX2, FMA and F16C, which every 256-bit tier has). The 256-bit
        // tile kernel when the rows are interleaved for it, else the tier's pass kernels;
        // the same bits.
        Isa::AvxVnni | Isa::Avx2 if super::kquants_tile_avx2::applies(kq, xs) => unsafe {
            super::kquants_tile_avx2::dot_row_group(kq, ws, xs, out)
        },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        Isa::AvxVnni => unsafe { super::kquants_avx2::avxvnni::dot_row_group(kq, ws, xs, out) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        Isa::Avx2 => unsafe { super::kquants_avx2::avx2::dot_row_group(kq, ws, xs, out) },
        _ => {
            for (w, o) in ws.iter().zip(out.chunks_exact_mut(xs.len())) {
                for (o, x) in o.iter_mut().zip(xs) {
                    *o = dot_scalar(kq, w, x);
                }
            }
        }
    }
}

/// The reference order of the module docs.
fn dot_scalar(kq: Kq, w: &[u8], x: &Row<'_>) -> f32 {
    let bb = kq.block_bytes();
    let nsb = x.d.len() / 8;
    let mut acc = [0f32; 8];
    let mut accm = [0f32; 8];
    let mut s = Super {
        q: [0; 256],
        sc: [0; 16],
        m: [0; 16],
        d: 0.0,
        dmin: 0.0,
    };
    for sb in 0..nsb {
        unpack(kq, &w[bb * sb..bb * sb + bb], &mut s);
        for (j, (a, am)) in acc.iter_mut().zip(accm.iter_mut()).enumerate() {
            let t = 8 * sb + j;
            let xq = &x.qs[32 * t..32 * t + 32];
            let (mut si, mut mi) = (0i32, 0i32);
            for (e, &xe) in xq.iter().enumerate() {
                let v = 32 * j + e;
                si += s.sc[v / 16] * s.q[v] as i32 * xe as i32;
                mi += s.m[v / 16] * xe as i32;
            }
            *a = (s.d * x.d[t]).mul_add(si as f32, *a);
            if kq.has_min() {
                *am = (s.dmin * x.d[t]).mul_add(mi as f32, *am);
            }
        }
    }
    finish(kq, &acc, &accm)
}

/// The final combination shared by both paths.
#[inline]
pub(super) fn finish(kq: Kq, acc: &[f32; 8], accm: &[f32; 8]) -> f32 {
    if kq.has_min() {
        tree8(std::array::from_fn(|j| acc[j] - accm[j]))
    } else {
        tree8(*acc)
    }
}

/// [`finish`] of the lanes of `acc` and `accm`, in registers (the same operations).
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn finish_m256(
    kq: Kq,
    acc: std::arch::x86_64::__m256,
    accm: std::arch::x86_64::__m256,
) -> f32 {
    use std::arch::x86_64::_mm256_sub_ps;
    if kq.has_min() {
        super::tree8_m256(_mm256_sub_ps(acc, accm))
    } else {
        super::tree8_m256(acc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::decode_row;
    use crate::dtype::Dtype;
    use crate::linear::q8_1::Rows;
    use crate::linear::tolerance;
    use crate::view::WeightView;

    const ALL: [Kq; 5] = [Kq::Q2K, Kq::Q3K, Kq::Q4K, Kq::Q5K, Kq::Q6K];

    /// Offsets of the binary16 fields (d, dmin) in a super-block.
    fn f16_fields(kq: Kq) -> Vec<usize> {
        kq.block().f16_fields().map(|f| f.at).collect()
    }

    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            self.0 >> 33
        }
    }

    /// Super-block payloads: every byte 0x00 (Q6_K codes −32 with scale 0 / Q3_K codes −4
    /// with scales −32), every byte 0xFF (the largest codes, 6-bit scales and mins 63, Q3_K
    /// scale +31, Q6_K scale −1), bytes alternating 0x00/0xFF, and random bytes; the binary16
    /// fields set to finite values (pattern-dependent, negative included).
    fn payload(kq: Kq, n: usize, k: usize, pattern: usize, rng: &mut Lcg) -> Vec<u8> {
        let bb = kq.block_bytes();
        let mut w: Vec<u8> = (0..n * k / 256 * bb)
            .map(|i| match pattern {
                0 => 0x00,
                1 => 0xFF,
                2 => [0x00, 0xFF][(i / 3) % 2],
                _ => rng.next() as u8,
            })
            .collect();
        for (s, blk) in w.chunks_exact_mut(bb).enumerate() {
            for (f, &at) in f16_fields(kq).iter().enumerate() {
                let v = [1.0f32, 0.25, -0.5, 3e-6][(s + f + pattern) % 4];
                blk[at..at + 2].copy_from_slice(&half::f16::from_f32(v).to_bits().to_le_bytes());
            }
            if kq == Kq::Q6K && pattern == 3 && s % 2 == 0 {
                // The extreme signed scales −128 and +127.
                blk[q6_k::SCALES.range()].copy_from_slice(&[0x80, 0x7F].repeat(8));
            }
        }
        w
    }

    /// Activations whose q8_1 codes reach ±127 in every block (amax = |x| of every value):
    /// rows 4g + 1 all +127 and rows 4g + 2 all −127 (against the largest codes, the largest
    /// block sums any kernel forms), the others mixed.
    fn activations(m: usize, k: usize, rng: &mut Lcg) -> Vec<f32> {
        (0..m * k)
            .map(|i| match ((i / k) % 4, i % 3) {
                (1, _) => 1.0,
                (2, _) => -1.0,
                (_, 0) => 1.0,
                (_, 1) => -1.0,
                _ => (rng.next() % 255) as f32 / 127.0 - 1.0,
            })
            .collect()
    }

    /// Oracle: the f64 product of the exactly decoded weights (formats::gguf, checked
    /// against gguf-py) with the q8_1 values x̂; the kernel output must meet
    /// `linear_f32acc_v1`, for every row-group size 1..4 and M ∈ {1, 2, 3, 5}, and every tier
    /// must return the scalar path's bits.
    #[test]
    fn extreme_payloads_meet_the_criterion_and_every_tier_equals_scalar() {
        crate::linear::cpu::tests::note_gfni(false);
        let mut rng = Lcg(7);
        let mut counts = [0usize; 5];
        for (ti, kq) in ALL.into_iter().enumerate() {
            for k in [256, 512, 768, 1792, 2048] {
                for pattern in 0..4 {
                    let n = 5;
                    let w = payload(kq, n, k, pattern, &mut rng);
                    let view = WeightView::single(kq.block().format, n, k, &w).unwrap();
                    let mut wd = vec![0f32; n * k];
                    for r in 0..n {
                        decode_row(&view, r as u64, &mut wd[r * k..(r + 1) * k]).unwrap();
                    }
                    let rb = k / 256 * kq.block_bytes();
                    let rows: Vec<&[u8]> = w.chunks_exact(rb).collect();
                    for m in [1, 2, 3, 5, 8, 13, 17, 27, 64] {
                        let x = activations(m, k, &mut rng);
                        let q = Rows::quantize(&x, m, k);
                        let xh = q.dequantized();
                        let xs: Vec<Row<'_>> = (0..m).map(|i| q.row(i)).collect();
                        // Each tier's own arrangement (the tile kernels' interleaved rows).
                        let prepared: Vec<(Isa, Rows)> = Isa::tested()
                            .into_iter()
                            .map(|isa| (isa, prepare(isa, kq, Rows::quantize(&x, m, k))))
                            .collect();
                        for g in 1..=4 {
                            for r0 in [0, n - g] {
                                let ws = &rows[r0..r0 + g];
                                let mut ys = vec![0f32; g * m];
                                dot_row_group(Isa::Scalar, kq, ws, &xs, &mut ys);
                                // Q2_K–Q6_K with and without GFNI (AVX-512 tier).
                                for ((isa, qp), gfni) in
                                    prepared.iter().flat_map(|p| [(p, false), (p, true)])
                                {
                                    let isa = *isa;
                                    let xp: Vec<Row<'_>> = (0..m).map(|i| qp.row(i)).collect();
                                    let mut ya = vec![0f32; g * m];
                                    dot_row_group_in(isa, gfni, kq, ws, &xp, &mut ya);
                                    let b = |v: &[f32]| {
                                        v.iter().map(|f| f.to_bits()).collect::<Vec<_>>()
                                    };
                                    assert_eq!(
                                        b(&ys),
                                        b(&ya),
                                        "{kq:?} {isa:?} gfni {gfni} k{k} p{pattern} m{m} g{g}"
                                    );
                                }
                                for i in 0..g {
                                    let wr = &wd[(r0 + i) * k..(r0 + i + 1) * k];
                                    for r in 0..m {
                                        let xr = &xh[r * k..(r + 1) * k];
                                        let (mut yr, mut sa) = (0f64, 0f64);
                                        for (a, b) in wr.iter().zip(xr) {
                                            yr += *a as f64 * *b as f64;
                                            sa += (*a as f64 * *b as f64).abs();
                                        }
                                        let y = ys[i * m + r] as f64;
                                        let tol = tolerance(k, sa, yr, Dtype::F32);
                                        assert!(
                                            (y - yr).abs() <= tol,
                                            "{kq:?} k{k} p{pattern} m{m} g{g}: {y} vs {yr} (tol {tol})"
                                        );
                                        counts[ti] += 1;
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        println!("k-quant outputs checked (Q2_K..Q6_K): {counts:?}");
        assert!(counts.iter().all(|&c| c > 0));
    }

    /// One super-block worked by hand: Q4_K with d = 1, dmin = 0.5, every 6-bit scale 2 and
    /// min 1, every code 3, against x = 1.0 (q8_1 d = 1/127 → binary16 0.007873535, codes
    /// 127): each weight is 2·3 − 0.5·1 = 5.5, so y = 256 · 5.5 · 127 · d_x.
    #[test]
    fn hand_worked_q4_k() {
        let mut b = vec![0u8; 144];
        b[0..2].copy_from_slice(&half::f16::from_f32(1.0).to_bits().to_le_bytes());
        b[2..4].copy_from_slice(&half::f16::from_f32(0.5).to_bits().to_le_bytes());
        // Sub-blocks 0..4: scale in bytes 0..4, min in bytes 4..8 (low 6 bits); 4..8: low
        // nibbles of bytes 8..12 (scale) and high nibbles (min), top bits 0.
        b[4..8].fill(2);
        b[8..12].fill(1);
        b[12..16].fill(0x12);
        b[16..144].fill(0x33);
        let x = vec![1.0f32; 256];
        let q = Rows::quantize(&x, 1, 256);
        let dx = q.d[0];
        assert_eq!(q.qs[0], 127);
        let want = 256.0 * 5.5 * 127.0 * dx as f64;
        for isa in Isa::tested() {
            let mut y = [0f32];
            dot_row_group(isa, Kq::Q4K, &[&b], &[q.row(0)], &mut y);
            // Every S_j = 2·3·127·32, M_j = 127·32: exact; lanes equal, so the tree is exact.
            assert_eq!(y[0] as f64, want, "{isa:?}");
        }
    }

    /// Every tier equals the scalar reference word for word (NaN where it is NaN; its sign
    /// and payload are not specified) with random codes and scale words drawn from NaN,
    /// ±Inf, subnormals, ±0 and normals.
    #[test]
    fn non_finite_scale_words_every_tier_equals_scalar() {
        const SPECIAL: [u16; 8] = [
            0x7E00, 0xFE01, 0x7C00, 0xFC00, 0x0001, 0x83FF, 0x0000, 0x8000,
        ];
        let mut rng = Lcg(11);
        let bits = |v: &[f32]| {
            v.iter()
                .map(|f| if f.is_nan() { u32::MAX } else { f.to_bits() })
                .collect::<Vec<_>>()
        };
        for kq in ALL {
            let (n, k) = (5, 1024);
            let mut w = payload(kq, n, k, 3, &mut rng);
            for blk in w.chunks_exact_mut(kq.block_bytes()) {
                for at in f16_fields(kq) {
                    let r = rng.next();
                    if r.is_multiple_of(4) {
                        let s = SPECIAL[(r >> 4) as usize % SPECIAL.len()];
                        blk[at..at + 2].copy_from_slice(&s.to_le_bytes());
                    }
                }
            }
            let rb = k / 256 * kq.block_bytes();
            let rows: Vec<&[u8]> = w.chunks_exact(rb).collect();
            for m in [1, 3, 6, 9, 17, 27, 49] {
                let x = activations(m, k, &mut rng);
                let q = Rows::quantize(&x, m, k);
                let xs: Vec<Row<'_>> = (0..m).map(|i| q.row(i)).collect();
                let mut want = vec![0f32; n * m];
                dot_row_group(Isa::Scalar, kq, &rows, &xs, &mut want);
                for isa in Isa::tested() {
                    let qp = prepare(isa, kq, Rows::quantize(&x, m, k));
                    let xp: Vec<Row<'_>> = (0..m).map(|i| qp.row(i)).collect();
                    for (g, gfni) in (1..=4).flat_map(|g| [(g, false), (g, true)]) {
                        let mut got = vec![0f32; g * m];
                        dot_row_group_in(isa, gfni, kq, &rows[n - g..], &xp, &mut got);
                        let want = &want[(n - g) * m..];
                        assert_eq!(
                            bits(&got),
                            bits(want),
                            "{kq:?} {isa:?} gfni {gfni} m{m} g{g}"
                        );
                    }
                }
            }
        }
    }

    /// The AMX kernel (where the CPU has it) against the scalar reference for 1, 3, 15 and
    /// 16 weight rows per call (at both ends of 19), activation groups of 16 with remainders; and, since the AVX-512 tier
    /// then prefers it, the 512-bit tile kernel on rows interleaved in fours by hand, so
    /// both stay tested on such a CPU (1, 4, 5 and 8 weight rows per call: one or two sets
    /// of four).
    #[test]
    fn amx_and_tile_kernels_equal_scalar_for_every_row_count() {
        if !Isa::Avx512.available() {
            eprintln!("note: no avx512 on this machine, its AMX and tile kernels are not tested");
            return;
        }
        if !crate::isa::Cpu::get().amx_int8 {
            eprintln!("note: no usable AMX-INT8 on this machine, its kernel is not tested");
        }
        let mut rng = Lcg(23);
        let mut cases = [0usize; 2];
        for kq in ALL {
            let (n, k) = (19, 1792);
            let w = payload(kq, n, k, 3, &mut rng);
            let rb = k / 256 * kq.block_bytes();
            let rows: Vec<&[u8]> = w.chunks_exact(rb).collect();
            for m in [16, 17, 31, 48, 64] {
                let x = activations(m, k, &mut rng);
                let q = Rows::quantize(&x, m, k);
                let xs: Vec<Row<'_>> = (0..m).map(|i| q.row(i)).collect();
                let mut want = vec![0f32; n * m];
                dot_row_group(Isa::Scalar, kq, &rows, &xs, &mut want);
                let amx = prepare(Isa::Avx512, kq, Rows::quantize(&x, m, k));
                let mut quads = Rows::quantize(&x, m, k);
                quads.arrange_quads(false);
                for (form, qp, widths) in
                    [(0, &amx, &[1, 3, 15, 16][..]), (1, &quads, &[1, 4, 5, 8])]
                {
                    if form == 0 && !amx_rows(Isa::Avx512, kq, m) {
                        continue;
                    }
                    if form == 1 && tile_min_m(Isa::Avx512, kq).is_none_or(|min| m < min) {
                        continue;
                    }
                    let xp: Vec<Row<'_>> = (0..m).map(|i| qp.row(i)).collect();
                    for &g in widths {
                        for r0 in [0, n - g] {
                            let mut got = vec![0f32; g * m];
                            dot_row_group(Isa::Avx512, kq, &rows[r0..r0 + g], &xp, &mut got);
                            let want = &want[r0 * m..(r0 + g) * m];
                            let b = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                            assert_eq!(b(&got), b(want), "{kq:?} form {form} m{m} g{g} r0{r0}");
                            cases[form] += 1;
                        }
                    }
                }
            }
        }
        println!("AMX cases {}, 512-bit tile cases {}", cases[0], cases[1]);
        assert!(cases[1] > 0 && (cases[0] > 0 || !crate::isa::Cpu::get().amx_int8));
    }
}
