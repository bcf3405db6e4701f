//! Concurrency: 8 threads share weights, views and prepared handles and run decode,
//! validate, quantize and forward on them at once; every result is bit-identical to the
//! same call made by one thread alone, and every thread reads back its own last-error
//! message (the C ABI keeps it per OS thread) while the others fail and succeed around it.
//!
//! Passes on stable like any test; `scripts/test.sh` also runs it under ThreadSanitizer
//! with nightly (`-Zsanitizer=thread -Zbuild-std`) so that a data race in the library, the
//! per-thread error slot or the thread pools is reported even when the results happen to
//! come out right.

mod common;

use common::{View, ninfer_decode_row, ninfer_last_error_message, ninfer_validate};
use ninfer::formats::float_source::FloatSource;
use ninfer::formats::{fp8_row, grouped, nvfp4};
use ninfer::linear::PreparedWeight;
use ninfer::{Format, Layout, WeightView, layouts};
use std::ffi::c_void;
use std::sync::Barrier;

const THREADS: usize = 8;
const ROUNDS: usize = 12;
const N: usize = 48;
const K: usize = 256;
const M: usize = 3;

unsafe extern "C" {
    fn ninfer_linear_prepare(view: *const View, device: u32, out_handle: *mut *mut c_void) -> u32;
    fn ninfer_linear_set_threads(handle: *mut c_void, threads: u32) -> u32;
    #[allow(clippy::too_many_arguments)]
    fn ninfer_linear_forward(
        handle: *const c_void,
        x: *const c_void,
        x_bytes: usize,
        x_dtype: u32,
        m: u64,
        k: u64,
        bias: *const f32,
        bias_len: usize,
        y: *mut c_void,
        y_bytes: usize,
        y_dtype: u32,
    ) -> u32;
    fn ninfer_linear_free(handle: *mut c_void);
}

const OK: u32 = 0;
const DTYPE_F32: u32 = 0;

/// A deterministic source: values of mixed sign and magnitude.
fn source(n: usize, k: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n * k)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 2f32.powi((s % 7) as i32 - 3)
        })
        .collect()
}

/// The planes of one weight, encoded once by the main thread.
struct Weight {
    format: Format,
    planes: [Vec<u8>; 3],
}

impl Weight {
    fn view(&self) -> WeightView<'_> {
        let p = &self.planes;
        WeightView::new(
            self.format,
            self.format.info().layout,
            N,
            K,
            [&p[0], &p[1], &p[2]],
        )
        .unwrap()
    }

    fn c_view(&self) -> View {
        let p = &self.planes;
        View {
            format: self.format as u32,
            layout: self.format.info().layout as u32,
            rows: N as u64,
            cols: K as u64,
            planes: [
                common::Bytes::of(&p[0]),
                common::Bytes::of(&p[1]),
                common::Bytes::of(&p[2]),
            ],
        }
    }
}

fn encode(format: Format, src: &[f32]) -> Weight {
    let mut sizes = layouts::plane_sizes(format, format.info().layout, N, K).unwrap();
    if format == Format::Nvfp4 {
        sizes[2] = 4;
    }
    let mut planes = sizes.map(|n| vec![0u8; n]);
    let [a, b, c] = &mut planes;
    let src = FloatSource::F32(src);
    match format.info().category {
        ninfer::Category::GroupedInt => {
            grouped::quantize(format, src, N, K, &grouped::Options::ABSMAX, [a, b, c]).map(|_| ())
        }
        ninfer::Category::RowScaledFloat => fp8_row::fp8_row_maxabs(format, src, N, K, [a, b]),
        ninfer::Category::BlockScaledFloat => nvfp4::nvfp4_quantize(src, N, K, 1, [a, b, c]),
        _ => unreachable!(),
    }
    .unwrap();
    Weight { format, planes }
}

/// gguf_q8_0 blocks (binary16 d, 32 int8 codes) written directly.
fn gguf_q8_0() -> Weight {
    let mut b = Vec::new();
    for (i, blk) in source(N, K, 9).chunks(32).enumerate() {
        b.extend_from_slice(
            &half::f16::from_f32(2f32.powi(-7 - (i % 3) as i32))
                .to_bits()
                .to_le_bytes(),
        );
        b.extend(blk.iter().map(|v| (v * 127.0) as i8 as u8));
    }
    assert_eq!(
        b.len(),
        layouts::plane_sizes(Format::GgufQ8_0, Layout::GgufBlocksV1, N, K).unwrap()[0]
    );
    Weight {
        format: Format::GgufQ8_0,
        planes: [b, vec![], vec![]],
    }
}

/// This thread's last error message.
fn last_error() -> String {
    let mut buf = vec![0u8; 512];
    // SAFETY: `buf` has `buf.len()` writable bytes.
    let n = unsafe { ninfer_last_error_message(buf.as_mut_ptr().cast(), buf.len()) };
    buf.truncate(n.min(buf.len() - 1));
    String::from_utf8(buf).unwrap()
}

/// Everything one thread computes from the shared weights, compared bit for bit.
#[derive(PartialEq, Debug)]
struct Results {
    decoded: Vec<u32>,
    forward: Vec<u32>,
    c_forward: Vec<u32>,
    quantized: Vec<u8>,
}

/// A C handle shared by reference between threads.
struct Handle(*mut c_void);
// SAFETY: `ninfer_linear_forward` takes the handle as `const` and is documented safe to
// call from many threads at once (only set_threads/set_activation/free need exclusive
// use, and those run before the threads start and after they end).
unsafe impl Sync for Handle {}

