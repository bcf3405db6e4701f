//! The encoders on arbitrary f32 / bf16 / f16 bit patterns: grouped_absmax (every grouped
//! format it accepts), fp8_row_maxabs (both fp8 row formats), nvfp4_quantize.
//!
//! Properties: never panic; on success the planes validate (and every row decodes); on
//! error the planes keep their previous bytes (canary).
#![no_main]

use libfuzzer_sys::fuzz_target;
use ninfer::formats::float_source::FloatSource;
use ninfer::formats::{fp8_row, grouped, nvfp4};
use ninfer::layouts::plane_sizes;
use ninfer::{Category, Format, WeightView};
use ninfer_fuzz::{Input, formats};

fuzz_target!(|data: &[u8]| {
    let mut inp = Input::new(data);
    let which = inp.u8();
    let rows = 1 + inp.u8() as usize % 4;
    let (f32s, u16s);
    let kind = inp.u8() % 3;
    let cols = match which % 3 {
        2 => 16 * (1 + inp.u8() as usize % 12),
        _ => 1 + inp.u16() as usize % 300,
    };
    let n = rows * cols;
    // Raw bit patterns, with one case in two squeezed into a narrow exponent range so that
    // the encoders' success paths are reached as well as their refusals.
    let squeeze = inp.u8() & 1 == 0;
    let src = match kind {
        0 => {
            f32s = inp
                .bytes(4 * n)
                .chunks(4)
                .map(|c| {
                    let b = u32::from_le_bytes(c.try_into().unwrap());
                    f32::from_bits(if squeeze {
                        (b & 0x83FF_FFFF) | 0x3C00_0000
                    } else {
                        b
                    })
                })
                .collect::<Vec<f32>>();
            FloatSource::F32(&f32s)
        }
        k => {
            u16s = inp
                .bytes(2 * n)
                .chunks(2)
                .map(|c| {
                    let b = u16::from_le_bytes([c[0], c[1]]);
                    match (squeeze, k) {
                        (true, 1) => (b & 0x83FF) | 0x3C00, // bf16 in [2^-7, 2^1)
                        (true, _) => (b & 0x87FF) | 0x3000, // f16 in [2^-3, 2^1)
                        (false, _) => b,
                    }
                })
                .collect::<Vec<u16>>();
            if k == 1 {
                FloatSource::Bf16(&u16s)
            } else {
                FloatSource::F16(&u16s)
            }
        }
    };
    match which % 3 {
        0 => {
            let gs: Vec<Format> = formats()
                .into_iter()
                .filter(|f| f.info().category == Category::GroupedInt)
                .collect();
            let format = gs[inp.u8() as usize % gs.len()];
            let layout = format.info().layout;
            let sizes = plane_sizes(format, layout, rows, cols).unwrap();
            let mut planes = sizes.map(|n| vec![0xA5u8; n]);
            let [p0, p1, p2] = &mut planes;
            let r = grouped::quantize(
                format,
                src,
                rows,
                cols,
                &grouped::Options::ABSMAX,
                [p0, p1, p2],
            );
            check(format, rows, cols, r.map(|_| ()), &planes);
        }
        1 => {
            let fs: Vec<Format> = formats()
                .into_iter()
                .filter(|f| f.info().category == Category::RowScaledFloat)
                .collect();
            let format = fs[inp.u8() as usize % fs.len()];
            let sizes = plane_sizes(format, format.info().layout, rows, cols).unwrap();
            let mut planes = sizes.map(|n| vec![0xA5u8; n]);
            let [p0, p1, _] = &mut planes;
            let r = fp8_row::fp8_row_maxabs(format, src, rows, cols, [p0, p1]);
            check(format, rows, cols, r, &planes);
        }
        _ => {
            let sources = if inp.u8() & 1 == 0 { 1 } else { rows };
            let mut sizes =
                plane_sizes(Format::Nvfp4, Format::Nvfp4.info().layout, rows, cols).unwrap();
            sizes[2] = 4 * sources;
            let mut planes = sizes.map(|n| vec![0xA5u8; n]);
            let [p0, p1, p2] = &mut planes;
            let r = nvfp4::nvfp4_quantize(src, rows, cols, sources, [p0, p1, p2]);
            check(Format::Nvfp4, rows, cols, r, &planes);
        }
    }
});

fn check(format: Format, rows: usize, cols: usize, r: ninfer::Result<()>, planes: &[Vec<u8>; 3]) {
    match r {
        Ok(()) => {
            let view = WeightView::new(
                format,
                format.info().layout,
                rows,
                cols,
                [&planes[0], &planes[1], &planes[2]],
            )
            .expect("encoder output has the layout's sizes");
            if let Err(e) = ninfer::validate::validate(&view) {
                panic!("{format}: encoder output does not validate: {e}");
            }
            let mut out = vec![0f32; cols];
            for r in 0..rows as u64 {
                ninfer::decode::decode_row(&view, r, &mut out).expect("encoded row decodes");
            }
        }
        Err(e) => {
            assert!(
                planes.iter().all(|p| p.iter().all(|&b| b == 0xA5)),
                "{format}: encoder wrote on error: {e}"
            );
        }
    }
}
