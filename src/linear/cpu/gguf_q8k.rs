//! GGUF products against q8_K activations (the opt-in `Activation::Q8K` profile,
//! docs/linear.md): the k-quants Q2_K..Q6_K and the i-quants coded in 256-value
//! super-blocks (IQ4_XS, IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S). The scalar
//! reference order is here; AVX2 for the k-quants in `gguf_q8k_avx2`, the AVX-512 k-quant
//! kernels in `kquants_avx512` and the i-quants (the grids and IQ4_XS) in `iquants_avx2`
//! (identical bits).
//!
//! A weight super-block sb meets the activation's q8_K block sb (the same 256 values), with
//! codes `x` and binary32 scale `dx`. Every weight value is an exact integer `w` times a
//! per-super-block binary32 factor `dw`, minus (Q2_K, Q4_K, Q5_K) an integer min `m` per
//! 16 values times `dmin`:
//!
//! | type | w | dw | m |
//! |---|---|---|---|
//! | Q2_K..Q6_K | `sc·q` (the per-16 scale times the code, `kquants` module docs) | d | Q2_K/Q4_K/Q5_K: the per-16 min; else 0 |
//! | IQ4_XS | `(ls − 32)·kvalues_iq4nl[nibble]` | d | 0 |
//! | IQ1/IQ2/IQ3 grid types | the `iquants` module docs' integer w | `d·c` (exact) | 0 |
//!
//! Per output, one f32 chain per term over the super-blocks in order:
//!
//! - `S_sb = Σ_{v<256} w_v·x_v` and `M_sb = Σ_{i<16} m_i·bsums_i` (= `Σ_v m_{v/16}·x_v`):
//!   exact integers (|S_sb| ≤ 256·128·63·127 < 2³¹), converted to f32 (rounded to nearest
//!   even beyond 2²⁴);
//! - `acc ← fma(dw·dx, f32(S_sb), acc)`, and for the types with mins
//!   `accm ← fma(dmin·dx, f32(M_sb), accm)` (`dw·dx` and `dmin·dx` rounded once each);
//! - result: `acc − accm` (types with mins), `acc` otherwise.
//!
//! Only the products `dw·dx`, the conversions, the fmas and the final difference round, so
//! any exact way of forming S_sb and M_sb gives the same bits, whatever the instruction
//! set and however many rows share a pass.

// Index loops mirror the layout equations.
#![allow(clippy::needless_range_loop)]

use super::Isa;
use super::iquants::{self, Form, IqKind};
use super::kquants::{self, Kq, Super};
use crate::formats::gguf::blocks::iq4_xs;
use crate::formats::gguf::f16_at;
use crate::formats::gguf::grids::KVALUES_IQ4NL;
use crate::linear::q8_k::{QK_K, Row, Rows};
use crate::registry::Format;

/// A block type with a q8_K kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KindK {
    /// A k-quant.
    K(Kq),
    /// A grid-coded i-quant.
    Iq(IqKind),
    /// IQ4_XS.
    Iq4Xs,
}

impl KindK {
    /// The kernel for `format`, if it has one (the plan table's `q8k_format`).
    pub(crate) fn of(format: Format) -> Option<KindK> {
        if format == Format::GgufIq4Xs {
            return Some(KindK::Iq4Xs);
        }
        Kq::of(format)
            .map(KindK::K)
            .or_else(|| IqKind::of(format).map(KindK::Iq))
    }

    /// Bytes per 256-value super-block.
    pub(crate) fn block_bytes(self) -> usize {
        match self {
            KindK::K(k) => k.block_bytes(),
            KindK::Iq(k) => k.block_bytes(),
            KindK::Iq4Xs => iq4_xs::BYTES,
        }
    }

    /// Whether the type subtracts `dmin·m` (module docs).
    fn has_min(self) -> bool {
        matches!(self, KindK::K(k) if k.has_min())
    }
}

/// One super-block as integers (module docs' table).
pub(crate) struct Ints {
    pub(crate) w: [i32; QK_K],
    pub(crate) m: [i32; 16],
    pub(crate) dw: f32,
    pub(crate) dmin: f32,
}

impl Ints {
    pub(crate) const ZERO: Ints = Ints {
        w: [0; QK_K],
        m: [0; 16],
        dw: 0.0,
        dmin: 0.0,
    };
}

