//! `linear` prepare + forward on arbitrary payloads of every format the CPU runs.
//!
//! Properties:
//! - every instruction set `Isa` offers (that this machine runs) × threads 1, the global
//!   pool and (one case in 4) a pool of 2 gives
//!   the same outcome, and on success the same bits (words compared, any NaN equal to any
//!   NaN); on error nothing is written (canary);
//! - for weights that validate, with finite activations and no f32 overflow possible,
//!   every output is within `ninfer::linear::tolerance` (criterion linear_f32acc_v1) of an
//!   f64 oracle computed here plainly from the decoded rows (and, for the q8_1 activation
//!   profile, from the q8_1 values x̂ re-derived here). gguf_q2_k / q4_k / q5_k are left out
//!   of the criterion check: their `sum_abs` counts the d·sc·q and dmin·m terms separately,
//!   which decoded rows do not give.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ninfer::decode::decode_row;
use ninfer::linear::{Activation, Isa, PreparedWeight, tolerance};
use ninfer::{Dtype, Format};
use ninfer_fuzz::{CANARY, Input, Tensor, same_all, untouched};

/// Every instruction set of [`Isa`] that this machine runs.
fn isas() -> Vec<Isa> {
    Isa::tiers().collect()
}

/// ggml's q8_1 quantization of one row written plainly (with the documented rule for a
/// block holding a non-finite value): x̂ = f16(d)·q.
fn q8_1_xhat(x: &[f32]) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    for blk in x.chunks(32) {
        if blk.iter().any(|v| !v.is_finite()) {
            out.extend(std::iter::repeat_n(f64::NAN, blk.len()));
            continue;
        }
        let amax = blk.iter().fold(0f32, |a, v| a.max(v.abs()));
        let d: f32 = amax / 127.0;
        let id: f32 = if d == 0.0 { 0.0 } else { 1.0 / d };
        let d16 = half::f16::from_f32(d).to_f32() as f64;
        for v in blk {
            let p = (v * id) as f64;
            let q = if id.is_finite() {
                p.signum() * (p.abs() + 0.5).floor()
            } else {
                0.0
            };
            out.push(if q == 0.0 { 0.0 } else { d16 * q });
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let mut inp = Input::new(data);
    let t = Tensor::from_input(&mut inp, 6);
    let Ok(view) = t.view() else { return };
    let (n, k) = (view.rows(), view.cols());
    // 1..3 rows (the pair kernels), or a count from which the AVX-512 tile kernels take a
    // row group (4: the legacy types; 8..16: the k-quants and grouped formats), with a
    // partial group of four.
    let m = [1, 2, 3, 4, 9, 13, 17][inp.u8() as usize % 7];
    let want_q8 = inp.u8() & 1 == 1;
    // Activations: small dyadic values (one case in 8 raw bit patterns, NaN/Inf included).
    let raw_x = inp.u8() % 8 == 7;
    let x: Vec<f32> = (0..m * k)
        .map(|_| {
            if raw_x {
                f32::from_bits(inp.u32())
            } else {
                let (a, e) = (inp.u8() as i8, inp.u8() % 16);
                a as f32 * 2f32.powi(e as i32 - 10)
            }
        })
        .collect();
    let bias: Option<Vec<f32>> =
        (inp.u8() & 1 == 1).then(|| (0..n).map(|_| inp.u8() as i8 as f32 / 4.0).collect());

    // Threads: 1 (the calling thread) against rayon's global pool, and in one case of 4 also
    // a pool of 2 owned by the weight (created per weight, hence not every time).
    let threads_set: &[usize] = if inp.u8().is_multiple_of(4) {
        &[1, 0, 2]
    } else {
        &[1, 0]
    };
    let mut first: Option<Result<Vec<f32>, String>> = None;
    let mut activation = None;
    for isa in isas() {
        for &threads in threads_set {
            let Ok(mut w) = PreparedWeight::new(view) else {
                return;
            };
            if want_q8 {
                let _ = w.set_activation(Activation::Q8_1);
            }
            activation = Some(w.activation());
            w.set_isa(isa).unwrap();
            w.set_threads(threads).unwrap();
            let mut y = vec![CANARY; m * n + 1];
            let r = w.forward_f32(&x, m, bias.as_deref(), &mut y);
            assert!(untouched(&y[m * n..]), "forward wrote past M × N");
            let got = match r {
                Ok(()) => Ok(y[..m * n].to_vec()),
                Err(e) => {
                    assert!(
                        untouched(&y),
                        "forward wrote on error ({isa:?}, {threads} threads): {e}"
                    );
                    Err(e.to_string())
                }
            };
            // bf16 outputs through the byte interface: the f32 result rounded, or the same error.
            let xb: Vec<u8> = x.iter().flat_map(|v| v.to_ne_bytes()).collect();
            let mut yb = vec![0xA5u8; 2 * m * n];
            match (
                w.forward(&xb, Dtype::F32, m, k, bias.as_deref(), &mut yb, Dtype::Bf16),
                &got,
            ) {
                (Ok(()), Ok(y)) => {
                    for (i, v) in y.iter().enumerate() {
                        let g = u16::from_ne_bytes([yb[2 * i], yb[2 * i + 1]]);
                        let e = ninfer_fuzz::bf16_rne(*v);
                        assert!(
                            g == e || (g & 0x7FFF > 0x7F80 && e & 0x7FFF > 0x7F80),
                            "bf16 y[{i}]"
                        );
                    }
                }
                (Err(_), Err(_)) => {
                    assert!(yb.iter().all(|&b| b == 0xA5), "bf16 forward wrote on error")
                }
                (r, _) => panic!("bf16 forward {r:?} disagrees with f32 forward {got:?}"),
            }
            match &first {
                None => first = Some(got),
                Some(Ok(f)) => {
                    let g = got.as_ref().expect("one path failed, another succeeded");
                    assert!(
                        same_all(f, g),
                        "bits differ on {isa:?} with {threads} threads"
                    );
                }
                Some(Err(f)) => assert_eq!(
                    got.as_ref().err(),
                    Some(f),
                    "outcomes differ on {isa:?}, {threads} threads"
                ),
            }
        }
    }
    let Some(Ok(y)) = first else { return };
    // The oracle, for weights that validate.
    if ninfer::validate::validate(&view).is_err()
        || matches!(
            view.format(),
            Format::GgufQ2_K | Format::GgufQ4_K | Format::GgufQ5_K
        )
        || x.iter().any(|v| !v.is_finite())
    {
        return;
    }
    let mut w = vec![0f32; n * k];
    for (r, row) in w.chunks_mut(k).enumerate() {
        decode_row(&view, r as u64, row).expect("a validated row decodes");
    }
    let v: Vec<f64> = if activation == Some(Activation::Q8_1) {
        x.chunks(k).flat_map(q8_1_xhat).collect()
    } else {
        x.iter().map(|&a| a as f64).collect()
    };
    for mi in 0..m {
        for r in 0..n {
            let b = bias.as_ref().map_or(0.0, |b| b[r] as f64);
            let (mut yref, mut sabs) = (b, b.abs());
            for j in 0..k {
                let p = w[r * k + j] as f64 * v[mi * k + j];
                yref += p;
                sabs += p.abs();
            }
            // Only where no f32 partial sum can overflow (the criterion assumes none).
            if !sabs.is_finite() || sabs * (k as f64 + 8.0) > 1e37 {
                continue;
            }
            let got = y[mi * n + r] as f64;
            let tol = tolerance(k, sabs, yref, Dtype::F32);
            assert!(
                (got - yref).abs() <= tol,
                "{} [{n}, {k}] y[{mi}, {r}] = {got:e}, oracle {yref:e}, |err| {:e} > tol {tol:e}",
                view.format(),
                (got - yref).abs()
            );
        }
    }
});
