//! The 256-bit tile kernel of the k-quants Q3_K–Q6_K for several activation rows, on the
//! AVX2 and AVX-VNNI tiers: two weight rows against every group of four activation rows,
//! one 32-bit lane per (weight row, activation row) pair (lane `4a + r`: weight row a of
//! the pair, activation row r of the group), as the AVX-512 tile kernel
//! ([`super::kquants_tile_avx512`]) lays out four weight rows in 512 bits. Same bits as
//! [`super::kquants`]'s order: only the way the exact sums `S_j` and `M_j` are formed
//! differs.
//!
//! Per super-block each weight row's unsigned codes come from the AVX2 kernels' unpacking
//! ([`K::codes`], natural value order: Q3_K q + 4, Q4_K 0..15, Q5_K 0..31, Q6_K q + 32), and per 32-value block j they are spread to the lanes: for 4-value chunk c,
//! one vector whose 128-bit lane a repeats the chunk's codes of weight row a
//! (`vperm2i128` + `vpshufd`). The activation side was interleaved once per forward
//! ([`Rows::arrange_quads`](crate::linear::q8_1::Rows::arrange_quads)): chunk c of the
//! group's four rows is 16 bytes, loaded into both 128-bit lanes. Then, per block and
//! group, all in integers (no horizontal adds):
//!
//! - `P_c = vpmaddubsw(W_c, X_c)`: per lane two i16 sums of two products each, ≤ 2·63·127
//!   = 16002 (Q6_K); added in i16 while the sums stay below 2¹⁵: all 8 chunks for Q4_K
//!   (≤ 8·2·15·127 = 30480), each 16-value half's 4 for Q3_K and Q5_K (≤ 4·2·31·127 =
//!   31496), pairs of chunks for Q6_K (≤ 32004);
//! - `vpmaddwd` of each of those i16 sums by the lane's scale as an i16 pair (sc, sc), its
//!   `sc·Σ u·x` as i32 (Q4_K/Q5_K: the block's per-32 scale; Q3_K, Q6_K: the per-16 scale
//!   of the half the sum lies in), added up;
//! - the offsets (Q3_K: codes q + 4, Q6_K: q + 32) and the mins (Q4_K/Q5_K, per 32 values)
//!   through the activation's sums, interleaved as i32 (`Rows::quad_sum16`,
//!   `Rows::quad_sum`): `vpmaddwd` of a sum (|Σ| < 2¹⁵, so its i32 is the i16 pair (Σ,
//!   sign)) by the lane's pair (coefficient, 0): −4·sc or −32·sc per half, added into
//!   `S_j`; the min, forming `M_j`. The i32 partial sums stay far below 2³¹ (Q6_K's
//!   scaled unsigned sums reach about 2²⁵) and `S_j`, `M_j`, the only values converted,
//!   are the exact integers below 2²⁴ of the module docs of `kquants`;
//! - `acc[j] ← fma(d·dx, S_j, acc[j])`, `accm[j] ← fma(dmin·dx, M_j, accm[j])` per lane,
//!   and at the end the tree of `acc[j] − accm[j]` (or of `acc`) lane by lane.
//!
//! Loop order: super-block, block j, weight-row pair, activation group. A call's two pairs
//! (up to four weight rows) meet block j of every group back to back, so the group's
//! interleaved codes come from L1 the second time.

// Index loops mirror the lane equations of the module docs.
#![allow(clippy::needless_range_loop)]

use super::kquants::Kq;
use super::kquants_avx2::{K, Q3K, Q4K, Q5K, Q6K, q3_scales, scmn_k4};
use super::tile_avx512::{self, MAX_GROUPS};
use crate::formats::gguf::blocks::{q4_k, q5_k, q6_k};
use crate::linear::q8_1::Row;
use std::arch::x86_64::*;
use std::mem::MaybeUninit;

/// Activation rows from which a row group of `kq` takes this kernel, if ever: below it the
/// pass kernels of `kquants_avx2` (one weight row against up to four activation rows, no
/// lane spreading and no per-block setup to share) measured faster (AMD Zen 3, one thread,
/// 4096² and 16384 × 4096, alternated runs: even at M = 12 for Q5_K, 12–16 for Q4_K, 16–24
/// for Q3_K and Q6_K). Q2_K never takes it: its pass kernel, the cheapest of the five,
/// stayed ahead up to M = 32.
pub(super) const fn min_m(kq: Kq) -> Option<usize> {
    match kq {
        Kq::Q2K => None,
        Kq::Q5K => Some(12),
        Kq::Q4K => Some(16),
        Kq::Q3K | Kq::Q6K => Some(24),
    }
}

