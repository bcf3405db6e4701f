//! The AMX kernel of the grouped formats (q2/t2/q4/q5/q6/q8) against q8_1 activations for
//! many activation rows (the AVX-512 tier where [`Cpu::amx_int8`](crate::isa::Cpu::amx_int8)
//! holds): up to 16 weight rows against the activation rows in groups of 16, the exact
//! block sums from `tdpbusd` ([`super::amx`]), as `legacy_amx` does for the legacy GGUF
//! types. Same bits as [`super::grouped_q8`]'s order: only the way the integer sums `T_b`
//! are formed differs.
//!
//! Each weight row's runs of four blocks are unpacked by the 512-bit kernels' own code
//! ([`Kernel::unpack_run`]: 128 unsigned codes `u = code + 2^OFFSET_LOG2` in the order of
//! that tier's arranged activations). A block's codes there are eight 4-code chunks
//! ([`chunks`]), pairwise in 8-byte words, so one `vpermt2q` per two blocks gathers each
//! block's 32 codes together ([`words`]): 16 rows × 32 codes are tile A. The activation
//! rows are arranged per block in the same order ([`order`]: run position 32q + j holds the
//! element whose weight code is byte j of block q's tile row), then interleaved in groups
//! of 16 ([`Rows::arrange_groups`]): tile B. C = A·B, minus `2^OFFSET_LOG2·Σx` (the
//! activation block sums, a shift), is `T_b` for every (weight row, activation row) pair,
//! exact; then with the 16 activation rows in the lanes of one 512-bit vector, the
//! reference's steps: `acc[b mod 8] ← fma(s_g·dx_b, T_b, acc[b mod 8])` and the shared
//! tree.
//!
//! [`Rows::arrange_groups`]: crate::linear::q8_1::Rows::arrange_groups

use super::amx::{self, Aligned, MAX_M, MAX_ROWS, Tiles, WIDTH, store_lanes};
use super::float::Grouped;
use super::grouped_q8::{GRow, check_rows};
use super::grouped_q8_avx512::{FIELDS, Kernel, NIBBLES4, Q2, Q4, Q5, Q6, Q8, T2};
use super::grouped_tile_avx512::chunks;
use super::tile_avx512::tree;
use crate::linear::q8_1::{Row, Rows};
use std::arch::x86_64::*;

/// Activation rows from which a row group takes this kernel, where the CPU has AMX.
pub(super) const MIN_M: usize = 16;

/// The element (0..128) of a run of four blocks at each position of this kernel's order:
/// position 32q + 4k + e is byte e of chunk `chunks(kind)[q][k]` of the 512-bit kernels'
/// arrangement (identity for q8, whose codes are natural).
const fn order(kind: Grouped) -> [u8; 128] {
    let base = match kind {
        Grouped::Q2 | Grouped::T2 => FIELDS,
        Grouped::Q4 | Grouped::Q5 | Grouped::Q6 => NIBBLES4,
        Grouped::Q8 => {
            let mut p = [0u8; 128];
            let mut j = 0;
            while j < 128 {
                p[j] = j as u8;
                j += 1;
            }
            p
        }
    };
    let ch = chunks(kind);
    let mut p = [0u8; 128];
    let mut j = 0;
    while j < 128 {
        p[j] = base[4 * ch[j / 32][(j % 32) / 4] + j % 4];
        j += 1;
    }
    p
}

/// [`order`] of each format (the arrangement tables `Rows::arrange_pairs` takes).
const ORDERS: [[u8; 128]; 6] = [
    order(Grouped::Q2),
    order(Grouped::T2),
    order(Grouped::Q4),
    order(Grouped::Q5),
    order(Grouped::Q6),
    order(Grouped::Q8),
];

/// The index of `kind` in [`ORDERS`] and [`WORDS`].
const fn index(kind: Grouped) -> usize {
    match kind {
        Grouped::Q2 => 0,
        Grouped::T2 => 1,
        Grouped::Q4 => 2,
        Grouped::Q5 => 3,
        Grouped::Q6 => 4,
        Grouped::Q8 => 5,
    }
}

