//! The x86-64 GGUF row dequantizers, one source for every vector tier.
//!
//! [`gguf_kernels`] expands to the dequantizer of every block type and to `dequantizer`,
//! compiled for the target features it is given. Each tier module (`avx2`, `avx512`)
//! defines the value stores the kernels call, at its vector width, and expands the macro
//! once:
//!
//! - `store_scaled(y, q, d0, d1)`: `y[j] = d·q[j]` for 32 i8 codes (`d0` for 0..16, `d1`
//!   for 16..32); `store_affine(y, q, d0, m0, d1, m1)`: `y[j] = d·q[j] − m`;
//! - `q8_block(q, y, d)`: 32 i8 codes straight from memory;
//! - `q4_k_chunk(y, q, s, j)`: the 64 values of 32 Q4_K code bytes (low nibbles with
//!   `s[j]`, `s[8 + j]`, high nibbles with `s[j + 1]`, `s[9 + j]`);
//! - `store_affine_u8(y, q, d, m)`: `y[j] = d·q[j] − m` for 32 u8 codes;
//! - `grid16(y, db, a, b)`: `(db·grid[j])·±1` for two grid points (`(grid, signs)`);
//!   `grid16_iq1(y, dl, a, b)`: `dl·(grid[j] + delta)` for two IQ1 points (`(grid, delta)`).
//!
//! Each kernel computes exactly the scalar kernel's f32 operations (same operands, same
//! order, no FMA): codes are built as integers in vectors and converted exactly, the
//! block's binary16 fields are converted by the same scalar [`f16_at`](super::f16_at) or by
//! F16C (an exact widening, like `f16_at`; `avx2`'s test checks all 65 536 words), and scale
//! products that the scalar code forms per sub-block (`d·sc`, `dmin·m`) are formed the same
//! way (same two f32 operands, one rounding) before broadcasting. So every tier is
//! bit-identical to the scalar path (`tests/gguf_decode.rs` checks every tier on every
//! fixture).
//!
//! # Safety
//! Every function of the expansion requires its tier's features; callers go through
//! `dequantizer`, whose caller checks that the machine runs the tier. Inputs are whole
//! blocks and their outputs (`chunks_exact`), so every load and store is in bounds.

/// `(d·sc, dmin·m)` of the 8 sub-blocks of a Q4_K/Q5_K super-block `$b` (d, dmin at 0 and 2,
/// the 12 packed scale bytes at 4), as `[f32; 16]`: `d·sc` in 0..8, `dmin·m` in 8..16.
/// A macro, not a function: LLVM kept a shared helper out of line, and the call (with its
/// `vzeroupper` and reloaded constants) cost ~15% of Q4_K's time. Expands only inside the
/// kernels of [`gguf_kernels`] (AVX2 + F16C at least).
macro_rules! k4_scales {
    ($b:expr) => {{
        let b: &[u8] = $b;
        let dd = _mm_cvtph_ps(_mm_cvtsi32_si128(u32_at(b, q4_k::D.at) as i32));
        let d = _mm256_broadcastss_ps(dd);
        let dmin = _mm256_broadcastss_ps(_mm_movehdup_ps(dd));
        // The packing of `scale_min_k4`, four sub-blocks per u32 (byte j of a word is
        // sub-block j or j + 4): the low 6 bits of bytes 0..4 (scales) and 4..8 (mins) for
        // sub-blocks 0..4; for 4..8 a nibble of bytes 8..12 below the top 2 bits of bytes
        // 0..4 (scales) or 4..8 (mins). Masks keep bits from crossing bytes.
        let sc = q4_k::SCALES.at;
        let (w0, w1, w2) = (u32_at(b, sc), u32_at(b, sc + 4), u32_at(b, sc + 8));
        let sc_hi = (w2 & 0x0F0F_0F0F) | ((w0 >> 2) & 0x3030_3030);
        let m_hi = ((w2 >> 4) & 0x0F0F_0F0F) | ((w1 >> 2) & 0x3030_3030);
        let sc = (w0 & 0x3F3F_3F3F) as u64 | (sc_hi as u64) << 32;
        let m = (w1 & 0x3F3F_3F3F) as u64 | (m_hi as u64) << 32;
        let f = |v: u64| _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(v as i64)));
        let mut s = [0f32; 16];
        // SAFETY: `s` holds 16 floats.
        unsafe {
            _mm256_storeu_ps(s.as_mut_ptr(), _mm256_mul_ps(d, f(sc)));
            _mm256_storeu_ps(s.as_mut_ptr().add(8), _mm256_mul_ps(dmin, f(m)));
        }
        s
    }};
}

