//! Validation against decoding, arbitrary format, shape and payload.
//!
//! Properties: `validate` never panics; `validate` ok ⇒ every row decodes, and for GGUF and
//! grouped formats every decoded value is finite (finite binary16 scales times bounded
//! codes; fp8 rows with a large BF16 scale and nvfp4 with a tiny divisor may legitimately
//! decode to ±Inf); direct and GGUF rows always decode (their decoding
//! refuses nothing); for grouped, fp8-row and nvfp4 (whose decoders check the row's rules),
//! a row refused by decoding makes `validate` fail at that row or earlier, and a `validate`
//! failure located at row r means row r (or an earlier row) is refused by decoding, except
//! for locations that belong to no row (nvfp4 scale-plane padding) or to a whole source
//! (an nvfp4 divisor, checked by every row of its source).
#![no_main]

use libfuzzer_sys::fuzz_target;
use ninfer::decode::{decode_row, is_decodable};
use ninfer::validate::validate;
use ninfer::{Category, Error, Location};
use ninfer_fuzz::{CANARY, Input, Tensor};

fuzz_target!(|data: &[u8]| {
    let mut inp = Input::new(data);
    let t = Tensor::from_input(&mut inp, 24);
    let Ok(view) = t.view() else { return };
    if !is_decodable(&view) {
        let _ = validate(&view);
        return;
    }
    let category = view.format().info().category;
    let k = view.cols();
    let mut first_refused = None;
    let mut all_finite = true;
    for r in 0..view.rows() {
        let mut out = vec![CANARY; k];
        match decode_row(&view, r as u64, &mut out) {
            Ok(()) => all_finite &= out.iter().all(|v| v.is_finite()),
            Err(e) => {
                assert!(matches!(e, Error::InvalidEncoding { .. }), "row {r}: {e}");
                first_refused.get_or_insert(r as u64);
            }
        }
    }
    let refusing = matches!(
        category,
        Category::GroupedInt | Category::RowScaledFloat | Category::BlockScaledFloat
    );
    if !refusing {
        assert_eq!(
            first_refused, None,
            "a {category:?} row was refused by decoding"
        );
    }
    match validate(&view) {
        Ok(()) => {
            assert_eq!(first_refused, None, "validate ok, decoding refused a row");
            if matches!(category, Category::GgufBlock | Category::GroupedInt) {
                assert!(all_finite, "validate ok, a decoded value is not finite");
            }
        }
        Err(Error::InvalidEncoding { at, reason }) => {
            let is_divisor = category == Category::BlockScaledFloat
                && at.row != Location::NONE
                && at.block == Location::NONE;
            if let (Some(r), false) = (first_refused, is_divisor) {
                // The lowest offending location is reported: no later row than the first
                // refused one (nvfp4 divisors come first and are reported at their source's
                // first row).
                assert!(
                    at.row <= r || at.row == Location::NONE,
                    "validate at {at}, decode refuses row {r}"
                );
            }
            if refusing && at.row != Location::NONE {
                if !is_divisor {
                    assert_eq!(
                        first_refused,
                        Some(at.row),
                        "validate at {at} ({reason}) but decoding refuses {first_refused:?}"
                    );
                } else {
                    assert!(
                        first_refused.is_some(),
                        "divisor refused by validate, not by decoding"
                    );
                }
            }
        }
        Err(e) => panic!("validate: unexpected error {e}"),
    }
});
