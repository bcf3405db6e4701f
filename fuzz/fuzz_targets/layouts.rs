//! Every layout's pack/unpack (`src/layouts/`): round-trip identity both ways.
//!
//! - row_split_k128_v1 (grouped formats): logical codes/scales → `pack` → `unpack` is the
//!   identity when `pack` accepts (nothing written when it refuses); arbitrary planes →
//!   `unpack` → `pack` gives the same bytes back when `unpack` accepts (the planes were
//!   canonical).
//! - block_scale_k16_m128x4_v1 (nvfp4 scales): `unpack_scales(pack_scales(x)) = x`;
//!   `pack_scales(unpack_scales(s)) = s` exactly when `s` has zero padding.
//! - row_scale_v1 / row_interleaved_v1 (fp8 rows): words → `pack` → `unpack` identity and
//!   planes → `unpack` → `pack` identity (these layouts copy words unchanged).
#![no_main]

use libfuzzer_sys::fuzz_target;
use ninfer::formats::fp8_row;
use ninfer::formats::grouped::Scheme;
use ninfer::layouts::{block_scale, plane_sizes, row_split};
use ninfer::{Category, Format, WeightView};
use ninfer_fuzz::{Input, formats};

fuzz_target!(|data: &[u8]| {
    let mut inp = Input::new(data);
    match inp.u8() % 3 {
        0 => grouped(&mut inp),
        1 => nvfp4_scales(&mut inp),
        _ => fp8_rows(&mut inp),
    }
});

fn pick(inp: &mut Input<'_>, category: Category) -> Format {
    let fs: Vec<Format> = formats()
        .into_iter()
        .filter(|f| f.info().category == category)
        .collect();
    fs[inp.u8() as usize % fs.len()]
}

fn grouped(inp: &mut Input<'_>) {
    let format = pick(inp, Category::GroupedInt);
    let s = Scheme::of(format).unwrap();
    let layout = format.info().layout;
    let rows = 1 + inp.u8() as usize % 3;
    let cols = 1 + inp.u16() as usize % 400;
    let ng = s.groups(cols);
    let sizes = plane_sizes(format, layout, rows, cols).unwrap();
    if inp.u8() & 1 == 0 {
        // Logical → planes → logical. Codes drawn in the field's signed range, scales
        // mostly positive finite binary16 (the rules refuse the rest).
        let codes: Vec<i8> = inp
            .bytes(rows * cols)
            .iter()
            .map(|&b| (b as i8) >> (8 - s.bits.min(8)))
            .collect();
        let raw = inp.bytes(2 * rows * ng);
        let mask = if inp.u8() & 1 == 0 { 0x7BFF } else { 0xFFFF };
        let scales: Vec<u16> = raw
            .chunks(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]) & mask)
            .collect();
        let mut planes = sizes.map(|n| vec![0xA5u8; n]);
        let [p0, p1, p2] = &mut planes;
        match row_split::pack(format, rows, cols, &codes, &scales, [p0, p1, p2]) {
            Ok(()) => {
                let view = WeightView::new(
                    format,
                    layout,
                    rows,
                    cols,
                    [&planes[0], &planes[1], &planes[2]],
                )
                .unwrap();
                let (c2, s2) = row_split::unpack(&view).expect("packed planes unpack");
                assert_eq!(c2, codes, "{format}: codes round trip");
                assert_eq!(s2, scales, "{format}: scales round trip");
                ninfer::validate::validate(&view).expect("packed planes validate");
            }
            Err(e) => assert!(
                planes.iter().all(|p| p.iter().all(|&b| b == 0xA5)),
                "pack wrote on error: {e}"
            ),
        }
    } else {
        // Planes → logical → planes.
        let planes = sizes.map(|n| inp.bytes(n));
        let view = WeightView::new(
            format,
            layout,
            rows,
            cols,
            [&planes[0], &planes[1], &planes[2]],
        )
        .unwrap();
        let unpacked = row_split::unpack(&view);
        assert_eq!(
            unpacked.is_ok(),
            ninfer::validate::validate(&view).is_ok(),
            "unpack and validate disagree"
        );
        if let Ok((codes, scales)) = unpacked {
            let mut again = sizes.map(|n| vec![0u8; n]);
            let [p0, p1, p2] = &mut again;
            row_split::pack(format, rows, cols, &codes, &scales, [p0, p1, p2])
                .expect("unpacked words pack");
            assert_eq!(again, planes, "{format}: planes round trip");
        }
    }
}

