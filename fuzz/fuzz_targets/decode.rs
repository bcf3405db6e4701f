//! Row decoding of an arbitrary registered format, shape and payload.
//!
//! Properties: `decode_row` / `decode_row_as` / `decode_rows` never panic; on success
//! exactly K values (K × dtype bytes) are written and nothing past them; on error nothing
//! is written (canary); `decode_row_as` is `decode_row` rounded (bf16, f16 re-derived here
//! with RNE); `decode_rows` is the concatenation of `decode_row`; a short buffer and an
//! out-of-range row are refused.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ninfer::decode::{decode_row, decode_row_as, decode_rows};
use ninfer::{Dtype, Error};
use ninfer_fuzz::{CANARY, Input, Tensor, bf16_rne, f16_rne, same, same_all, untouched};

fuzz_target!(|data: &[u8]| {
    let mut inp = Input::new(data);
    let t = Tensor::from_input(&mut inp, 24);
    let Ok(view) = t.view() else { return };
    let (rows, k) = (view.rows(), view.cols());
    let mut decoded: Vec<Option<Vec<f32>>> = Vec::new();
    for row in 0..=rows as u64 {
        let mut out = vec![CANARY; k + 3];
        match decode_row(&view, row, &mut out) {
            Ok(()) => {
                assert!(row < rows as u64, "row {row} of {rows} decoded");
                assert!(untouched(&out[k..]), "decode_row wrote past K");
                out.truncate(k);
                decoded.push(Some(out));
            }
            Err(e) => {
                assert!(untouched(&out), "decode_row wrote on error: {e}");
                if row == rows as u64 {
                    assert!(matches!(e, Error::RowOutOfRange { .. }), "{e}");
                } else {
                    decoded.push(None);
                }
            }
        }
        // One value short: refused, nothing written.
        if k > 0 && row < rows as u64 {
            let mut short = vec![CANARY; k - 1];
            let e = decode_row(&view, row, &mut short).unwrap_err();
            assert!(matches!(e, Error::BufferTooSmall { .. }), "{e}");
            assert!(untouched(&short));
        }
    }
    // decode_row_as: f32, bf16, f16 words of the f32 row.
    for (r, want) in decoded.iter().enumerate() {
        for dtype in [Dtype::F32, Dtype::Bf16, Dtype::F16] {
            let n = k * dtype.size();
            let mut out = vec![0xA5u8; n + 5];
            match (decode_row_as(&view, r as u64, dtype, &mut out), want) {
                (Ok(()), Some(w)) => {
                    assert!(out[n..].iter().all(|&b| b == 0xA5), "wrote past K");
                    for (i, v) in w.iter().enumerate() {
                        match dtype {
                            Dtype::F32 => {
                                let g =
                                    f32::from_ne_bytes(out[4 * i..4 * i + 4].try_into().unwrap());
                                assert!(same(g, *v), "f32 col {i}");
                            }
                            Dtype::Bf16 | Dtype::F16 => {
                                let g =
                                    u16::from_ne_bytes(out[2 * i..2 * i + 2].try_into().unwrap());
                                let e = if dtype == Dtype::Bf16 {
                                    bf16_rne(*v)
                                } else {
                                    f16_rne(*v)
                                };
                                let nan = |b: u16| {
                                    if dtype == Dtype::Bf16 {
                                        b & 0x7FFF > 0x7F80
                                    } else {
                                        b & 0x7FFF > 0x7C00
                                    }
                                };
                                assert!(
                                    g == e || (nan(g) && nan(e)),
                                    "{dtype:?} col {i}: {g:#06x} vs {e:#06x} of {v:e}"
                                );
                            }
                        }
                    }
                }
                (Err(e), None) => assert!(out.iter().all(|&b| b == 0xA5), "wrote on error: {e}"),
                (res, _) => {
                    panic!("decode_row_as {dtype:?} row {r}: {res:?} disagrees with decode_row")
                }
            }
        }
    }
    // decode_rows over a range = the rows one by one (or refused, nothing written).
    let first = (inp.u8() as usize % rows) as u64;
    let count = 1 + inp.u8() as usize % (rows - first as usize);
    let mut out = vec![CANARY; count * k + 2];
    match decode_rows(&view, first, count as u64, &mut out) {
        Ok(()) => {
            assert!(untouched(&out[count * k..]));
            for i in 0..count {
                let want = decoded[first as usize + i]
                    .as_ref()
                    .expect("decode_rows ok, decode_row refused");
                assert!(
                    same_all(&out[i * k..(i + 1) * k], want),
                    "decode_rows row {i}"
                );
            }
        }
        Err(e) => {
            assert!(untouched(&out), "decode_rows wrote on error: {e}");
            let any_refused = (0..count).any(|i| decoded[first as usize + i].is_none());
            assert!(
                any_refused,
                "decode_rows refused ({e}) rows that decode_row accepts"
            );
        }
    }
});