fn work(
    weights: &[Weight],
    prepared: &[PreparedWeight<'_>],
    handles: &[Handle],
    x: &[f32],
    qsrc: &[f32],
) -> Results {
    let mut decoded = Vec::new();
    let mut row = vec![0f32; K];
    for w in weights {
        let v = w.view();
        ninfer::validate::validate(&v).unwrap();
        let cv = w.c_view();
        let (mut r, mut b) = (0u64, 0u64);
        // SAFETY: `cv` points at live planes; `r`, `b` writable.
        assert_eq!(unsafe { ninfer_validate(&cv, &mut r, &mut b) }, OK);
        for i in [0, N / 2, N - 1] {
            ninfer::decode::decode_row(&v, i as u64, &mut row).unwrap();
            decoded.extend(row.iter().map(|f| f.to_bits()));
            // SAFETY: `row` holds K floats.
            assert_eq!(
                unsafe { ninfer_decode_row(&cv, i as u64, row.as_mut_ptr(), K) },
                OK
            );
            decoded.extend(row.iter().map(|f| f.to_bits()));
        }
    }
    let mut forward = Vec::new();
    let mut y = vec![0f32; M * N];
    for p in prepared {
        p.forward_f32(x, M, None, &mut y).unwrap();
        forward.extend(y.iter().map(|f| f.to_bits()));
    }
    let mut c_forward = Vec::new();
    for h in handles {
        // SAFETY: `x` holds M × K floats and `y` M × N; the handle is live (freed after
        // every thread joined).
        let st = unsafe {
            ninfer_linear_forward(
                h.0,
                x.as_ptr().cast(),
                4 * x.len(),
                DTYPE_F32,
                M as u64,
                K as u64,
                std::ptr::null(),
                0,
                y.as_mut_ptr().cast(),
                4 * y.len(),
                DTYPE_F32,
            )
        };
        assert_eq!(st, OK, "{}", last_error());
        c_forward.extend(y.iter().map(|f| f.to_bits()));
    }
    let q = encode(Format::Q4_G64Fp16, qsrc);
    let mut quantized = q.planes.concat();
    quantized.extend(encode(Format::Fp8E4m3fnRowFp16, qsrc).planes.concat());
    quantized.extend(encode(Format::Nvfp4, qsrc).planes.concat());
    Results {
        decoded,
        forward,
        c_forward,
        quantized,
    }
}

#[test]
fn eight_threads_share_handles_with_identical_bits_and_their_own_errors() {
    let src = source(N, K, 1);
    let weights = vec![
        encode(Format::Q4_G64Fp16, &src),
        encode(Format::Q6_G64Fp16, &src),
        encode(Format::Fp8E4m3fnRowBf16, &src),
        encode(Format::Nvfp4, &src),
        gguf_q8_0(),
    ];
    // Rust handles: the global pool, the calling thread, and a pool of 2 of the weight's own.
    let mut prepared = Vec::new();
    for (i, w) in weights.iter().enumerate() {
        let mut p = PreparedWeight::new(w.view()).unwrap();
        p.set_threads([0, 1, 2][i % 3]).unwrap();
        prepared.push(p);
    }
    let views: Vec<View> = weights.iter().map(Weight::c_view).collect();
    let handles: Vec<Handle> = views
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let mut h = std::ptr::null_mut();
            // SAFETY: `v` points at planes that outlive the handle; `h` writable; the
            // handle is not shared yet when its threads are set.
            unsafe {
                assert_eq!(ninfer_linear_prepare(v, 0, &mut h), OK);
                assert_eq!(ninfer_linear_set_threads(h, [2, 0, 1][i % 3]), OK);
            }
            Handle(h)
        })
        .collect();
    let x = source(M, K, 2);
    let qsrc = source(N, K, 3);
    let alone = work(&weights, &prepared, &handles, &x, &qsrc);

    let barrier = Barrier::new(THREADS);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (weights, prepared, handles, x, qsrc, alone, barrier) =
                (&weights, &prepared, &handles, &x, &qsrc, &alone, &barrier);
            s.spawn(move || {
                for round in 0..ROUNDS {
                    // Half the threads fail (each with its own row number), half succeed;
                    // all then wait until every thread made its call, and read their own
                    // message back.
                    let fails = (t + round) % 2 == 0;
                    let bad_row = (N + 1000 * t + round) as u64;
                    let v = &weights[(t + round) % weights.len()].c_view();
                    let mut out = vec![0f32; K];
                    let row = if fails { bad_row } else { (t % N) as u64 };
                    // SAFETY: `out` holds K floats; `v` points at live planes.
                    let st = unsafe { ninfer_decode_row(v, row, out.as_mut_ptr(), K) };
                    barrier.wait();
                    let msg = last_error();
                    if fails {
                        assert_ne!(st, OK);
                        assert!(
                            msg.contains(&format!("row {bad_row} out of range")),
                            "thread {t} round {round} reads {msg:?}"
                        );
                    } else {
                        assert_eq!(st, OK);
                        assert_eq!(msg, "", "thread {t} round {round}: success left {msg:?}");
                    }
                    barrier.wait();
                    if round % 3 == t % 3 {
                        let got = work(weights, prepared, handles, x, qsrc);
                        assert!(
                            got == *alone,
                            "thread {t} round {round}: bits differ from one thread alone"
                        );
                    }
                }
            });
        }
    });
    for h in handles {
        // SAFETY: every thread has joined; each handle is freed once.
        unsafe { ninfer_linear_free(h.0) };
    }
}