fn nvfp4_scales(inp: &mut Input<'_>) {
    let rows = 1 + inp.u16() as usize % 300;
    let nkb = 1 + inp.u8() as usize % 9;
    let sw = block_scale::scales_len(rows, nkb).unwrap();
    let linear = inp.bytes(rows * nkb);
    let mut packed = vec![0xA5u8; sw];
    block_scale::pack_scales(rows, nkb, &linear, &mut packed).unwrap();
    assert!(
        block_scale::first_nonzero_padding(&packed, rows, nkb).is_none(),
        "padding not zero"
    );
    let mut back = vec![0u8; rows * nkb];
    block_scale::unpack_scales(rows, nkb, &packed, &mut back).unwrap();
    assert_eq!(back, linear, "scales round trip");
    // A row read agrees with the logical matrix.
    let m = inp.u16() as usize % rows;
    let mut one = vec![0u8; nkb];
    block_scale::row_scales(&packed, m, &mut one);
    assert_eq!(one, linear[m * nkb..(m + 1) * nkb]);
    // An arbitrary swizzled plane: unpack then pack gives it back iff its padding is zero.
    let swz = inp.bytes(sw);
    block_scale::unpack_scales(rows, nkb, &swz, &mut back).unwrap();
    block_scale::pack_scales(rows, nkb, &back, &mut packed).unwrap();
    assert_eq!(
        packed == swz,
        block_scale::first_nonzero_padding(&swz, rows, nkb).is_none()
    );
    // Wrong lengths: refused, nothing written.
    let mut short = vec![0xA5u8; sw - 1];
    assert!(block_scale::pack_scales(rows, nkb, &linear, &mut short).is_err());
    assert!(short.iter().all(|&b| b == 0xA5));
}

fn fp8_rows(inp: &mut Input<'_>) {
    let format = pick(inp, Category::RowScaledFloat);
    let layout = format.info().layout;
    let rows = 1 + inp.u8() as usize % 5;
    let cols = 1 + inp.u16() as usize % 300;
    let sizes = plane_sizes(format, layout, rows, cols).unwrap();
    let codes = inp.bytes(rows * cols);
    let scales: Vec<u16> = inp
        .bytes(2 * rows)
        .chunks(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    let mut planes = [vec![0xA5u8; sizes[0]], vec![0xA5u8; sizes[1]]];
    {
        let [p0, p1] = &mut planes;
        fp8_row::pack(format, rows, cols, &codes, &scales, [p0, p1]).unwrap();
    }
    let view = WeightView::new(format, layout, rows, cols, [&planes[0], &planes[1], &[]]).unwrap();
    let (mut c2, mut s2) = (vec![0u8; rows * cols], vec![0u16; rows]);
    fp8_row::unpack(&view, &mut c2, &mut s2).unwrap();
    assert_eq!(c2, codes, "{format}: codes round trip");
    assert_eq!(s2, scales, "{format}: scales round trip");
    // Planes → words → planes.
    let raw = [inp.bytes(sizes[0]), inp.bytes(sizes[1])];
    let view = WeightView::new(format, layout, rows, cols, [&raw[0], &raw[1], &[]]).unwrap();
    fp8_row::unpack(&view, &mut c2, &mut s2).unwrap();
    let mut again = [vec![0u8; sizes[0]], vec![0u8; sizes[1]]];
    {
        let [p0, p1] = &mut again;
        fp8_row::pack(format, rows, cols, &c2, &s2, [p0, p1]).unwrap();
    }
    assert_eq!(again, raw, "{format}: planes round trip");
    // Wrong scale count: refused, nothing written.
    let [p0, p1] = &mut planes;
    let before = (p0.clone(), p1.clone());
    assert!(fp8_row::pack(format, rows, cols, &codes, &scales[1..], [p0, p1]).is_err());
    assert_eq!((p0.clone(), p1.clone()), before);
}