/// Whether this kernel serves `kq` against `xs`: at least [`min_m`] rows, at most 64,
/// whole super-blocks, interleaved in groups of four.
pub(super) fn applies(kq: Kq, xs: &[Row<'_>]) -> bool {
    min_m(kq).is_some_and(|min| tile_avx512::applies(min, xs)) && xs[0].d.len().is_multiple_of(8)
}

/// Up to four weight rows `ws` (whole super-blocks) against the rows `xs` ([`applies`]
/// holds): `out[i·M + r]`, the reference's bits.
///
/// # Safety
/// AVX2, FMA and F16C available; [`applies`] holds (the interleaved planes this kernel
/// reads through each group's first row are there).
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn dot_row_group(kq: Kq, ws: &[&[u8]], xs: &[Row<'_>], out: &mut [f32]) {
    debug_assert!(applies(kq, xs));
    let (m, nb) = (xs.len(), xs[0].d.len());
    let bytes = nb / 8 * kq.block_bytes();
    assert!((1..=4).contains(&ws.len()) && ws.iter().all(|w| w.len() >= bytes));
    assert!(out.len() >= ws.len() * m && m <= 4 * MAX_GROUPS);
    // SAFETY (each): the features and `applies` (the caller's contract); the rows hold the
    // super-blocks and `out` its outputs (checked above).
    unsafe {
        match kq {
            // Never served ([`min_m`]): the pass kernel.
            Kq::Q2K => super::kquants_avx2::avx2::dot_row_group(kq, ws, xs, out),
            Kq::Q3K => tile::<Q3K>(ws, xs, out),
            Kq::Q4K => tile::<Q4K>(ws, xs, out),
            Kq::Q5K => tile::<Q5K>(ws, xs, out),
            Kq::Q6K => tile::<Q6K>(ws, xs, out),
        }
    }
}

/// How many super-blocks ahead each weight row is prefetched.
const PF_SB: usize = 2;

/// Per weight-row pair p and activation group g, the 8 per-block accumulators; only the
/// pairs and groups of a call are initialized (zeroing all of them measured as a few
/// percent of a call with few rows).
type Acc = [[MaybeUninit<[__m256; 8]>; MAX_GROUPS]; 2];

/// One weight row's super-block header as lane words, per 16-value half h (Q3_K, Q6_K) or
/// per 32-value block j (Q4_K, Q5_K; indices 0..8): `sc` = the i16 pair (sc, sc), `c` =
/// (coefficient, 0), the coefficient of the activation sum (Q4_K, Q5_K: the min; Q3_K:
/// −4·sc; Q6_K: −32·sc).
#[derive(Clone, Copy)]
struct Head {
    sc: [i32; 16],
    c: [i32; 16],
}

/// Each i32 lane's low 16 bits in both i16 halves: the pair (v, v).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn twice(v: __m256i) -> __m256i {
    _mm256_blend_epi16::<0xAA>(v, _mm256_slli_epi32::<16>(v))
}

/// `k·v` in each i32 lane's low 16 bits, high bits 0: the pair (k·v, 0) (|k·v| < 2¹⁵).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn times(v: __m256i, k: i32) -> __m256i {
    _mm256_and_si256(
        _mm256_mullo_epi32(v, _mm256_set1_epi32(k)),
        _mm256_set1_epi32(0xFFFF),
    )
}