/// For blocks (0, 1) and (2, 3) of a run, the 8-byte words of the unpacked run (0..8 the
/// first vector of [`Kernel::unpack_run`], 8..16 the second) that make up each block's 32
/// codes in [`order`]: the `vpermt2q` indices of the two tile rows. Every chunk pair
/// (2i, 2i + 1) of a block is one aligned word (checked at compile time).
const fn words(kind: Grouped) -> [[i64; 8]; 2] {
    let ch = chunks(kind);
    let mut w = [[0i64; 8]; 2];
    let mut q = 0;
    while q < 4 {
        let mut i = 0;
        while i < 4 {
            let c = ch[q][2 * i];
            assert!(c.is_multiple_of(2) && ch[q][2 * i + 1] == c + 1);
            w[q / 2][4 * (q % 2) + i] = (c / 2) as i64;
            i += 1;
        }
        q += 1;
    }
    w
}

/// [`words`] of each format.
const WORDS: [[[i64; 8]; 2]; 6] = [
    words(Grouped::Q2),
    words(Grouped::T2),
    words(Grouped::Q4),
    words(Grouped::Q5),
    words(Grouped::Q6),
    words(Grouped::Q8),
];

/// The activation rows as this kernel reads them (from rows quantized in natural order,
/// before any other arrangement): each run's codes in [`order`], interleaved in groups of
/// 16. The rows' `pairs` plane is left as the 512-bit kernels read it (their arrangement of
/// `kind`), so that every kernel of the tier can serve these rows.
pub(super) fn prepare(kind: Grouped, mut rows: Rows) -> Rows {
    rows.arrange_pairs(&ORDERS[index(kind)], false);
    rows.arrange_groups(WIDTH, true);
    super::grouped_q8_avx512::arrange(kind, rows)
}

