//! The CLI's GGUF reader (`cli/src/gguf.rs`, compiled in from its source) on arbitrary
//! bytes.
//!
//! Properties: parsing never panics; on success every tensor's `data` is exactly `nbytes`
//! bytes when they lie inside the file and refused otherwise (a truncated file parses: its
//! data is checked when asked for), its shape accessors and every metadata value's
//! text never panic, and a tensor of a registered format with a valid shape gives a
//! `WeightView` whose rows decode or are refused without panicking.
#![no_main]

#[allow(dead_code)]
#[path = "../../cli/src/gguf.rs"]
mod gguf;

use libfuzzer_sys::fuzz_target;
use ninfer::{Format, WeightView};

fuzz_target!(|data: &[u8]| {
    let bytes = if data.is_empty() {
        gguf::Bytes::Static(&[])
    } else {
        let mut m = memmap2::MmapMut::map_anon(data.len()).expect("anonymous map");
        m.copy_from_slice(data);
        gguf::Bytes::Mapped(m.make_read_only().expect("read-only map"))
    };
    let Ok(f) = gguf::GgufFile::parse(bytes) else {
        return;
    };
    assert_eq!(f.bytes(), data);
    assert_eq!(f.data_start % f.alignment, 0);
    for (key, value) in &f.metadata {
        let _ = (key.len(), value.to_string());
    }
    for t in &f.tensors {
        let _ = (t.k(), t.rows(), t.elements(), t.shape_text());
        // Data is checked against the file's end when it is asked for (a truncated file
        // parses; its tensors past the end are refused one by one).
        let end = f
            .data_start
            .checked_add(t.offset)
            .and_then(|s| s.checked_add(t.nbytes));
        let inside = end.is_some_and(|e| e <= data.len() as u64);
        let Ok(bytes) = f.data(t) else {
            assert!(!inside, "{}: data inside the file refused", t.name);
            continue;
        };
        assert!(inside, "{}: data past the end accepted", t.name);
        assert_eq!(bytes.len() as u64, t.nbytes, "{}: data length", t.name);
        let (Ok(format), Some(rows)) = (Format::from_ggml_type(t.ggml_type), t.rows()) else {
            continue;
        };
        let (Ok(rows), Ok(cols)) = (usize::try_from(rows), usize::try_from(t.k())) else {
            continue;
        };
        let Ok(view) = WeightView::single(format, rows, cols, bytes) else {
            continue;
        };
        let _ = ninfer::validate::validate(&view);
        if cols <= 1 << 16 {
            let mut out = vec![0f32; cols];
            for r in 0..rows.min(4) as u64 {
                let _ = ninfer::decode::decode_row(&view, r, &mut out);
            }
        }
    }
});
