//! The lane layout the AVX-512 tile kernels share (`legacy_tile_avx512`,
//! `kquants_tile_avx512`, `grouped_tile_avx512`, `nvfp4_tile_avx512`; the 256-bit
//! `kquants_tile_avx2` takes its activation groups from here too): four weight rows (a
//! set; the kernels run one or two sets per call, each activation load serving both)
//! against each group of four activation rows, lane `4a + j` of every 512-bit vector
//! belonging to weight row a of the set and activation row j of the group. The activation side was
//! interleaved once per forward ([`Rows::arrange_quads`](crate::linear::q8_1::Rows)): chunk
//! c (4 codes) of the group's four rows is 16 bytes, broadcast to the four 128-bit lanes by
//! the load; the weight side is spread per call ([`spread_chunks`]): 128-bit lane a repeats
//! chunk c of weight row a. Each `vpdpbusd` then adds four products into each of the 16
//! (weight row, activation row) lanes, and no lane ever needs a horizontal sum.

use crate::linear::q8_1::{Row, groups_ready};
use std::arch::x86_64::*;

/// Most activation groups of one call (the engine's tile of at most 64 rows).
pub(super) const MAX_GROUPS: usize = 16;

/// Whether a tile kernel taking row groups from `min_m` rows on serves `xs`: at least that
/// many rows, at most 64, interleaved in groups of four ([`groups_ready`]).
pub(super) fn applies(min_m: usize, xs: &[Row<'_>]) -> bool {
    // The row count first: one comparison decides the one-row case.
    (min_m..=4 * MAX_GROUPS).contains(&xs.len()) && groups_ready(xs, 4)
}

/// Each group's interleaved planes: codes, block scales, block sums and half-block sums
/// (through its first row; null past the last group).
pub(super) type Quads = [(*const i8, *const f32, *const i32, *const i32); MAX_GROUPS];

/// The planes of the groups of `xs` ([`applies`] holds).
pub(super) fn quads(xs: &[Row<'_>]) -> Quads {
    let null = (
        std::ptr::null(),
        std::ptr::null(),
        std::ptr::null(),
        std::ptr::null(),
    );
    let mut out = [null; MAX_GROUPS];
    for (q, x) in out.iter_mut().zip(xs.iter().step_by(4)) {
        let x = &x.quad;
        *q = (
            x.codes.as_ptr(),
            x.d.as_ptr(),
            x.sum.as_ptr(),
            x.sum16.as_ptr(),
        );
    }
    out
}

/// `v[a]` in 128-bit lane a (each four times): a weight-side value per lane.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
pub(super) fn spread(v: __m128) -> __m512 {
    let idx = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(v))
}

/// The 32 codes (8 chunks) of weight rows 0..4 as the two sources of [`spread_chunk`]:
/// [row 0 | row 1] and [row 2 | row 3].
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
pub(super) fn pair_rows(u: [__m256i; 4]) -> (__m512i, __m512i) {
    (
        _mm512_inserti64x4::<1>(_mm512_castsi256_si512(u[0]), u[1]),
        _mm512_inserti64x4::<1>(_mm512_castsi256_si512(u[2]), u[3]),
    )
}

/// Chunk c (0..8) of the four weight rows in [`pair_rows`] order, spread: 128-bit lane a
/// repeats row a's chunk (dword 8a + c of [row 0 | row 1 | row 2 | row 3]).
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
pub(super) fn spread_chunk(lo: __m512i, hi: __m512i, c: usize) -> __m512i {
    let base = _mm512_setr_epi32(0, 0, 0, 0, 8, 8, 8, 8, 16, 16, 16, 16, 24, 24, 24, 24);
    let idx = _mm512_add_epi32(base, _mm512_set1_epi32(c as i32));
    _mm512_permutex2var_epi32(lo, idx, hi)
}

/// All eight chunks of [`spread_chunk`].
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
pub(super) fn spread_chunks(lo: __m512i, hi: __m512i) -> [__m512i; 8] {
    let mut w = [_mm512_setzero_si512(); 8];
    for (c, w) in w.iter_mut().enumerate() {
        *w = spread_chunk(lo, hi, c);
    }
    w
}

/// The shared tree over the eight accumulator lanes of group g (`acc`), each lane then
/// divided by `div` where given, as 16 values: lane (a, j) is weight row a against
/// activation row 4g + j.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
pub(super) fn tree(a: &[__m512; 8], div: Option<__m512>) -> [f32; 16] {
    let t = [
        _mm512_add_ps(a[0], a[4]),
        _mm512_add_ps(a[1], a[5]),
        _mm512_add_ps(a[2], a[6]),
        _mm512_add_ps(a[3], a[7]),
    ];
    let mut r = _mm512_add_ps(_mm512_add_ps(t[0], t[2]), _mm512_add_ps(t[1], t[3]));
    if let Some(d) = div {
        r = _mm512_div_ps(r, d);
    }
    let mut lanes = [0f32; 16];
    // SAFETY: 16 floats.
    unsafe { _mm512_storeu_ps(lanes.as_mut_ptr(), r) };
    lanes
}

/// Stores group g's [`tree`] lanes: `out[i·m + 4g + j]` for the `rows` weight rows and the
/// activation rows below `m`, each through `value(i, row, lane value)`.
#[inline]
pub(super) fn store(
    lanes: &[f32; 16],
    g: usize,
    rows: usize,
    m: usize,
    out: &mut [f32],
    value: impl Fn(usize, usize, f32) -> f32,
) {
    for i in 0..rows {
        for j in 0..4 {
            let row = 4 * g + j;
            if row < m {
                out[i * m + row] = value(i, row, lanes[4 * i + j]);
            }
        }
    }
}