/// Whether this kernel serves `xs`: AMX there, at least [`MIN_M`] rows, at most 64, whole
/// runs of four blocks, interleaved in groups of 16 ([`amx::rows_ready`]; that they were
/// arranged for the weight's format, by [`prepare`], is the caller's to keep).
pub(super) fn applies(xs: &[Row<'_>]) -> bool {
    amx::rows_ready(MIN_M, xs) && xs[0].d.len().is_multiple_of(4)
}

/// Up to 16 weight rows `ws` against the rows `xs` ([`applies`] holds, `xs` from
/// [`prepare`] for `kind`): `out[i·M + r]`, the reference's bits.
///
/// # Safety
/// The AVX-512 tier's features (F/BW/VL/VNNI, with AVX2, FMA, F16C); [`applies`] holds (AMX
/// usable; the interleaved planes read through each group's first row are there).
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
pub(super) unsafe fn dot_row_group(
    kind: Grouped,
    ws: &[GRow<'_>],
    xs: &[Row<'_>],
    out: &mut [f32],
) {
    debug_assert!(applies(xs));
    assert!((1..=MAX_ROWS).contains(&ws.len()));
    assert!(out.len() >= ws.len() * xs.len() && xs.len() <= MAX_M);
    // SAFETY (each): the features and `applies` (the caller's contract); `run` checks the
    // rows.
    unsafe {
        match kind {
            Grouped::Q2 => run::<Q2>(kind, ws, xs, out),
            Grouped::T2 => run::<T2>(kind, ws, xs, out),
            Grouped::Q4 => run::<Q4>(kind, ws, xs, out),
            Grouped::Q5 => run::<Q5>(kind, ws, xs, out),
            Grouped::Q6 => run::<Q6>(kind, ws, xs, out),
            Grouped::Q8 => run::<Q8>(kind, ws, xs, out),
        }
    }
}

/// [`dot_row_group`] for the format `K`.
///
/// # Safety
/// As [`dot_row_group`], whose checks hold.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn run<K: Kernel>(kind: Grouped, ws: &[GRow<'_>], xs: &[Row<'_>], out: &mut [f32]) {
    // Every pointer read below stays inside these.
    check_rows(kind, ws, xs, K::BLOCK_BYTES, K::HI_BYTES, false);
    let (m, nb) = (xs.len(), xs[0].d.len());
    let rows = ws.len();
    let shift = _mm_cvtsi32_si128(K::OFFSET_LOG2);
    let [w01, w23] = WORDS[index(kind)];
    // SAFETY: AVX-512 F (the caller's contract).
    let (w01, w23) = unsafe {
        (
            _mm512_loadu_epi64(w01.as_ptr()),
            _mm512_loadu_epi64(w23.as_ptr()),
        )
    };
    // Up to eight blocks' unsigned codes, 256 bytes per row (rows past `ws.len()` stay
    // zero: their outputs are never stored); the block sums C of those blocks.
    let mut buf = Aligned([0u8; MAX_ROWS * 256]);
    let mut c = Aligned([[0i32; WIDTH * MAX_ROWS]; 8]);
    // Per weight row and block: its group's scale s_g as f32.
    let mut sw = [[0f32; 8]; MAX_ROWS];
    // SAFETY: AMX usable (the caller's contract).
    let tiles = unsafe { Tiles::configure(32) };
    // Each run is unpacked once for every group of 16 activation rows; the accumulators
    // of all groups (at most four) stay in this frame.
    let groups = m.div_ceil(WIDTH);
    let planes = amx::group_planes(xs);
    let mut accs = [[[_mm512_setzero_ps(); 8]; MAX_ROWS]; MAX_M / WIDTH];
    for b0 in (0..nb).step_by(8) {
        // Whole runs of four blocks (`applies`): 4 or 8 blocks.
        let cnt = 8.min(nb - b0);
        // SAFETY (all): blocks b0 .. b0 + cnt ≤ nb of every weight row (its codes, plane-1
        // bytes and scales: `check_rows`) and of each group's 512·nb codes and 16·nb scales
        // and sums (the caller's checks); the buffers are the sizes the tiles read and
        // write.
        unsafe {
            for (n, w) in ws.iter().enumerate() {
                for r in 0..cnt / 4 {
                    let [u0, u1] = K::unpack_run(w.codes.as_ptr(), w.hi.as_ptr(), b0 + 4 * r);
                    let at = buf.0.as_mut_ptr().add(256 * n + 128 * r);
                    _mm512_store_si512(at.cast(), _mm512_permutex2var_epi64(u0, w01, u1));
                    _mm512_store_si512(at.add(64).cast(), _mm512_permutex2var_epi64(u0, w23, u1));
                }
                let mut words = [0u16; 8];
                for (i, word) in words.iter_mut().enumerate().take(cnt) {
                    let s = 32 * (b0 + i) / kind.group();
                    *word = u16::from_le_bytes([w.scales[2 * s], w.scales[2 * s + 1]]);
                }
                let s = _mm256_cvtph_ps(_mm_loadu_si128(words.as_ptr().cast()));
                _mm256_storeu_ps(sw[n].as_mut_ptr(), s);
            }
            for (&(xc, xd, xsum), acc) in planes.iter().zip(accs.iter_mut()).take(groups) {
                for i in (0..cnt).step_by(2) {
                    let a = buf.0.as_ptr();
                    let (c0, c1) = c.0.split_at_mut(i + 1);
                    tiles.block_sums2(
                        [a.add(32 * i), a.add(32 * (i + 1))],
                        256,
                        [xc.add(512 * (b0 + i)), xc.add(512 * (b0 + i + 1))],
                        [c0[i].as_mut_ptr(), c1[0].as_mut_ptr()],
                    );
                }
                let mut off = [_mm512_setzero_si512(); 8];
                let mut dx = [_mm512_setzero_ps(); 8];
                for i in 0..cnt {
                    let s = _mm512_loadu_si512(xsum.add(WIDTH * (b0 + i)).cast());
                    off[i] = _mm512_sll_epi32(s, shift);
                    dx[i] = _mm512_loadu_ps(xd.add(WIDTH * (b0 + i)));
                }
                for n in 0..rows {
                    for i in 0..cnt {
                        let v = _mm512_load_si512(c.0[i].as_ptr().add(WIDTH * n).cast());
                        let t = _mm512_cvtepi32_ps(_mm512_sub_epi32(v, off[i]));
                        let d = _mm512_mul_ps(_mm512_set1_ps(sw[n][i]), dx[i]);
                        acc[n][i] = _mm512_fmadd_ps(d, t, acc[n][i]);
                    }
                }
            }
        }
    }
    for (g, acc) in accs.iter().enumerate().take(groups) {
        for (n, a) in acc.iter().enumerate().take(rows) {
            store_lanes(out, &tree(a, None), n, m, g);
        }
    }
    drop(tiles);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`order`] is a permutation of each run, and block q's positions hold exactly its 32
    /// elements.
    #[test]
    fn each_block_keeps_its_own_elements() {
        for kind in [
            Grouped::Q2,
            Grouped::T2,
            Grouped::Q4,
            Grouped::Q5,
            Grouped::Q6,
            Grouped::Q8,
        ] {
            let o = ORDERS[index(kind)];
            let mut seen = [false; 128];
            for (j, &e) in o.iter().enumerate() {
                assert_eq!(e as usize / 32, j / 32, "{kind:?} position {j}");
                assert!(!seen[e as usize]);
                seen[e as usize] = true;
            }
        }
    }
}