/// A kernel of [`gguf_kernels`] as a safe `fn` (handed out only after the caller checked
/// that the machine runs the tier).
macro_rules! safe_kernel {
    ($k:ident) => {{
        fn wrapper(blocks: &[u8], out: &mut [f32]) {
            // SAFETY: the tier was detected before this wrapper was returned.
            unsafe { $k(blocks, out) }
        }
        wrapper as DequantizeFn
    }};
}

/// The GGUF dequantizers compiled for the target features `$feat` (module docs).
macro_rules! gguf_kernels {
    ($feat:literal) => {
        /// This tier's kernel for `format`. Only for a caller that checked that the machine
        /// runs the tier.
        pub(in crate::formats::gguf) fn dequantizer(format: Format) -> Option<DequantizeFn> {
            // Each wrapper is a safe fn: it is only handed out after the caller's detection.
            Some(match format {
                Format::GgufQ8_0 => safe_kernel!(q8_0),
                Format::GgufQ4_0 => safe_kernel!(q4_0),
                Format::GgufQ5_0 => safe_kernel!(q5_0),
                Format::GgufQ2_0 => safe_kernel!(q2_0),
                Format::GgufQ2_K => safe_kernel!(q2_k),
                Format::GgufQ3_K => safe_kernel!(q3_k),
                Format::GgufQ4_K => safe_kernel!(q4_k),
                Format::GgufQ5_K => safe_kernel!(q5_k),
                Format::GgufQ6_K => safe_kernel!(q6_k),
                Format::GgufIq4Nl => safe_kernel!(iq4_nl),
                Format::GgufIq4Xs => safe_kernel!(iq4_xs),
                Format::GgufIq2Xxs => safe_kernel!(iq2_xxs),
                Format::GgufIq2Xs => safe_kernel!(iq2_xs),
                Format::GgufIq2S => safe_kernel!(iq2_s),
                Format::GgufIq3Xxs => safe_kernel!(iq3_xxs),
                Format::GgufIq3S => safe_kernel!(iq3_s),
                Format::GgufIq1S => safe_kernel!(iq1_s),
                Format::GgufIq1M => safe_kernel!(iq1_m),
                _ => return None,
            })
        }

        #[target_feature(enable = $feat)]
        #[inline]
        unsafe fn load16(b: &[u8]) -> __m128i {
            // SAFETY: the tier's features are enabled; every access is to whole blocks in bounds.
            unsafe {
                let b = &b[..16];
                // SAFETY: 16 readable bytes; unaligned load.
                unsafe { _mm_loadu_si128(b.as_ptr().cast()) }
            }
        }

        #[target_feature(enable = $feat)]
        #[inline]
        unsafe fn load32(b: &[u8]) -> __m256i {
            // SAFETY: the tier's features are enabled; every access is to whole blocks in bounds.
            unsafe {
                let b = &b[..32];
                // SAFETY: 32 readable bytes; unaligned load.
                unsafe { _mm256_loadu_si256(b.as_ptr().cast()) }
            }
        }

        /// 16 bytes → 32 nibbles: element j < 16 the low nibble of byte j, element j + 16 its high.
        #[target_feature(enable = $feat)]
        #[inline]
        unsafe fn nibbles(qs: __m128i) -> __m256i {
            // SAFETY: the tier's features are enabled; every access is to whole blocks in bounds.
            unsafe {
                let m4 = _mm_set1_epi8(0x0F);
                let lo = _mm_and_si128(qs, m4);
                let hi = _mm_and_si128(_mm_srli_epi16::<4>(qs), m4);
                _mm256_set_m128i(hi, lo)
            }
        }

        /// 0xFF in byte j where bit `bit` of byte j of `v` is set, else 0.
        #[target_feature(enable = $feat)]
        #[inline]
        unsafe fn bit_set(v: __m256i, bit: u32) -> __m256i {
            // SAFETY: the tier's features are enabled; every access is to whole blocks in bounds.
            unsafe {
                let m = _mm256_set1_epi8((1u8 << bit) as i8);
                _mm256_cmpeq_epi8(_mm256_and_si256(v, m), m)
            }
        }

        /// The binary16 words at `g[at + stride·j]`, j = 0..8, as f32: one exact F16C widening
        /// for 8 blocks (an F16C conversion per block measured slower than `f16_at`).
        #[target_feature(enable = $feat)]
        #[inline]
        unsafe fn f16x8(g: &[u8], stride: usize, at: usize) -> __m256 {
            // SAFETY: the tier's features are enabled (module doc).
            unsafe {
                let w = |j: usize| u16_at(g, at + stride * j) as u64;
                let lo = w(0) | w(1) << 16 | w(2) << 32 | w(3) << 48;
                let hi = w(4) | w(5) << 16 | w(6) << 32 | w(7) << 48;
                _mm256_cvtph_ps(_mm_set_epi64x(hi as i64, lo as i64))
            }
        }

        /// How far ahead of the block being decoded `prefetch_ahead` fetches (bytes).
        const PF_AHEAD: usize = 2048;

        /// Software prefetch of the lines of `b` `PF_AHEAD` bytes further on. Q8_0, Q4_K
        /// and Q5_K decode fast enough that the block stream fell behind without it
        /// (measured on an AVX2-only Zen 3, 4096², the matrix in L3: Q8_0 7.1 → 9.4
        /// Gvalues/s).
        #[target_feature(enable = $feat)]
        #[inline]
        fn prefetch_ahead(b: &[u8]) {
            let p = b.as_ptr().wrapping_add(PF_AHEAD);
            let mut o = 0;
            while o < b.len() {
                // SAFETY: a prefetch never faults, whatever the address.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(o).cast()) };
                o += 64;
            }
        }

        #[target_feature(enable = $feat)]
        unsafe fn q8_0(blocks: &[u8], out: &mut [f32]) {
            // SAFETY: the tier's features are enabled (module doc); every access is to whole blocks in
            // bounds.
            unsafe {
                // Groups of 8 blocks share one scale conversion; the rest go one by one.
                let n8 = (blocks.len() / q8_0::BYTES).min(out.len() / 32) / 8;
                let (body, tail) = blocks.split_at(q8_0::BYTES * 8 * n8);
                let (y_body, y_tail) = out.split_at_mut(32 * 8 * n8);
                for (g, y) in body
                    .chunks_exact(q8_0::BYTES * 8)
                    .zip(y_body.chunks_exact_mut(32 * 8))
                {
                    prefetch_ahead(g);
                    let mut d = [0f32; 8];
                    _mm256_storeu_ps(d.as_mut_ptr(), f16x8(g, q8_0::BYTES, q8_0::D.at));
                    for (j, &d) in d.iter().enumerate() {
                        let (q, y) = (
                            q8_0::QS.of(&g[q8_0::BYTES * j..]),
                            &mut y[32 * j..32 * j + 32],
                        );
                        // SAFETY: `q` holds 32 bytes, `y` 32 floats.
                        unsafe { q8_block(q.as_ptr(), y.as_mut_ptr(), d) }
                    }
                }
                for (b, y) in tail
                    .chunks_exact(q8_0::BYTES)
                    .zip(y_tail.chunks_exact_mut(32))
                {
                    let d = f16_at(b, q8_0::D.at);
                    // SAFETY: `b[2..]` holds 32 bytes, `y` 32 floats.
                    unsafe { q8_block(q8_0::QS.of(b).as_ptr(), y.as_mut_ptr(), d) }
                }
            }
        }

        #[target_feature(enable = $feat)]
        unsafe fn q4_0(blocks: &[u8], out: &mut [f32]) {
            // SAFETY: the tier's features are enabled; every access is to whole blocks in bounds.
            unsafe {
                let eight = _mm256_set1_epi8(8);
                for (b, y) in blocks
                    .chunks_exact(q4_0::BYTES)
                    .zip(out.chunks_exact_mut(32))
                {
                    let d = f16_at(b, q4_0::D.at);
                    let q = _mm256_sub_epi8(nibbles(load16(q4_0::QS.of(b))), eight);
                    store_scaled(y, q, d, d);
                }
            }
        }

        #[target_feature(enable = $feat)]
        unsafe fn q5_0(blocks: &[u8], out: &mut [f32]) {
            // SAFETY: the tier's features are enabled; every access is to whole blocks in bounds.
            unsafe {
                // Byte j of the spread qh holds byte j/8 of qh; mask byte j keeps bit j%8.
                let spread = _mm256_setr_epi8(
                    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, //
                    2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3,
                );
                let mask = _mm256_set1_epi64x(0x8040_2010_0804_0201u64 as i64);
                let (x10, x16) = (_mm256_set1_epi8(0x10), _mm256_set1_epi8(16));
                for (b, y) in blocks
                    .chunks_exact(q5_0::BYTES)
                    .zip(out.chunks_exact_mut(32))
                {
                    let d = f16_at(b, q5_0::D.at);
                    let qh = u32_at(b, q5_0::QH.at);
                    let bits = _mm256_shuffle_epi8(_mm256_set1_epi32(qh as i32), spread);
                    let h = _mm256_and_si256(
                        _mm256_cmpeq_epi8(_mm256_and_si256(bits, mask), mask),
                        x10,
                    );
                    let q =
                        _mm256_sub_epi8(_mm256_or_si256(nibbles(load16(q5_0::QS.of(b))), h), x16);
                    store_scaled(y, q, d, d);
                }
            }
        }

        #[target_feature(enable = $feat)]
        unsafe fn q2_0(blocks: &[u8], out: &mut [f32]) {
            // SAFETY: the tier's features are enabled; every access is to whole blocks in bounds.
            unsafe {
                let (m3, one) = (_mm_set1_epi8(3), _mm_set1_epi8(1));
                for (b, y) in blocks
                    .chunks_exact(q2_0::BYTES)
                    .zip(out.chunks_exact_mut(64))
                {
                    let d = f16_at(b, q2_0::D.at);
                    let qs = load16(q2_0::QS.of(b));
                    // c_i[k] = code 4k + i.
                    let c0 = _mm_and_si128(qs, m3);
                    let c1 = _mm_and_si128(_mm_srli_epi16::<2>(qs), m3);
                    let c2 = _mm_and_si128(_mm_srli_epi16::<4>(qs), m3);
                    let c3 = _mm_and_si128(_mm_srli_epi16::<6>(qs), m3);
                    // Interleave back into element order 4k, 4k+1, 4k+2, 4k+3.
                    let (a_lo, a_hi) = (_mm_unpacklo_epi8(c0, c1), _mm_unpackhi_epi8(c0, c1));
                    let (b_lo, b_hi) = (_mm_unpacklo_epi8(c2, c3), _mm_unpackhi_epi8(c2, c3));
                    let e = [
                        _mm_unpacklo_epi16(a_lo, b_lo),
                        _mm_unpackhi_epi16(a_lo, b_lo),
                        _mm_unpacklo_epi16(a_hi, b_hi),
                        _mm_unpackhi_epi16(a_hi, b_hi),
                    ];
                    let e = e.map(|v| _mm_sub_epi8(v, one));
                    store_scaled(&mut y[..32], _mm256_set_m128i(e[1], e[0]), d, d);
                    store_scaled(&mut y[32..], _mm256_set_m128i(e[3], e[2]), d, d);
                }
            }
        }

        #[target_feature(enable = $feat)]
        unsafe fn q2_k(blocks: &[u8], out: &mut [f32]) {
            // SAFETY: the tier's features are enabled; every access is to whole blocks in bounds.
            unsafe {
                let m3 = _mm256_set1_epi8(3);
                for (b, y) in blocks
                    .chunks_exact(q2_k::BYTES)
                    .zip(out.chunks_exact_mut(256))
                {
                    let d = f16_at(b, q2_k::D.at);
                    let dmin = f16_at(b, q2_k::DMIN.at);
                    for h in 0..2 {
                        let qs = load32(&b[q2_k::QS.at + 32 * h..]);
                        for i in 0..4 {
                            let q = match i {
                                0 => qs,
                                1 => _mm256_srli_epi16::<2>(qs),
                                2 => _mm256_srli_epi16::<4>(qs),
                                _ => _mm256_srli_epi16::<6>(qs),
                            };
                            let q = _mm256_and_si256(q, m3);
                            let s = &q2_k::SCALES.of(b)[8 * h + 2 * i..];
                            let (s0, s1) = (s[0], s[1]);
                            let o = 128 * h + 32 * i;
                            store_affine(
                                &mut y[o..],
                                q,
                                d * (s0 & 0x0F) as f32,
                                dmin * (s0 >> 4) as f32,
                                d * (s1 & 0x0F) as f32,
                                dmin * (s1 >> 4) as f32,
                            );
                        }
                    }
                }
            }
        }

        #[target_feature(enable = $feat)]
        unsafe fn q3_k(blocks: &[u8], out: &mut [f32]) {
            // SAFETY: the tier's features are enabled; every access is to whole blocks in bounds.
            unsafe {
                let (m3, four) = (_mm256_set1_epi8(3), _mm256_set1_epi8(4));
                for (b, y) in blocks
                    .chunks_exact(q3_k::BYTES)
                    .zip(out.chunks_exact_mut(256))
                {
                    let d = f16_at(b, q3_k::D.at);
                    let hmask = load32(q3_k::HMASK.of(b));
                    let scales = q3_k::scales(q3_k::SCALES.of(b));
                    for h in 0..2 {
                        let qs = load32(&b[q3_k::QS.at + 32 * h..]);
                        for i in 0..4 {
                            let low = match i {
                                0 => qs,
                                1 => _mm256_srli_epi16::<2>(qs),
                                2 => _mm256_srli_epi16::<4>(qs),
                                _ => _mm256_srli_epi16::<6>(qs),
                            };
                            let low = _mm256_and_si256(low, m3);
                            // A clear hmask bit subtracts 4.
                            let sub = _mm256_andnot_si256(bit_set(hmask, (4 * h + i) as u32), four);
                            let q = _mm256_sub_epi8(low, sub);
                            let s = 8 * h + 2 * i;
                            store_scaled(
                                &mut y[128 * h + 32 * i..],
                                q,
                                d * scales[s] as f32,
                                d * scales[s + 1] as f32,
                            );
                        }
                    }
                }
            }
        }

        #[target_feature(enable = $feat)]
        unsafe fn q4_k(blocks: &[u8], out: &mut [f32]) {
            // SAFETY: the tier's features are enabled (module doc); every access is to whole blocks in
            // bounds.
            unsafe {
                for (b, y) in blocks
                    .chunks_exact(q4_k::BYTES)
                    .zip(out.chunks_exact_mut(256))
                {
                    prefetch_ahead(b);
                    let s = k4_scales!(b);
                    for (c, y) in y.chunks_exact_mut(64).enumerate() {
                        q4_k_chunk(y, &b[16 + 32 * c..48 + 32 * c], &s, 2 * c);
                    }
                }
            }
        }

        /// The 256 five-bit codes of Q5_K super-block `b` as bytes, in value order: chunk c's
        /// low nibbles with bit 2c of qh, then its high nibbles with bit 2c + 1.
        #[target_feature(enable = $feat)]
        #[inline]
        unsafe fn q5_k_codes(b: &[u8], codes: &mut [u8; 256]) {
            // SAFETY: the tier's features are enabled (module doc); `codes` holds 256 bytes.
            unsafe {
                let (m4, x10) = (_mm256_set1_epi8(0x0F), _mm256_set1_epi8(0x10));
                let qh = load32(q5_k::QH.of(b));
                for c in 0..4 {
                    let qs = load32(&q5_k::QS.of(b)[32 * c..32 * c + 32]);
                    // Bits 2c and 2c + 1 of each qh byte moved to bit 4 (a 16-bit shift by at most
                    // 4 only moves other bits of the same byte there).
                    let (h1, h2) = match c {
                        0 => (_mm256_slli_epi16::<4>(qh), _mm256_slli_epi16::<3>(qh)),
                        1 => (_mm256_slli_epi16::<2>(qh), _mm256_slli_epi16::<1>(qh)),
                        2 => (qh, _mm256_srli_epi16::<1>(qh)),
                        _ => (_mm256_srli_epi16::<2>(qh), _mm256_srli_epi16::<3>(qh)),
                    };
                    let lo = _mm256_or_si256(_mm256_and_si256(qs, m4), _mm256_and_si256(h1, x10));
                    let hi = _mm256_srli_epi16::<4>(qs);
                    let hi = _mm256_or_si256(_mm256_and_si256(hi, m4), _mm256_and_si256(h2, x10));
                    let p = codes.as_mut_ptr().add(64 * c);
                    _mm256_storeu_si256(p.cast(), lo);
                    _mm256_storeu_si256(p.add(32).cast(), hi);
                }
            }
        }

        #[target_feature(enable = $feat)]
        unsafe fn q5_k(blocks: &[u8], out: &mut [f32]) {
            // SAFETY: the tier's features are enabled (module doc); every access is to whole blocks in
            // bounds.
            unsafe {
                // The codes are assembled as bytes (32 per instruction) in a stack buffer, then
                // widened from it to i32 lanes. Each super-block's codes are written one iteration
                // ahead: read back right away, the 8-byte loads stall on store forwarding.
                let mut codes = [[0u8; 256]; 2];
                if let Some(first) = blocks.get(..q5_k::BYTES) {
                    q5_k_codes(first, &mut codes[0]);
                }
                for (i, (b, y)) in blocks
                    .chunks_exact(q5_k::BYTES)
                    .zip(out.chunks_exact_mut(256))
                    .enumerate()
                {
                    if let Some(next) = blocks.get(q5_k::BYTES * (i + 1)..q5_k::BYTES * (i + 2)) {
                        q5_k_codes(next, &mut codes[(i + 1) % 2]);
                    }
                    prefetch_ahead(b);
                    let s = k4_scales!(b);
                    let q = &codes[i % 2];
                    for (j, y) in y.chunks_exact_mut(32).enumerate() {
                        store_affine_u8(y, &q[32 * j..32 * j + 32], s[j], s[8 + j]);
                    }
                }
            }
        }

        #[target_feature(enable = $feat)]
        unsafe fn q6_k(blocks: &[u8], out: &mut [f32]) {
            // SAFETY: the tier's features are enabled; every access is to whole blocks in bounds.
            unsafe {
                let (m4, m30, x32) = (
                    _mm256_set1_epi8(0x0F),
                    _mm256_set1_epi8(0x30),
                    _mm256_set1_epi8(32),
                );
                for (b, y) in blocks
                    .chunks_exact(q6_k::BYTES)
                    .zip(out.chunks_exact_mut(256))
                {
                    let d = f16_at(b, q6_k::D.at);
                    for h in 0..2 {
                        let ql0 = load32(&b[q6_k::QL.at + 64 * h..]);
                        let ql1 = load32(&b[q6_k::QL.at + 64 * h + 32..]);
                        let qh = load32(&b[q6_k::QH.at + 32 * h..]);
                        let sc = &q6_k::SCALES.of(b)[8 * h..8 * h + 8];
                        // ((qh >> 2i) & 3) << 4, for i = 0..4 (the 16-bit shifts' spill is masked off).
                        let hb = [
                            _mm256_and_si256(_mm256_slli_epi16::<4>(qh), m30),
                            _mm256_and_si256(_mm256_slli_epi16::<2>(qh), m30),
                            _mm256_and_si256(qh, m30),
                            _mm256_and_si256(_mm256_srli_epi16::<2>(qh), m30),
                        ];
                        let low = [
                            _mm256_and_si256(ql0, m4),
                            _mm256_and_si256(ql1, m4),
                            _mm256_and_si256(_mm256_srli_epi16::<4>(ql0), m4),
                            _mm256_and_si256(_mm256_srli_epi16::<4>(ql1), m4),
                        ];
                        for i in 0..4 {
                            let q = _mm256_sub_epi8(_mm256_or_si256(low[i], hb[i]), x32);
                            store_scaled(
                                &mut y[128 * h + 32 * i..],
                                q,
                                d * (sc[2 * i] as i8) as f32,
                                d * (sc[2 * i + 1] as i8) as f32,
                            );
                        }
                    }
                }
            }
        }

        /// 16 bytes of IQ4 codes → 32 i8 code values (low nibbles first).
        #[target_feature(enable = $feat)]
        #[inline]
        unsafe fn iq4_values(qs: __m128i, table: __m128i) -> __m256i {
            // SAFETY: the tier's features are enabled; every access is to whole blocks in bounds.
            unsafe {
                let m4 = _mm_set1_epi8(0x0F);
                let lo = _mm_shuffle_epi8(table, _mm_and_si128(qs, m4));
                let hi = _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16::<4>(qs), m4));
                _mm256_set_m128i(hi, lo)
            }
        }

        #[target_feature(enable = $feat)]
        #[inline]
        unsafe fn iq4_table() -> __m128i {
            // SAFETY: the tier's features are enabled; every access is to whole blocks in bounds.
            unsafe {
                // SAFETY: KVALUES_IQ4NL is 16 bytes.
                unsafe { _mm_loadu_si128(KVALUES_IQ4NL.as_ptr().cast()) }
            }
        }

        #[target_feature(enable = $feat)]
        unsafe fn iq4_nl(blocks: &[u8], out: &mut [f32]) {
            // SAFETY: the tier's features are enabled; every access is to whole blocks in bounds.
            unsafe {
                let table = iq4_table();
                for (b, y) in blocks
                    .chunks_exact(iq4_nl::BYTES)
                    .zip(out.chunks_exact_mut(32))
                {
                    let d = f16_at(b, iq4_nl::D.at);
                    store_scaled(y, iq4_values(load16(iq4_nl::QS.of(b)), table), d, d);
                }
            }
        }

        #[target_feature(enable = $feat)]
        unsafe fn iq4_xs(blocks: &[u8], out: &mut [f32]) {
            // SAFETY: the tier's features are enabled; every access is to whole blocks in bounds.
            unsafe {
                let table = iq4_table();
                for (b, y) in blocks
                    .chunks_exact(iq4_xs::BYTES)
                    .zip(out.chunks_exact_mut(256))
                {
                    let d = f16_at(b, iq4_xs::D.at);
                    for (g, y) in y.chunks_exact_mut(32).enumerate() {
                        let dl = d * (iq4_xs::scale(b, g) as i32 - 32) as f32;
                        let qs = &iq4_xs::QS.of(b)[16 * g..];
                        store_scaled(y, iq4_values(load16(qs), table), dl, dl);
                    }
                }
            }
        }

        #[target_feature(enable = $feat)]
        unsafe fn iq2_xxs(blocks: &[u8], out: &mut [f32]) {
            // SAFETY: the tier's features are enabled; every access is to whole blocks in bounds.
            unsafe {
                for (b, y) in blocks
                    .chunks_exact(iq2_xxs::BYTES)
                    .zip(out.chunks_exact_mut(256))
                {
                    let d = f16_at(b, iq2_xxs::D.at);
                    for (g, y) in y.chunks_exact_mut(32).enumerate() {
                        let q = &iq2_xxs::QS.of(b)[8 * g..8 * g + 8];
                        let aux = u32_at(q, 4);
                        let db = d * (0.5 + (aux >> 28) as f32) * 0.25;
                        let point = |l: usize| {
                            let signs = KSIGNS_IQ2XS[((aux >> (7 * l)) & 127) as usize];
                            (IQ2XXS_GRID[q[l] as usize], signs)
                        };
                        for (p, y) in y.chunks_exact_mut(16).enumerate() {
                            grid16(y, db, point(2 * p), point(2 * p + 1));
                        }
                    }
                }
            }
        }

        #[target_feature(enable = $feat)]
        unsafe fn iq2_xs(blocks: &[u8], out: &mut [f32]) {
            // SAFETY: the tier's features are enabled; every access is to whole blocks in bounds.
            unsafe {
                for (b, y) in blocks
                    .chunks_exact(iq2_xs::BYTES)
                    .zip(out.chunks_exact_mut(256))
                {
                    let d = f16_at(b, iq2_xs::D.at);
                    for (g, y) in y.chunks_exact_mut(32).enumerate() {
                        let sc = iq2_xs::SCALES.of(b)[g];
                        let db = [
                            d * (0.5 + (sc & 0x0F) as f32) * 0.25,
                            d * (0.5 + (sc >> 4) as f32) * 0.25,
                        ];
                        let point = |l: usize| {
                            let q = u16_at(b, iq2_xs::QS.at + 8 * g + 2 * l);
                            (
                                IQ2XS_GRID[(q & 511) as usize],
                                KSIGNS_IQ2XS[(q >> 9) as usize],
                            )
                        };
                        for (p, y) in y.chunks_exact_mut(16).enumerate() {
                            grid16(y, db[p], point(2 * p), point(2 * p + 1));
                        }
                    }
                }
            }
        }

        #[target_feature(enable = $feat)]
        unsafe fn iq2_s(blocks: &[u8], out: &mut [f32]) {
            // SAFETY: the tier's features are enabled; every access is to whole blocks in bounds.
            unsafe {
                for (b, y) in blocks
                    .chunks_exact(iq2_s::BYTES)
                    .zip(out.chunks_exact_mut(256))
                {
                    let d = f16_at(b, iq2_s::D.at);
                    let (qs, signs) = (iq2_s::QS.of(b), iq2_s::SIGNS.of(b));
                    let (qh, scales) = (iq2_s::QH.of(b), iq2_s::SCALES.of(b));
                    for (g, y) in y.chunks_exact_mut(32).enumerate() {
                        let db = [
                            d * (0.5 + (scales[g] & 0x0F) as f32) * 0.25,
                            d * (0.5 + (scales[g] >> 4) as f32) * 0.25,
                        ];
                        let point = |l: usize| {
                            let r = 4 * g + l;
                            let idx = qs[r] as usize | ((((qh[g] >> (2 * l)) & 3) as usize) << 8);
                            (IQ2S_GRID[idx], signs[r])
                        };
                        for (p, y) in y.chunks_exact_mut(16).enumerate() {
                            grid16(y, db[p], point(2 * p), point(2 * p + 1));
                        }
                    }
                }
            }
        }

        #[target_feature(enable = $feat)]
        unsafe fn iq3_xxs(blocks: &[u8], out: &mut [f32]) {
            // SAFETY: the tier's features are enabled; every access is to whole blocks in bounds.
            unsafe {
                for (b, y) in blocks
                    .chunks_exact(iq3_xxs::BYTES)
                    .zip(out.chunks_exact_mut(256))
                {
                    let d = f16_at(b, iq3_xxs::D.at);
                    let qs = iq3_xxs::QS.of(b);
                    for (g, y) in y.chunks_exact_mut(32).enumerate() {
                        let aux = u32_at(b, iq3_xxs::SCALES_AND_SIGNS.at + 4 * g);
                        let db = d * (0.5 + (aux >> 28) as f32) * 0.5;
                        let point = |l: usize| {
                            let signs = KSIGNS_IQ2XS[((aux >> (7 * l)) & 127) as usize];
                            let g1 = IQ3XXS_GRID[qs[8 * g + 2 * l] as usize] as u64;
                            let g2 = IQ3XXS_GRID[qs[8 * g + 2 * l + 1] as usize] as u64;
                            (g1 | (g2 << 32), signs)
                        };
                        for (p, y) in y.chunks_exact_mut(16).enumerate() {
                            grid16(y, db, point(2 * p), point(2 * p + 1));
                        }
                    }
                }
            }
        }

        #[target_feature(enable = $feat)]
        unsafe fn iq3_s(blocks: &[u8], out: &mut [f32]) {
            // SAFETY: the tier's features are enabled; every access is to whole blocks in bounds.
            unsafe {
                for (b, y) in blocks
                    .chunks_exact(iq3_s::BYTES)
                    .zip(out.chunks_exact_mut(256))
                {
                    let d = f16_at(b, iq3_s::D.at);
                    let (qs, qh, signs, scales) = (
                        iq3_s::QS.of(b),
                        iq3_s::QH.of(b),
                        iq3_s::SIGNS.of(b),
                        iq3_s::SCALES.of(b),
                    );
                    for (g, y) in y.chunks_exact_mut(32).enumerate() {
                        let s = (scales[g / 2] >> (4 * (g % 2))) & 0x0F;
                        let db = d * (1 + 2 * s as i32) as f32;
                        let point = |l: usize| {
                            let r = 4 * g + l;
                            let i1 =
                                qs[2 * r] as usize | ((((qh[g] >> (2 * l)) & 1) as usize) << 8);
                            let i2 = qs[2 * r + 1] as usize
                                | ((((qh[g] >> (2 * l + 1)) & 1) as usize) << 8);
                            (
                                IQ3S_GRID[i1] as u64 | ((IQ3S_GRID[i2] as u64) << 32),
                                signs[r],
                            )
                        };
                        for (p, y) in y.chunks_exact_mut(16).enumerate() {
                            grid16(y, db, point(2 * p), point(2 * p + 1));
                        }
                    }
                }
            }
        }

        #[target_feature(enable = $feat)]
        unsafe fn iq1_s(blocks: &[u8], out: &mut [f32]) {
            // SAFETY: the tier's features are enabled; every access is to whole blocks in bounds.
            unsafe {
                for (b, y) in blocks
                    .chunks_exact(iq1_s::BYTES)
                    .zip(out.chunks_exact_mut(256))
                {
                    let d = f16_at(b, iq1_s::D.at);
                    for (g, y) in y.chunks_exact_mut(32).enumerate() {
                        let qh = u16_at(b, iq1_s::QH.at + 2 * g);
                        let dl = d * (2 * ((qh >> 12) & 7) as i32 + 1) as f32;
                        let delta = signed_delta(IQ1S_DELTA, qh as u32, 15);
                        let point = |l: usize| {
                            let idx = iq1_s::QS.of(b)[4 * g + l] as usize
                                | ((((qh >> (3 * l)) & 7) as usize) << 8);
                            (IQ1S_GRID[idx], delta)
                        };
                        for (p, y) in y.chunks_exact_mut(16).enumerate() {
                            grid16_iq1(y, dl, point(2 * p), point(2 * p + 1));
                        }
                    }
                }
            }
        }

        #[target_feature(enable = $feat)]
        unsafe fn iq1_m(blocks: &[u8], out: &mut [f32]) {
            // SAFETY: the tier's features are enabled; every access is to whole blocks in bounds.
            unsafe {
                for (b, y) in blocks
                    .chunks_exact(iq1_m::BYTES)
                    .zip(out.chunks_exact_mut(256))
                {
                    let d = half::f16::from_bits(iq1_m::super_scale_bits(b)).to_f32();
                    for (g, y) in y.chunks_exact_mut(32).enumerate() {
                        let sc = iq1_m::scale_word(b, g / 2);
                        let shift = 6 * (g % 2);
                        let dl = [
                            d * (2 * ((sc >> shift) & 7) as i32 + 1) as f32,
                            d * (2 * ((sc >> (shift + 3)) & 7) as i32 + 1) as f32,
                        ];
                        let point = |l: usize| {
                            let nib = iq1_m::QH.of(b)[2 * g + l / 2] >> (4 * (l % 2));
                            let idx =
                                iq1_m::QS.of(b)[4 * g + l] as usize | (((nib & 7) as usize) << 8);
                            // The delta's sign set by bit arithmetic (a select here becomes a branch).
                            let delta =
                                f32::from_bits(IQ1M_DELTA.to_bits() ^ (((nib as u32) & 8) << 28));
                            (IQ1S_GRID[idx], delta)
                        };
                        for (p, y) in y.chunks_exact_mut(16).enumerate() {
                            grid16_iq1(y, dl[p], point(2 * p), point(2 * p + 1));
                        }
                    }
                }
            }
        }
    };
}