/// Unpacks super-block `blk` of `kind` into `o`.
pub(crate) fn unpack(kind: KindK, blk: &[u8], o: &mut Ints) {
    match kind {
        KindK::K(kq) => {
            let mut s = Super {
                q: [0; 256],
                sc: [0; 16],
                m: [0; 16],
                d: 0.0,
                dmin: 0.0,
            };
            kquants::unpack(kq, blk, &mut s);
            for v in 0..QK_K {
                o.w[v] = s.sc[v / 16] * s.q[v] as i32;
            }
            o.m = s.m;
            o.dw = s.d;
            o.dmin = s.dmin;
        }
        KindK::Iq(k) => {
            for g in 0..8 {
                o.w[32 * g..32 * g + 32].copy_from_slice(&iquants::group(k, blk, g));
            }
            o.m = [0; 16];
            o.dw = iquants::scale(k, blk);
            o.dmin = 0.0;
        }
        KindK::Iq4Xs => {
            // Sub-block j: values kvalues_iq4nl[low nibbles of qs[16j..16j+16]], then the
            // high ones, times its 6-bit scale − 32.
            let qs = iq4_xs::QS.of(blk);
            for j in 0..8 {
                let ls = iq4_xs::scale(blk, j) as i32;
                for e in 0..16 {
                    let c = qs[16 * j + e];
                    o.w[32 * j + e] = (ls - 32) * KVALUES_IQ4NL[(c & 15) as usize] as i32;
                    o.w[32 * j + 16 + e] = (ls - 32) * KVALUES_IQ4NL[(c >> 4) as usize] as i32;
                }
            }
            o.m = [0; 16];
            o.dw = f16_at(blk, iq4_xs::D.at);
            o.dmin = 0.0;
        }
    }
}

/// Activation rows as the kernel on `isa` reads them: on the AVX-512 tier, Q2_K–Q5_K's
/// codes also in the order of that tier's kernel (`kquants_avx512`, chunk- or
/// group-major).
#[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))]
pub(crate) fn prepare(isa: Isa, kind: KindK, rows: &mut Rows) {
    #[cfg(target_arch = "x86_64")]
    if isa == Isa::Avx512
        && let KindK::K(kq) = kind
        && let Some(order) = super::kquants_avx512::arrangement(kq)
    {
        rows.arrange(order);
    }
}

