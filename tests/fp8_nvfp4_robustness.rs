//! Arbitrary payload bytes never panic: every row of random FP8 and NVFP4 views either
//! decodes or is refused with INVALID_ENCODING, validation agrees with per-row decoding,
//! and a refused row leaves the output untouched.

use ninfer::formats::{fp8_row, nvfp4};
use ninfer::layouts::plane_sizes;
use ninfer::{Format, Status, WeightView, decode};

struct Rng(u64);
impl Rng {
    fn byte(&mut self) -> u8 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 32) as u8
    }
}

#[test]
fn random_payloads_decode_or_refuse() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut decoded = 0;
    let mut refused = 0;
    for trial in 0..300 {
        for format in [
            Format::Fp8E4m3fnRowBf16,
            Format::Fp8E4m3fnRowFp16,
            Format::Nvfp4,
        ] {
            let (rows, cols) = (1 + trial % 5, 16 * (1 + trial % 3));
            let layout = format.info().layout;
            let sizes = plane_sizes(format, layout, rows, cols).unwrap();
            // Bias towards valid-looking words so both outcomes occur.
            let mut planes: Vec<Vec<u8>> = sizes
                .iter()
                .map(|&n| (0..n).map(|_| rng.byte()).collect())
                .collect();
            if trial % 2 == 0 {
                for p in &mut planes[..2] {
                    for b in p.iter_mut() {
                        *b &= 0x3E;
                    }
                }
                if format == Format::Nvfp4 {
                    planes[2] = 1.5f32.to_le_bytes().to_vec();
                    // Canonical padding.
                    let mut lin = vec![0u8; rows * cols / 16];
                    ninfer::layouts::block_scale::unpack_scales(
                        rows,
                        cols / 16,
                        &planes[1],
                        &mut lin,
                    )
                    .unwrap();
                    ninfer::layouts::block_scale::pack_scales(
                        rows,
                        cols / 16,
                        &lin,
                        &mut planes[1],
                    )
                    .unwrap();
                }
            }
            let v = WeightView::new(
                format,
                layout,
                rows,
                cols,
                [&planes[0], &planes[1], &planes[2]],
            )
            .unwrap();
            let mut all_ok = true;
            for r in 0..rows {
                let mut out = vec![f32::from_bits(0x7FC0_1234); cols];
                match decode::decode_row(&v, r as u64, &mut out) {
                    Ok(()) => decoded += 1,
                    Err(e) => {
                        assert_eq!(e.status(), Status::InvalidEncoding, "{e}");
                        assert!(out.iter().all(|x| x.to_bits() == 0x7FC0_1234));
                        all_ok = false;
                        refused += 1;
                    }
                }
            }
            let val = match format {
                Format::Nvfp4 => nvfp4::validate(&v),
                _ => fp8_row::validate(&v),
            };
            // Row decoding checks rows; validation also checks padding.
            if all_ok && format != Format::Nvfp4 {
                assert!(val.is_ok());
            }
            if !all_ok {
                assert_eq!(val.unwrap_err().status(), Status::InvalidEncoding);
            }
        }
    }
    println!("robustness: {decoded} rows decoded, {refused} refused");
    assert!(decoded > 100 && refused > 100);
}
