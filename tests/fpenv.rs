//! A caller running with flush-to-zero / denormals-are-zero (e.g. a `-ffast-math` runtime)
//! gets the same words from the C API as a default-environment caller: the boundary clears
//! FTZ/DAZ for the call and restores the caller's control word.
#![cfg(target_arch = "x86_64")]

use std::ffi::c_void;

unsafe extern "C" {
    fn ninfer_fp8_row_maxabs(
        format: u32,
        src_dtype: u32,
        src: *const c_void,
        src_len: usize,
        rows: u64,
        cols: u64,
        plane0: *mut u8,
        plane0_len: usize,
        plane1: *mut u8,
        plane1_len: usize,
    ) -> u32;
}

fn mxcsr() -> u32 {
    let mut v = 0u32;
    // SAFETY: stores the SSE control word to a local.
    unsafe { std::arch::asm!("stmxcsr [{}]", in(reg) &mut v) };
    v
}

fn set_mxcsr(v: u32) {
    // SAFETY: a control word read from this thread with only FTZ (bit 15) / DAZ (bit 6) changed.
    unsafe { std::arch::asm!("ldmxcsr [{}]", in(reg) &v) };
}

/// fp8_e4m3fn_row_bf16 of one tiny row (its scale is the smallest normal BF16, its codes
/// come from products in the subnormal range), under the given control word.
fn encode_tiny_row(ftz_daz: bool) -> (Vec<u8>, Vec<u8>, u32, u32) {
    std::thread::spawn(move || {
        let src: Vec<f32> = (0..128).map(|i| (i as f32).sin() * 1e-39).collect();
        let orig = mxcsr();
        if ftz_daz {
            set_mxcsr(orig | 0x8040);
        }
        let (mut codes, mut scales) = (vec![0u8; 128], vec![0u8; 2]);
        // SAFETY: every pointer is valid for its length during the call.
        let st = unsafe {
            ninfer_fp8_row_maxabs(
                ninfer::Format::Fp8E4m3fnRowBf16 as u32,
                ninfer::Dtype::F32 as u32,
                src.as_ptr().cast(),
                src.len(),
                1,
                128,
                codes.as_mut_ptr(),
                codes.len(),
                scales.as_mut_ptr(),
                scales.len(),
            )
        };
        let after = mxcsr();
        set_mxcsr(orig);
        (codes, scales, st, after)
    })
    .join()
    .unwrap()
}

#[test]
fn ftz_daz_caller_gets_the_default_environment_words() {
    let (codes, scales, st, _) = encode_tiny_row(false);
    assert_eq!(st, 0);
    assert_eq!(scales, vec![0x80, 0x00], "BF16 scale 0x0080");
    assert!(codes.iter().filter(|&&c| c & 0x7F != 0).count() > 100);
    let (codes2, scales2, st2, after) = encode_tiny_row(true);
    assert_eq!(st2, 0);
    assert_eq!((codes2, scales2), (codes, scales));
    assert_eq!(after & 0x8040, 0x8040, "the caller's FTZ/DAZ are restored");
}