/// The [`Head`] of the super-block at `b`.
///
/// # Safety
/// AVX2, FMA and F16C; a whole super-block of `kq` at `b`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn head(kq: Kq, b: *const u8) -> Head {
    // SAFETY (loads): the scales lie in the block.
    let (sc, c) = unsafe {
        match kq {
            // Never served ([`min_m`]).
            Kq::Q2K => ([_mm256_setzero_si256(); 2], [_mm256_setzero_si256(); 2]),
            Kq::Q3K | Kq::Q6K => {
                let (s, k) = if kq == Kq::Q3K {
                    (q3_scales(b), -4)
                } else {
                    (_mm_loadu_si128(b.add(q6_k::SCALES.at).cast()), -32)
                };
                let (s0, s1) = (
                    _mm256_cvtepi8_epi32(s),
                    _mm256_cvtepi8_epi32(_mm_srli_si128::<8>(s)),
                );
                ([twice(s0), twice(s1)], [times(s0, k), times(s1, k)])
            }
            Kq::Q4K | Kq::Q5K => {
                const { assert!(q4_k::D.at == 0 && q5_k::D.at == 0) };
                const { assert!(q4_k::SCALES.at == q5_k::SCALES.at) };
                let v = scmn_k4(_mm_loadu_si128(b.cast()));
                let (s, m) = (
                    _mm256_cvtepu8_epi32(v),
                    _mm256_cvtepu8_epi32(_mm_srli_si128::<8>(v)),
                );
                (
                    [twice(s), _mm256_setzero_si256()],
                    [m, _mm256_setzero_si256()],
                )
            }
        }
    };
    let mut h = Head {
        sc: [0; 16],
        c: [0; 16],
    };
    // SAFETY: 16 writable i32 each.
    unsafe {
        _mm256_storeu_si256(h.sc.as_mut_ptr().cast(), sc[0]);
        _mm256_storeu_si256(h.sc.as_mut_ptr().add(8).cast(), sc[1]);
        _mm256_storeu_si256(h.c.as_mut_ptr().cast(), c[0]);
        _mm256_storeu_si256(h.c.as_mut_ptr().add(8).cast(), c[1]);
    }
    h
}

/// The lane word `a[i]` in lanes 0..4 and `b[i]` in lanes 4..8.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn lanes2(a: &i32, b: &i32) -> __m256i {
    _mm256_blend_epi32::<0xF0>(_mm256_set1_epi32(*a), _mm256_set1_epi32(*b))
}

/// `v[2p]` in lanes 0..4 and `v[2p + 1]` in lanes 4..8.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn lanes_f(v: __m128, p: usize) -> __m256 {
    let idx = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
    let idx = _mm256_add_epi32(idx, _mm256_set1_epi32(2 * p as i32));
    _mm256_permutevar8x32_ps(_mm256_castps128_ps256(v), idx)
}

/// The 16 bytes at `p` in both 128-bit lanes.
///
/// # Safety
/// 16 readable bytes at `p`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn bcast(p: *const u8) -> __m256i {
    // SAFETY: the caller's 16 bytes.
    unsafe { _mm256_broadcastsi128_si256(_mm_loadu_si128(p.cast())) }
}

