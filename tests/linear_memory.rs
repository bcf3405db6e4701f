//! The temporaries of a CPU product do not grow with M: the peak of the bytes allocated
//! during a forward (a counting global allocator, this binary's only test so nothing else
//! allocates meanwhile) is the same for M = 4096 as for M = 64, for each kernel family and
//! activation profile, on one thread and on a pool of two; and a repeated single-row call
//! allocates next to nothing (the weight keeps its small temporaries).

use ninfer::linear::{Activation, PreparedWeight};
use ninfer::{Dtype, Format, WeightView};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Counts the bytes live and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(bytes: usize) {
    let now = LIVE.fetch_add(bytes, Ordering::SeqCst) + bytes;
    PEAK.fetch_max(now, Ordering::SeqCst);
}

// SAFETY: forwards to the system allocator, only counting.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::SeqCst);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Ordering::SeqCst);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The peak of the bytes allocated beyond those live before, while `f` runs.
fn peak_during(f: impl FnOnce()) -> usize {
    let base = LIVE.load(Ordering::SeqCst);
    PEAK.store(base, Ordering::SeqCst);
    f();
    PEAK.load(Ordering::SeqCst) - base
}

fn bytes_f16(v: f32) -> [u8; 2] {
    half::f16::from_f32(v).to_bits().to_le_bytes()
}

/// Weight planes for `format` (n × k) whose values are finite.
fn planes(format: Format, n: usize, k: usize) -> Vec<Vec<u8>> {
    let layout = format.info().layout;
    let sizes = ninfer::layouts::plane_sizes(format, layout, n, k).unwrap();
    let mut p: Vec<Vec<u8>> = sizes
        .iter()
        .map(|&len| (0..len).map(|i| (i * 29 % 251) as u8).collect())
        .collect();
    match format {
        Format::Bf16 => {
            for (i, w) in p[0].chunks_exact_mut(2).enumerate() {
                let v = ((i % 17) as f32 - 8.0) / 8.0;
                w.copy_from_slice(&half::bf16::from_f32(v).to_bits().to_le_bytes());
            }
        }
        Format::GgufQ4_0 | Format::GgufQ8_0 => {
            let bb = format.info().block_bytes as usize;
            for b in p[0].chunks_exact_mut(bb) {
                b[0..2].copy_from_slice(&bytes_f16(0.01));
            }
        }
        Format::GgufIq2Xxs => {
            for b in p[0].chunks_exact_mut(66) {
                b[0..2].copy_from_slice(&bytes_f16(0.01));
            }
        }
        Format::GgufQ4_K => {
            for b in p[0].chunks_exact_mut(144) {
                b[0..2].copy_from_slice(&bytes_f16(0.01));
                b[2..4].copy_from_slice(&bytes_f16(0.002));
            }
        }
        Format::Q4_G64Fp16 | Format::Q2_G64Fp16 => {
            let info = format.info();
            let g = info.block_values as usize;
            let span = (info.code_max - info.code_min + 1) as usize;
            let codes: Vec<i8> = (0..n * k)
                .map(|i| (info.code_min + (i * 7 % span) as i64) as i8)
                .collect();
            let scales = vec![half::f16::from_f32(0.01).to_bits(); n * k.div_ceil(g)];
            let [a, b, c] = &mut p[..] else {
                unreachable!()
            };
            ninfer::layouts::row_split::pack(format, n, k, &codes, &scales, [a, b, c]).unwrap();
        }
        Format::Nvfp4 => {
            for s in p[1].iter_mut() {
                *s &= 0x3E;
            }
            for d in p[2].chunks_exact_mut(4) {
                d.copy_from_slice(&1.5f32.to_le_bytes());
            }
        }
        _ => unreachable!("{format}"),
    }
    p
}

#[test]
// A property of the engine's buffers, not of an instruction set: measured natively (under
// the aarch64 job's qemu a debug build of M = 4096 products takes many minutes).
#[cfg_attr(
    not(target_arch = "x86_64"),
    ignore = "measured in the native x86-64 run"
)]
fn product_temporaries_do_not_grow_with_m() {
    let (n, k) = (96usize, 512usize);
    let (small, large) = (64usize, 4096usize);
    let x: Vec<u8> = (0..large * k)
        .flat_map(|i| {
            half::bf16::from_f32(((i * 13 % 97) as f32 - 48.0) / 32.0)
                .to_bits()
                .to_ne_bytes()
        })
        .collect();
    let mut y = vec![0f32; large * n];
    let mut report = Vec::new();
    let cases: [(Format, Activation); 9] = [
        (Format::Bf16, Activation::Exact),
        (Format::GgufQ4_0, Activation::Q8_1),
        (Format::GgufQ4_K, Activation::Q8_1),
        (Format::GgufQ4_K, Activation::Q8K),
        (Format::GgufIq2Xxs, Activation::Q8_1),
        (Format::Q4_G64Fp16, Activation::Exact),
        (Format::Q4_G64Fp16, Activation::Q8_1),
        (Format::Q2_G64Fp16, Activation::Exact),
        (Format::Nvfp4, Activation::Exact),
    ];
    for (format, activation) in cases {
        let p = planes(format, n, k);
        let view =
            WeightView::new(format, format.info().layout, n, k, [&p[0], &p[1], &p[2]]).unwrap();
        for threads in [1, 2] {
            let mut w = PreparedWeight::new(view).unwrap();
            w.set_activation(activation).unwrap();
            w.set_threads(threads).unwrap();
            let mut run = |m: usize| {
                // Warm-up (thread start-up allocations), then the measured call.
                let fwd = |y: &mut [f32]| {
                    let yb: &mut [u8] = unsafe {
                        // SAFETY: f32 storage viewed as bytes, same length in bytes.
                        std::slice::from_raw_parts_mut(y.as_mut_ptr().cast(), y.len() * 4)
                    };
                    w.forward(&x[..m * k * 2], Dtype::Bf16, m, k, None, yb, Dtype::F32)
                        .unwrap();
                };
                fwd(&mut y[..m * n]);
                peak_during(|| fwd(&mut y[..m * n]))
            };
            let (p_small, p_large) = (run(small), run(large));
            // A single-row call keeps its (small) temporaries for the next call of that
            // shape: a decoding step allocates next to nothing.
            let x1: Vec<f32> = (0..k)
                .map(|i| ((i * 13 % 97) as f32 - 48.0) / 32.0)
                .collect();
            let mut y1 = vec![0f32; n];
            w.forward_f32(&x1, 1, None, &mut y1).unwrap();
            let p_one = peak_during(|| w.forward_f32(&x1, 1, None, &mut y1).unwrap());
            println!(
                "{format} {activation:?} threads {threads}: a repeated M = 1 call allocates {p_one} B"
            );
            assert!(
                p_one <= 1024,
                "{format} {activation:?} threads {threads}: {p_one} B per M = 1 call"
            );
            let line = format!(
                "{format} {activation:?} threads {threads}: peak temporaries M = {small}: \
                 {p_small} B, M = {large}: {p_large} B"
            );
            println!("{line}");
            // What growing with M would cost at M = 4096: x as f32 alone.
            let grown = large * k * 4;
            assert!(
                p_large <= p_small + p_small / 4 + 4096 && p_large < grown / 8,
                "{line}: temporaries grow with M"
            );
            report.push(line);
        }
    }
    assert_eq!(report.len(), 18);
}
