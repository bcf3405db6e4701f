//! The CLI's safetensors reader (`cli/src/st.rs`, compiled in from its source) on
//! arbitrary bytes.
//!
//! Properties: parsing never panics; on success every plain tensor's data lies inside the
//! file, every encoded entry's view is either refused or has exactly the planes its
//! descriptor's layout sizes, its descriptor's text parses back to itself, and validation
//! and row decoding of the view never panic.
#![no_main]

#[allow(dead_code)]
#[path = "../../cli/src/st.rs"]
mod st;
// st.rs opens files through gguf.rs's regular-file check.
#[allow(dead_code)]
#[path = "../../cli/src/gguf.rs"]
mod gguf;
// st.rs allocates its word vectors through alloc.rs's fallible helper.
#[path = "../../cli/src/alloc.rs"]
mod alloc;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.is_empty() {
        return; // an anonymous map cannot be empty; the reader's length checks start at 8
    }
    let mut m = memmap2::MmapMut::map_anon(data.len()).expect("anonymous map");
    m.copy_from_slice(data);
    let Ok(f) = st::StFile::parse(m.make_read_only().expect("read-only map")) else {
        return;
    };
    assert_eq!(f.bytes(), data);
    for e in &f.entries {
        match e {
            st::Entry::Plain(p) => {
                let _ = (
                    st::dtype_name(p.dtype),
                    f.data(p).len(),
                    st::widen(p.dtype, f.data(p)).map(|v| v.map(|v| v.len())),
                );
            }
            st::Entry::Encoded(enc) => {
                assert_eq!(st::Descriptor::parse(&enc.desc.text()).unwrap(), enc.desc);
                let Ok(view) = f.view(enc) else { continue };
                let sizes = ninfer::layouts::plane_sizes(
                    view.format(),
                    view.layout(),
                    view.rows(),
                    view.cols(),
                )
                .unwrap();
                for (i, s) in sizes.iter().enumerate() {
                    if !(view.format() == ninfer::Format::Nvfp4 && i == 2) {
                        assert_eq!(view.plane(i).len(), *s, "plane {i}");
                    }
                }
                let _ = ninfer::validate::validate(&view);
                if view.cols() <= 1 << 16 {
                    let mut out = vec![0f32; view.cols()];
                    for r in 0..view.rows().min(4) as u64 {
                        let _ = ninfer::decode::decode_row(&view, r, &mut out);
                    }
                }
            }
            st::Entry::Broken { message, .. } => assert!(!message.is_empty()),
        }
    }
});