/// [`dot_row_group`] for the type `U`.
///
/// # Safety
/// As [`dot_row_group`], whose checks hold.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn tile<U: K>(ws: &[&[u8]], xs: &[Row<'_>], out: &mut [f32]) {
    let kq = U::KQ;
    let bb = kq.block_bytes();
    let (m, nb) = (xs.len(), xs[0].d.len());
    let groups = m.div_ceil(4);
    let pairs = ws.len().div_ceil(2);
    // A missing weight row repeats row 0; its lanes are never stored.
    let row = |a: usize| ws.get(a).unwrap_or(&ws[0]).as_ptr();
    let wp = [row(0), row(1), row(2), row(3)];
    let mut acc: Acc = [[MaybeUninit::uninit(); MAX_GROUPS]; 2];
    let mut accm: Acc = [[MaybeUninit::uninit(); MAX_GROUPS]; 2];
    for p in 0..pairs {
        for g in 0..groups {
            acc[p][g].write([_mm256_setzero_ps(); 8]);
            accm[p][g].write([_mm256_setzero_ps(); 8]);
        }
    }
    let quads = tile_avx512::quads(xs);
    for sb in 0..nb / 8 {
        // SAFETY: super-block sb of every weight row (the caller's checks).
        let blk: [*const u8; 4] = std::array::from_fn(|a| unsafe { wp[a].add(bb * sb) });
        for a in 0..ws.len() {
            // The same row's super-block PF_SB further on: its header is read first, and
            // those loads would otherwise stall the block loop.
            let ahead = blk[a].wrapping_add(PF_SB * bb);
            let mut o = 0;
            while o < bb {
                // SAFETY: a prefetch reads no memory (an unsafe function in older Rust releases).
                #[allow(unused_unsafe)]
                unsafe {
                    _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(o).cast())
                };
                o += 64;
            }
        }
        let mut words = [0u16; 8];
        let mut heads = [Head {
            sc: [0; 16],
            c: [0; 16],
        }; 4];
        for a in 0..4 {
            // SAFETY: as above; d (and dmin) are the binary16 words at D and DMIN (Q3_K,
            // Q6_K: no dmin, its lanes unused).
            unsafe {
                heads[a] = head(kq, blk[a]);
                let word = |at: usize| std::ptr::read_unaligned(blk[a].add(at).cast::<u16>());
                let (at, atm) = kq.d_dmin();
                words[a] = word(at);
                words[4 + a] = atm.map_or(0, word);
            }
        }
        // SAFETY: 16 readable bytes.
        let w = unsafe { _mm_loadu_si128(words.as_ptr().cast()) };
        let (dd, dm) = (_mm_cvtph_ps(w), _mm_cvtph_ps(_mm_srli_si128::<8>(w)));
        let step = Step {
            blk,
            t0: 8 * sb,
            pairs,
            groups,
            quads: &quads,
            heads,
            d: [lanes_f(dd, 0), lanes_f(dd, 1)],
            dmin: [lanes_f(dm, 0), lanes_f(dm, 1)],
        };
        // SAFETY (each): block 8·sb + j < nb of every row and group (the caller's checks);
        // the accumulators initialized above.
        unsafe {
            block::<U, 0>(&step, &mut acc, &mut accm);
            block::<U, 1>(&step, &mut acc, &mut accm);
            block::<U, 2>(&step, &mut acc, &mut accm);
            block::<U, 3>(&step, &mut acc, &mut accm);
            block::<U, 4>(&step, &mut acc, &mut accm);
            block::<U, 5>(&step, &mut acc, &mut accm);
            block::<U, 6>(&step, &mut acc, &mut accm);
            block::<U, 7>(&step, &mut acc, &mut accm);
        }
    }
    for p in 0..pairs {
        for g in 0..groups {
            // SAFETY: initialized above (p < pairs, g < groups).
            let (acc, accm) = unsafe { (acc[p][g].assume_init(), accm[p][g].assume_init()) };
            let a: [__m256; 8] = if kq.has_min() {
                std::array::from_fn(|j| _mm256_sub_ps(acc[j], accm[j]))
            } else {
                acc
            };
            // The reference's tree8, lane by lane.
            let t = [
                _mm256_add_ps(a[0], a[4]),
                _mm256_add_ps(a[1], a[5]),
                _mm256_add_ps(a[2], a[6]),
                _mm256_add_ps(a[3], a[7]),
            ];
            let r = _mm256_add_ps(_mm256_add_ps(t[0], t[2]), _mm256_add_ps(t[1], t[3]));
            let mut lanes = [0f32; 8];
            // SAFETY: 8 writable floats.
            unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), r) };
            for a in 0..2 {
                let i = 2 * p + a;
                for r in 0..4 {
                    let row = 4 * g + r;
                    if i < ws.len() && row < m {
                        out[i * m + row] = lanes[4 * a + r];
                    }
                }
            }
        }
    }
}

/// What the eight blocks of a super-block share.
struct Step<'a> {
    /// The super-block of each weight row (a missing row repeats row 0).
    blk: [*const u8; 4],
    /// The super-block's first block in the rows.
    t0: usize,
    /// Weight-row pairs and activation groups of the call.
    pairs: usize,
    groups: usize,
    quads: &'a tile_avx512::Quads,
    heads: [Head; 4],
    /// d and dmin of each pair's lanes.
    d: [__m256; 2],
    dmin: [__m256; 2],
}

