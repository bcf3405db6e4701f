//! Unit tests of the CPU engine, one file per kernel family. Integration tests (every
//! format, both activation profiles, the C API) live in `tests/linear*.rs`.

pub(super) use crate::decode;
pub(super) use crate::dtype::Dtype;
pub(super) use crate::layouts;
pub(super) use crate::linear::cpu::Isa;
pub(super) use crate::linear::cpu::engine::Kernel;
pub(super) use crate::linear::{PreparedWeight, q8_1, tolerance};
pub(super) use crate::registry::{Format, Layout};
pub(super) use crate::view::WeightView;

mod decoded;
mod fp8;
mod grouped;
mod nvfp4;
mod rows;

pub(super) fn weight(format: Format, n: usize, k: usize) -> Vec<u8> {
    let info = format.info();
    let bytes = n * k / info.block_values as usize * info.block_bytes as usize;
    let mut w: Vec<u8> = (0..bytes).map(|i| (i * 131 % 251) as u8).collect();
    match format {
        Format::Bf16 => {
            for c in w.chunks_exact_mut(2) {
                c[1] = 0x3C | (c[1] & 0x81); // finite, moderate exponents
            }
        }
        _ => {
            for b in w.chunks_exact_mut(info.block_bytes as usize) {
                let at = if format == Format::GgufQ6_K { 208 } else { 0 };
                b[at..at + 2].copy_from_slice(&half::f16::from_f32(0.01).to_bits().to_le_bytes());
                if format == Format::GgufQ4_K {
                    b[2..4].copy_from_slice(&half::f16::from_f32(0.003).to_bits().to_le_bytes());
                }
            }
        }
    }
    w
}

/// Outputs (bits) of `w` for x on every tier the machine has, M = `m` and each row alone;
/// the AVX-512 tier with its 512-bit float kernel for every row kind and for the kinds
/// only that take it on every CPU (`float::all_512`).
pub(super) fn grouped_runs(w: &mut PreparedWeight<'_>, x: &[f32], m: usize) -> Vec<Vec<u32>> {
    let (n, k) = (w.rows(), w.cols());
    let mut results = Vec::new();
    let mut runs: Vec<(Isa, bool)> = Isa::tested().into_iter().map(|i| (i, true)).collect();
    if runs.iter().any(|r| r.0 == Isa::Avx512) {
        runs.push((Isa::Avx512, false));
    }
    for (isa, all_512) in runs {
        w.set_isa(isa).unwrap();
        *w.cpu_all_512() = all_512;
        let mut y = vec![0f32; m * n];
        w.forward_f32(x, m, None, &mut y).unwrap();
        results.push(y.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
        // Each activation row alone (the M = 1 kernel, no materialization).
        let mut single = Vec::new();
        for r in 0..m {
            let mut y1 = vec![0f32; n];
            w.forward_f32(&x[r * k..(r + 1) * k], 1, None, &mut y1)
                .unwrap();
            single.extend(y1.iter().map(|v| v.to_bits()));
        }
        results.push(single);
    }
    *w.cpu_all_512() = super::float::all_512();
    results
}

/// A xorshift64 stream: the tier tests' reproducible random words.
pub(crate) fn xorshift(mut s: u64) -> impl FnMut() -> u64 {
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    }
}

/// Result words, every NaN as one word: a NaN's sign and payload are not specified
/// (docs/linear.md).
pub(super) fn words(v: &[f32]) -> Vec<u32> {
    v.iter()
        .map(|f| if f.is_nan() { u32::MAX } else { f.to_bits() })
        .collect()
}

/// Notes on stderr the AVX-512 instances this machine cannot run (GFNI; with `vbmi`, also
/// AVX-512 VBMI): the tests' GFNI runs then repeat the plain form.
pub(crate) fn note_gfni(vbmi: bool) {
    let cpu = crate::isa::Cpu::get();
    if Isa::Avx512.available() && !(cpu.gfni && (!vbmi || cpu.avx512vbmi)) {
        eprintln!(
            "note: no GFNI/VBMI on this machine, the AVX-512 tier's GFNI forms are not tested"
        );
    }
}

/// The tier check of a block family against q8_1 activations, shared by the legacy GGUF,
/// grouped and nvfp4 kernels. For each M of [`TIER_MS`]: M rows of K random activations
/// (block 1 all zero, so a zero activation scale is met) are quantized once for the scalar
/// reference and once per tier by `prepare`; for every tier the machine has, every group of
/// 1..=`most` (the rows a call of the family takes; at most `n`) of the `n` weight rows at
/// both ends gives `dot`'s words equal to `Isa::Scalar`'s.
/// `dot(isa, rows, xs, out)` writes `rows.len()·M` results. Returns the cases run.
pub(super) fn q8_1_tiers(
    next: &mut impl FnMut() -> u64,
    n: usize,
    most: usize,
    k: usize,
    what: &str,
    prepare: impl Fn(Isa, q8_1::Rows) -> q8_1::Rows,
    dot: impl Fn(Isa, std::ops::Range<usize>, &[q8_1::Row<'_>], &mut [f32]),
) -> usize {
    let mut cases = 0;
    for m in TIER_MS {
        let mut x: Vec<f32> = (0..m * k)
            .map(|_| (next() >> 40) as f32 / (1u64 << 24) as f32 - 0.5)
            .collect();
        x[32..64].fill(0.0);
        let reference = q8_1::Rows::quantize(&x, m, k);
        let xs: Vec<q8_1::Row<'_>> = (0..m).map(|i| reference.row(i)).collect();
        for isa in Isa::tested() {
            let q = prepare(isa, q8_1::Rows::quantize(&x, m, k));
            let xq: Vec<q8_1::Row<'_>> = (0..m).map(|i| q.row(i)).collect();
            for g in (1..=most).filter(|&g| g <= n) {
                for r0 in [0, n - g] {
                    let mut want = vec![0f32; g * m];
                    dot(Isa::Scalar, r0..r0 + g, &xs, &mut want);
                    let mut got = vec![0f32; g * m];
                    dot(isa, r0..r0 + g, &xq, &mut got);
                    assert_eq!(words(&got), words(&want), "{what} {isa:?} m{m} g{g} r0{r0}");
                    cases += 1;
                }
            }
        }
    }
    cases
}

/// The activation row counts of [`q8_1_tiers`]: M = 1 (the rows pass) and M > 1 (groups
/// of four activation rows, with remainders).
pub(super) const TIER_MS: [usize; 9] = [1, 2, 3, 4, 5, 6, 8, 13, 17];