/// Up to 16 consecutive weight rows `ws` (whole super-blocks of `kind`) against every
/// q8_K row `xs`: `out[i·M + r]` = the product of `ws[i]` with `xs[r]` (row of W major).
pub(crate) fn dot_row_group(isa: Isa, kind: KindK, ws: &[&[u8]], xs: &[Row<'_>], out: &mut [f32]) {
    dot_row_group_in(
        isa,
        match kind {
            KindK::Iq(k) => Form::of(isa, crate::isa::Cpu::get(), k),
            _ => Form::Blend,
        },
        true,
        kind,
        ws,
        xs,
        out,
    )
}

/// [`dot_row_group`] with the i-quant kernels in form `form`, and the AVX-512 tier's GFNI
/// form of Q2_K–Q6_K where `gfni` and the CPU has GFNI (same bits in each).
#[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))]
fn dot_row_group_in(
    isa: Isa,
    form: Form,
    gfni: bool,
    kind: KindK,
    ws: &[&[u8]],
    xs: &[Row<'_>],
    out: &mut [f32],
) {
    debug_assert_eq!(ws.len() * xs.len(), out.len());
    #[cfg(target_arch = "x86_64")]
    if isa == Isa::Avx512
        && let KindK::K(kq) = kind
        && !xs.is_empty()
        && (super::kquants_avx512::arrangement(kq).is_none()
            || xs.iter().all(|x| !x.arranged.is_empty()))
    {
        let gfni = gfni && super::kquants_avx512::gfni_form();
        // SAFETY: the AVX-512 tier is selected only after run-time detection of its
        // features, the GFNI form's (GFNI, VBMI) as well; rows arranged by `prepare` exist
        // only for the types with an arranged form, in its order, and the others read the
        // natural codes.
        unsafe { super::kquants_avx512::dot_row_group_q8k(kq, gfni, ws, xs, out) };
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if matches!(kind, KindK::Iq(_) | KindK::Iq4Xs) && crate::isa::Cpu::get().bmi1 {
        use super::iquants_avx2::{avx2, avx512, avxvnni};
        // SAFETY (each tier): as below; BMI1 is checked here (else the reference runs: same
        // bits).
        match (isa, kind) {
            (Isa::Avx512, KindK::Iq(iq)) => unsafe {
                avx512::dot_row_group_q8k(iq, ws, xs, out, form)
            },
            (Isa::AvxVnni, KindK::Iq(iq)) => unsafe {
                avxvnni::dot_row_group_q8k(iq, ws, xs, out, form)
            },
            (Isa::Avx2, KindK::Iq(iq)) => unsafe { avx2::dot_row_group_q8k(iq, ws, xs, out, form) },
            (Isa::Avx512, KindK::Iq4Xs) => unsafe { avx512::dot_row_group_q8k_iq4_xs(ws, xs, out) },
            (Isa::AvxVnni, KindK::Iq4Xs) => unsafe {
                avxvnni::dot_row_group_q8k_iq4_xs(ws, xs, out)
            },
            (Isa::Avx2, KindK::Iq4Xs) => unsafe { avx2::dot_row_group_q8k_iq4_xs(ws, xs, out) },
            _ => dot_scalar_rows(kind, ws, xs, out),
        }
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if isa.avx2() && super::gguf_q8k_avx2::covers(kind) {
        // SAFETY: a prepared weight selects a tier only after run-time detection of all
        // its features (`Isa::available`); every tier past Scalar includes AVX2, FMA and
        // F16C.
        unsafe { super::gguf_q8k_avx2::avx2::dot_row_group(kind, ws, xs, out) };
        return;
    }
    let _ = isa;
    dot_scalar_rows(kind, ws, xs, out);
}

/// [`dot_row_group`] in the scalar reference order.
fn dot_scalar_rows(kind: KindK, ws: &[&[u8]], xs: &[Row<'_>], out: &mut [f32]) {
    let mut s = Ints::ZERO;
    for (w, o) in ws.iter().zip(out.chunks_exact_mut(xs.len().max(1))) {
        dot_scalar(kind, w, xs, o, &mut s);
    }
}

/// One weight row against every activation row in the module docs' order.
fn dot_scalar(kind: KindK, w: &[u8], xs: &[Row<'_>], out: &mut [f32], s: &mut Ints) {
    let bb = kind.block_bytes();
    let mut acc = [0f32; 64];
    let mut accm = [0f32; 64];
    let nsb = xs.first().map_or(0, |x| x.d.len());
    for (chunk, oc) in xs.chunks(64).zip(out.chunks_mut(64)) {
        acc.fill(0.0);
        accm.fill(0.0);
        for sb in 0..nsb {
            unpack(kind, &w[bb * sb..bb * sb + bb], s);
            for (r, x) in chunk.iter().enumerate() {
                let xq = &x.qs[QK_K * sb..QK_K * sb + QK_K];
                let si: i32 = s.w.iter().zip(xq).map(|(&a, &b)| a * b as i32).sum();
                let dx = x.d[sb];
                acc[r] = (s.dw * dx).mul_add(si as f32, acc[r]);
                if kind.has_min() {
                    let bs = &x.bsums[16 * sb..16 * sb + 16];
                    let mi: i32 = s.m.iter().zip(bs).map(|(&a, &b)| a * b as i32).sum();
                    accm[r] = (s.dmin * dx).mul_add(mi as f32, accm[r]);
                }
            }
        }
        for (r, o) in oc.iter_mut().enumerate() {
            *o = finish(kind.has_min(), acc[r], accm[r]);
        }
    }
}

/// The shared final step of every path (module docs).
#[inline(always)]
pub(super) fn finish(has_min: bool, acc: f32, accm: f32) -> f32 {
    if has_min { acc - accm } else { acc }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::decode_row;
    use crate::dtype::Dtype;
    use crate::linear::tolerance;
    use crate::view::WeightView;

    /// `m` rows of `k` values quantized and arranged as the kernel of `isa` reads them.
    fn prepared(isa: Isa, kind: KindK, x: &[f32], m: usize, k: usize) -> Rows {
        let mut q = Rows::quantize(x, m, k);
        prepare(isa, kind, &mut q);
        q
    }

    /// Every format with a q8_K kernel.
    pub(crate) const FORMATS: [Format; 13] = [
        Format::GgufQ2_K,
        Format::GgufQ3_K,
        Format::GgufQ4_K,
        Format::GgufQ5_K,
        Format::GgufQ6_K,
        Format::GgufIq4Xs,
        Format::GgufIq1S,
        Format::GgufIq1M,
        Format::GgufIq2Xxs,
        Format::GgufIq2Xs,
        Format::GgufIq2S,
        Format::GgufIq3Xxs,
        Format::GgufIq3S,
    ];

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

    /// Offsets of the binary16 scale fields (d, then dmin) in a super-block; IQ1_M's d is
    /// spread over four nibbles (handled by [`set_d`]).
    fn f16_fields(f: Format) -> Vec<usize> {
        let b = crate::formats::gguf::blocks::block_type(f).expect("a GGUF block type");
        b.f16_fields().map(|field| field.at).collect()
    }

    /// Sets the binary16 field `i` of a super-block (`i` = 0: d, 1: dmin) to `v`.
    fn set_d(f: Format, blk: &mut [u8], i: usize, v: f32) {
        let bits = half::f16::from_f32(v).to_bits();
        if f == Format::GgufIq1M {
            for j in 0..4 {
                let at = 48 + 2 * j;
                let w = u16::from_le_bytes([blk[at], blk[at + 1]]) & 0x0FFF;
                let w = w | (((bits >> (4 * j)) & 15) << 12);
                blk[at..at + 2].copy_from_slice(&w.to_le_bytes());
            }
        } else if let Some(&at) = f16_fields(f).get(i) {
            blk[at..at + 2].copy_from_slice(&bits.to_le_bytes());
        }
    }

    /// Random super-blocks (every byte random), then the scale fields set to finite values
    /// (negative included); `zero_min` / `zero_d` zero one of the two fields.
    fn payload(f: Format, n: usize, k: usize, seed: u64, zero_d: bool, zero_min: bool) -> Vec<u8> {
        let mut rng = Lcg(seed);
        let bb = KindK::of(f).unwrap().block_bytes();
        let mut w: Vec<u8> = (0..n * k / 256 * bb).map(|_| rng.next() as u8).collect();
        for (s, blk) in w.chunks_exact_mut(bb).enumerate() {
            let d = [1.0f32, 0.25, -0.5, 3e-3, 7.0][(s + seed as usize) % 5];
            let dmin = [0.5f32, -2.0, 1.0 / 64.0][(s + seed as usize) % 3];
            set_d(f, blk, 0, if zero_d { 0.0 } else { d });
            set_d(f, blk, 1, if zero_min { 0.0 } else { dmin });
        }
        w
    }

    /// Activations: random, with some exact halves (ties), a zero block and a block with a
    /// negative max when K allows.
    fn activations(m: usize, k: usize, seed: u64) -> Vec<f32> {
        let mut rng = Lcg(seed);
        let mut x: Vec<f32> = (0..m * k)
            .map(|i| {
                let u = (rng.next() % 20001) as f32 / 10000.0 - 1.0;
                match i % 7 {
                    0 => (u * 8.0).round() / 2.0,
                    _ => u * [1.0, 30.0, 0.01][(i / 256) % 3],
                }
            })
            .collect();
        if k >= 512 {
            x[256..512].fill(0.0);
            x[300] = -40.0;
            x[301] = 40.0; // a tie with the first (negative) max
        }
        if m * k >= 1024 {
            x[768..1024].fill(0.0);
        }
        x
    }

    fn bits(v: &[f32]) -> Vec<u32> {
        v.iter()
            .map(|f| if f.is_nan() { u32::MAX } else { f.to_bits() })
            .collect()
    }

    /// Oracle: the f64 product of the decoded weights (formats::gguf's `decode_row`, itself
    /// checked against gguf-py) with x̂ = d·q (exact in f64) of the q8_K blocks; the
    /// criterion's `sum_abs` takes both terms of the types with mins (the rows decoded once
    /// with dmin = 0 and once with d = 0). Every output must meet `linear_f32acc_v1`, for
    /// row groups of 1..4 at both ends and M ∈ {1, 2, 3, 5}; every tier must return the
    /// scalar path's bits.
    #[test]
    fn every_type_meets_the_criterion_and_every_tier_equals_scalar() {
        crate::linear::cpu::tests::note_gfni(false);
        let mut checked = [0usize; 13];
        for (fi, f) in FORMATS.into_iter().enumerate() {
            let kind = KindK::of(f).unwrap();
            for (ki, k) in [256usize, 512, 768, 2048].into_iter().enumerate() {
                let n = 5;
                let seed = 100 * fi as u64 + ki as u64;
                let w = payload(f, n, k, seed, false, false);
                let decode = |p: &[u8]| {
                    let view = WeightView::single(f, n, k, p).unwrap();
                    let mut wd = vec![0f32; n * k];
                    for r in 0..n {
                        decode_row(&view, r as u64, &mut wd[r * k..(r + 1) * k]).unwrap();
                    }
                    wd
                };
                let wd = decode(&w);
                let (wa, wb) = if kind.has_min() {
                    let a = decode(&payload(f, n, k, seed, false, true));
                    let b = decode(&payload(f, n, k, seed, true, false));
                    (a, b)
                } else {
                    (wd.clone(), vec![0f32; n * k])
                };
                let rb = k / 256 * kind.block_bytes();
                let rows: Vec<&[u8]> = w.chunks_exact(rb).collect();
                for m in [1, 2, 3, 5] {
                    let x = activations(m, k, seed + 7 * m as u64);
                    let q = Rows::quantize(&x, m, k);
                    let xh: Vec<f64> =
                        q.qs.iter()
                            .enumerate()
                            .map(|(i, &c)| q.d[i / 256] as f64 * c as f64)
                            .collect();
                    let xs: Vec<Row<'_>> = (0..m).map(|i| q.row(i)).collect();
                    for g in 1..=4 {
                        for r0 in [0, n - g] {
                            let ws = &rows[r0..r0 + g];
                            let mut ys = vec![0f32; g * m];
                            dot_row_group(Isa::Scalar, kind, ws, &xs, &mut ys);
                            // Every form of the AVX-512 tier, whichever this CPU prefers
                            // (the i-quants' forms; Q2_K–Q6_K with and without GFNI).
                            for (isa, form, gfni) in Isa::tested().into_iter().flat_map(|i| {
                                Form::ALL
                                    .into_iter()
                                    .flat_map(move |f| [(i, f, false), (i, f, true)])
                            }) {
                                let qp = prepared(isa, kind, &x, m, k);
                                let xp: Vec<Row<'_>> = (0..m).map(|i| qp.row(i)).collect();
                                let mut ya = vec![0f32; g * m];
                                dot_row_group_in(isa, form, gfni, kind, ws, &xp, &mut ya);
                                assert_eq!(
                                    bits(&ys),
                                    bits(&ya),
                                    "{f} {isa:?} {form:?} gfni {gfni} k{k} m{m} g{g}"
                                );
                            }
                            for i in 0..g {
                                let at = (r0 + i) * k;
                                for r in 0..m {
                                    let xr = &xh[r * k..(r + 1) * k];
                                    let (mut yr, mut sa) = (0f64, 0f64);
                                    for j in 0..k {
                                        yr += wd[at + j] as f64 * xr[j];
                                        sa += (wa[at + j] as f64 * xr[j]).abs()
                                            + (wb[at + j] as f64 * xr[j]).abs();
                                    }
                                    let y = ys[i * m + r] as f64;
                                    let tol = tolerance(k, sa, yr, Dtype::F32);
                                    assert!(
                                        (y - yr).abs() <= tol,
                                        "{f} k{k} m{m} g{g}: {y} vs {yr} (tol {tol})"
                                    );
                                    checked[fi] += 1;
                                }
                            }
                        }
                    }
                }
            }
        }
        println!("q8_K outputs checked per type: {checked:?}");
        assert!(checked.iter().all(|&c| c > 0));
    }

    /// One super-block by hand: Q4_K with d = 1, dmin = 0.5, every 6-bit scale 2 and min 1,
    /// every code 3 (each weight 2·3 − 0.5·1 = 5.5), against x = 1 (q8_K: iscale = −127,
    /// d_x = 1/−127, codes −127): S = 2·3·(−127)·256, M = 1·(−127)·256, so
    /// y = fl(d_x·S) − fl(0.5·d_x·M), both products of d_x with an exact integer.
    #[test]
    fn hand_worked_q4_k() {
        let mut b = vec![0u8; 144];
        b[0..2].copy_from_slice(&half::f16::from_f32(1.0).to_bits().to_le_bytes());
        b[2..4].copy_from_slice(&half::f16::from_f32(0.5).to_bits().to_le_bytes());
        b[4..8].fill(2);
        b[8..12].fill(1);
        b[12..16].fill(0x12);
        b[16..144].fill(0x33);
        let q = Rows::quantize(&[1.0f32; 256], 1, 256);
        let dx = -1.0f32 / 127.0;
        assert_eq!((q.d[0], q.qs[0]), (dx, -127));
        let want = dx * (6.0 * -127.0 * 256.0) - (0.5 * dx) * (-127.0 * 256.0);
        for isa in Isa::tested() {
            let qp = prepared(isa, KindK::K(Kq::Q4K), &[1.0f32; 256], 1, 256);
            let mut y = [0f32];
            dot_row_group(isa, KindK::K(Kq::Q4K), &[&b], &[qp.row(0)], &mut y);
            assert_eq!(y[0].to_bits(), want.to_bits(), "{isa:?}");
        }
    }

    /// A non-finite activation makes its block NaN: every output meeting it is NaN, the
    /// other activation rows are unaffected; every tier agrees.
    #[test]
    fn non_finite_activations_give_nan_outputs() {
        for f in FORMATS {
            let kind = KindK::of(f).unwrap();
            let (n, k, m) = (3, 512, 3);
            let w = payload(f, n, k, 5, false, false);
            let rows: Vec<&[u8]> = w.chunks_exact(k / 256 * kind.block_bytes()).collect();
            let mut x = activations(m, k, 9);
            x[k + 3] = f32::INFINITY;
            for isa in Isa::tested() {
                let qp = prepared(isa, kind, &x, m, k);
                let xs: Vec<Row<'_>> = (0..m).map(|i| qp.row(i)).collect();
                let mut y = vec![0f32; n * m];
                dot_row_group(isa, kind, &rows, &xs, &mut y);
                for (i, v) in y.iter().enumerate() {
                    assert_eq!(v.is_nan(), i % m == 1, "{f} {isa:?} {i}");
                }
            }
        }
    }

    /// Every type at the ends of its ranges (every byte 0xFF: the largest codes, scales
    /// and mins, Q6_K's scales −1; bytes alternating 0x00/0xFF; bytes alternating
    /// 0x80/0x7F), the binary16 scales then set to finite values, against activation codes
    /// ±127: every tier equals the scalar path word for word, M ∈ {1, 2, 3, 5}.
    #[test]
    fn extreme_blocks_every_tier_equals_scalar() {
        for f in FORMATS {
            let kind = KindK::of(f).unwrap();
            let (n, k) = (4, 1024);
            for pattern in 0..3 {
                let bb = kind.block_bytes();
                let mut w = vec![0u8; n * k / 256 * bb];
                for (s, blk) in w.chunks_exact_mut(bb).enumerate() {
                    for (i, b) in blk.iter_mut().enumerate() {
                        *b = match pattern {
                            0 => 0xFF,
                            1 => [0x00, 0xFF][(i / 3) % 2],
                            _ => [0x80, 0x7F][(i + s) % 2],
                        };
                    }
                    set_d(f, blk, 0, [0.5f32, -3.0][s % 2]);
                    if kind.has_min() {
                        set_d(f, blk, 1, 0.25);
                    }
                }
                let rows: Vec<&[u8]> = w.chunks_exact(k / 256 * bb).collect();
                for m in [1, 2, 3, 5] {
                    let x: Vec<f32> = (0..m * k)
                        .map(|i| [1.0f32, -1.0, 0.5, -0.25][(i + pattern) % 4])
                        .collect();
                    let q = Rows::quantize(&x, m, k);
                    let xs: Vec<Row<'_>> = (0..m).map(|i| q.row(i)).collect();
                    let mut want = vec![0f32; n * m];
                    dot_row_group(Isa::Scalar, kind, &rows, &xs, &mut want);
                    assert!(want.iter().all(|v| v.is_finite()), "{f} p{pattern}");
                    for isa in Isa::tested() {
                        let qp = prepared(isa, kind, &x, m, k);
                        let xp: Vec<Row<'_>> = (0..m).map(|i| qp.row(i)).collect();
                        let mut got = vec![0f32; n * m];
                        dot_row_group(isa, kind, &rows, &xp, &mut got);
                        assert_eq!(bits(&got), bits(&want), "{f} {isa:?} p{pattern} m{m}");
                    }
                }
            }
        }
    }
}
