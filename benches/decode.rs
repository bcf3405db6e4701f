//! Single-thread row decoding speed of every gguf_* format on a 4096 × 4096 matrix of
//! random blocks (finite, typical binary16 scales), through the public API
//! (`WeightView` + `decode::decode_row`, on the machine's best tier), and every tier the
//! machine runs alone, the scalar reference included (`formats::gguf::dequantize_with`).
//! Prints Gvalues/s (best of 5).
//!
//! When the benchmark peer is built (`scripts/build-ggml.sh`), ggml's own `to_float` is
//! timed on the same rows (it is a peer for speed only, never an oracle).
//!
//! `cargo bench --bench decode [-- FILTER]`; set `NINFER_BENCH_N=1024` for a quicker run.

use ninfer::decode::decode_row;
use ninfer::formats::gguf::dequantize_with;
use ninfer::{Category, Format, Isa, WeightView};
use std::time::Instant;

#[path = "../cli/src/cmd/bench/ggml.rs"]
mod ggml;

/// xorshift64*: deterministic bytes without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// Byte offsets of the plain fp16 fields of a block (IQ1_M: none; its spread scale's top
/// nibbles are cleared below so the scale stays small and finite).
fn f16_fields(f: Format) -> &'static [usize] {
    use Format::*;
    match f {
        GgufQ2_K => &[80, 82],
        GgufQ3_K => &[108],
        GgufQ4_K | GgufQ5_K => &[0, 2],
        GgufQ6_K => &[208],
        GgufIq1M => &[],
        _ => &[0],
    }
}

fn payload(f: Format, n: usize, k: usize, rng: &mut Rng) -> Vec<u8> {
    let info = f.info();
    let (bv, bb) = (info.block_values as usize, info.block_bytes as usize);
    let mut p: Vec<u8> = (0..n * k / bv * bb).map(|_| rng.next() as u8).collect();
    for b in p.chunks_exact_mut(bb) {
        for &at in f16_fields(f) {
            let h = 0x1800 | (rng.next() as u16 & 0x83FF); // ±[2^-9, 2^-8)
            b[at..at + 2].copy_from_slice(&h.to_le_bytes());
        }
        if f == Format::GgufIq1M {
            for w in 0..4 {
                b[48 + 2 * w + 1] &= 0x0F;
            }
            b[48 + 2 * 3 + 1] |= 0x20; // super-scale 0x2000
        }
    }
    p
}

fn main() {
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let n: usize = std::env::var("NINFER_BENCH_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4096);
    let k = n;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let peer = ggml::Ggml::load(&ggml::default_dir()).ok();
    match &peer {
        Some(g) => println!("peer: ggml to_float from {}", g.dir.display()),
        None => println!("peer: ggml not built (scripts/build-ggml.sh); ninfer alone"),
    }
    println!("single-thread decode_row, {n} x {k} (best of 5 passes)");
    for f in Format::all().filter(|f| f.info().category == Category::GgufBlock) {
        if filter.as_deref().is_some_and(|s| !f.name().contains(s)) {
            continue;
        }
        let p = payload(f, n, k, &mut rng);
        let view = WeightView::single(f, n, k, &p).unwrap();
        let row_bytes = p.len() / n;
        let time = |decode: &mut dyn FnMut(usize, &mut [f32])| {
            // The output row starts a cache line, as a runtime's tensors do (the allocator
            // aligns a plain Vec to 16 bytes only, so half of the 256-bit stores of either
            // side would straddle two lines).
            let mut buf = vec![0f32; k + 16];
            let off = buf.as_ptr().align_offset(64).min(16);
            let row = &mut buf[off..off + k];
            let mut best = f64::INFINITY;
            let mut sink = 0f32;
            for _ in 0..5 {
                let t = Instant::now();
                for r in 0..n {
                    decode(r, row);
                    sink += row[r % k];
                }
                best = best.min(t.elapsed().as_secs_f64());
            }
            std::hint::black_box(sink);
            best
        };
        let t_api = time(&mut |r, out| decode_row(&view, r as u64, out).unwrap());
        let gv = |t: f64| (n * k) as f64 / t / 1e9;
        // Every tier of this machine on its own (the API runs the best one).
        let mut tiers = String::new();
        for isa in Isa::tiers() {
            let t = time(&mut |r, out| {
                let b = &p[r * row_bytes..(r + 1) * row_bytes];
                dequantize_with(isa, f, b, out).unwrap()
            });
            tiers += &format!("   {} {:5.2}", isa.name(), gv(t));
        }
        let to_float = peer
            .as_ref()
            .and_then(|g| f.info().ggml_type.and_then(|t| g.to_float(t)));
        let t_ggml = to_float.map(|to_float| {
            time(&mut |r, out| {
                let b = &p[r * row_bytes..(r + 1) * row_bytes];
                // SAFETY: ggml's to_float reads one row of whole blocks and writes k floats.
                unsafe { to_float(b.as_ptr().cast(), out.as_mut_ptr(), k as i64) }
            })
        });
        println!(
            "{:>14}: {:6.2} Gvalues/s ({}, {:5.2} GB/s of blocks){tiers}   ggml {}   ratio {}",
            f.name(),
            gv(t_api),
            Isa::detect().name(),
            p.len() as f64 / t_api / 1e9,
            t_ggml.map_or("-".to_string(), |t| format!("{:5.2}", gv(t))),
            t_ggml.map_or("-".to_string(), |t| format!("{:5.2}x", t / t_api)),
        );
    }
}