/// Block J of the super-block `s` (block `s.t0 + J` of the rows) for every weight-row pair
/// and activation group, into `acc[p][g][J]` and `accm[p][g][J]`.
///
/// # Safety
/// AVX2, FMA and F16C; `s.blk` points at whole super-blocks, block `s.t0 + J` lies in
/// every group's interleaved planes, and `acc[p][g]`, `accm[p][g]` are initialized for
/// every p < pairs, g < groups.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn block<U: K, const J: usize>(s: &Step<'_>, acc: &mut Acc, accm: &mut Acc) {
    let (t, blk, heads) = (s.t0 + J, &s.blk, &s.heads);
    let (pairs, groups, quads) = (s.pairs, s.groups, s.quads);
    let kq = U::KQ;
    for p in 0..pairs {
        // SAFETY: the caller's super-blocks.
        let (u0, u1) = unsafe { (U::codes::<J>(blk[2 * p]), U::codes::<J>(blk[2 * p + 1])) };
        let (lo, hi) = (
            _mm256_permute2x128_si256::<0x20>(u0, u1),
            _mm256_permute2x128_si256::<0x31>(u0, u1),
        );
        let w = [
            _mm256_shuffle_epi32::<0x00>(lo),
            _mm256_shuffle_epi32::<0x55>(lo),
            _mm256_shuffle_epi32::<0xAA>(lo),
            _mm256_shuffle_epi32::<0xFF>(lo),
            _mm256_shuffle_epi32::<0x00>(hi),
            _mm256_shuffle_epi32::<0x55>(hi),
            _mm256_shuffle_epi32::<0xAA>(hi),
            _mm256_shuffle_epi32::<0xFF>(hi),
        ];
        let (h0, h1) = if U::PER32 { (J, J) } else { (2 * J, 2 * J + 1) };
        let (a, b) = (&heads[2 * p], &heads[2 * p + 1]);
        let (sc_lo, sc_hi) = (lanes2(&a.sc[h0], &b.sc[h0]), lanes2(&a.sc[h1], &b.sc[h1]));
        let (c_lo, c_hi) = (lanes2(&a.c[h0], &b.c[h0]), lanes2(&a.c[h1], &b.c[h1]));
        let (d, dmin) = (s.d[p], s.dmin[p]);
        for g in 0..groups {
            let (xc, xd, xsum, xsum16) = quads[g];
            // SAFETY: block t of group g's planes: 128 codes, 4 scales and sums, 8 half sums.
            unsafe {
                let xc = xc.add(128 * t).cast::<u8>();
                let mut pr = [_mm256_setzero_si256(); 8];
                for c in 0..8 {
                    pr[c] = _mm256_maddubs_epi16(w[c], bcast(xc.add(16 * c)));
                }
                let add = _mm256_add_epi16;
                let half = |a: usize| add(add(pr[a], pr[a + 1]), add(pr[a + 2], pr[a + 3]));
                let s16 = || {
                    let s = xsum16.add(8 * t).cast::<u8>();
                    (bcast(s), bcast(s.add(16)))
                };
                let (s, mn) = match kq {
                    Kq::Q4K | Kq::Q5K => {
                        let s = if kq == Kq::Q4K {
                            _mm256_madd_epi16(add(half(0), half(4)), sc_lo)
                        } else {
                            _mm256_add_epi32(
                                _mm256_madd_epi16(half(0), sc_lo),
                                _mm256_madd_epi16(half(4), sc_lo),
                            )
                        };
                        let sx = bcast(xsum.add(4 * t).cast());
                        (s, _mm256_madd_epi16(sx, c_lo))
                    }
                    _ => {
                        let s = if kq == Kq::Q6K {
                            let two = |a: usize| add(pr[a], pr[a + 1]);
                            _mm256_add_epi32(
                                _mm256_add_epi32(
                                    _mm256_madd_epi16(two(0), sc_lo),
                                    _mm256_madd_epi16(two(2), sc_lo),
                                ),
                                _mm256_add_epi32(
                                    _mm256_madd_epi16(two(4), sc_hi),
                                    _mm256_madd_epi16(two(6), sc_hi),
                                ),
                            )
                        } else {
                            _mm256_add_epi32(
                                _mm256_madd_epi16(half(0), sc_lo),
                                _mm256_madd_epi16(half(4), sc_hi),
                            )
                        };
                        let (s_lo, s_hi) = s16();
                        let k = _mm256_add_epi32(
                            _mm256_madd_epi16(s_lo, c_lo),
                            _mm256_madd_epi16(s_hi, c_hi),
                        );
                        (_mm256_add_epi32(s, k), k)
                    }
                };
                let dx = _mm256_castsi256_ps(bcast(xd.add(4 * t).cast()));
                // The accumulators of (p, g): initialized by the caller (p < pairs,
                // g < groups).
                let a = &mut acc[p][g].assume_init_mut()[J];
                *a = _mm256_fmadd_ps(_mm256_mul_ps(d, dx), _mm256_cvtepi32_ps(s), *a);
                if kq.has_min() {
                    let a = &mut accm[p][g].assume_init_mut()[J];
                    *a = _mm256_fmadd_ps(_mm256_mul_ps(dmin, dx), _mm256_cvtepi32_ps(mn), *a);
                }
            }
        }
    }
}
