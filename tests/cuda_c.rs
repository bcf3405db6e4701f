//! The CUDA exports through the C ABI on a machine without a usable GPU (CI): every entry
//! point answers `NO_DEVICE` with a message, refuses NULL out-pointers first, and leaves
//! its outputs untouched; the support queries agree with the build. (On a GPU the device
//! tests of `src/linear/cuda/` compare CUDA with the CPU bit for bit.)

mod common;
use common::*;

use ninfer::{Format, Status};
use std::ffi::c_void;

#[repr(C)]
struct Handle {
    _private: [u8; 0],
}

#[repr(C)]
struct DeviceInfo {
    name: [u8; 256],
    major: u32,
    minor: u32,
    total: u64,
    sms: u32,
    l2: u32,
    native: u32,
}

#[repr(C)]
struct DeviceView {
    format: u32,
    layout: u32,
    rows: u64,
    cols: u64,
    addr: [u64; 3],
    len: [u64; 3],
}

unsafe extern "C" {
    fn ninfer_cuda_compiled() -> u32;
    fn ninfer_cuda_device_count(out: *mut u32) -> Status;
    fn ninfer_cuda_device_properties(ordinal: u32, out: *mut DeviceInfo) -> Status;
    fn ninfer_cuda_linear_prepare(view: *const View, ordinal: u32, out: *mut *mut Handle)
    -> Status;
    fn ninfer_cuda_linear_prepare_device(
        view: *const DeviceView,
        ordinal: u32,
        out: *mut *mut Handle,
    ) -> Status;
    fn ninfer_cuda_linear_workspace_size(h: *const Handle, m: u64, out: *mut u64) -> Status;
    fn ninfer_linear_prepare(view: *const View, device: u32, out: *mut *mut Handle) -> Status;
    fn ninfer_linear_supported(format: u32, layout: u32, x: u32, y: u32, device: u32) -> Status;
    fn ninfer_linear_activation_supported(format: u32, layout: u32, a: u32, device: u32) -> Status;
    fn ninfer_linear_free(h: *mut Handle);
    fn ninfer_status_name(s: u32) -> *const std::ffi::c_char;
}

/// A single-plane view (GGUF blocks) of `bytes`.
fn view(format: Format, rows: u64, cols: u64, bytes: &[u8]) -> View {
    View {
        format: format as u32,
        layout: format.info().layout as u32,
        rows,
        cols,
        planes: [Bytes::of(bytes), Bytes::NONE, Bytes::NONE],
    }
}

/// This thread's last error message.
fn last_message() -> String {
    let mut buf = [0 as std::ffi::c_char; 512];
    unsafe { ninfer_last_error_message(buf.as_mut_ptr(), buf.len()) };
    unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// Whether this machine has a usable CUDA device (then these tests do not apply).
fn device_present() -> bool {
    let mut n = 0u32;
    (unsafe { ninfer_cuda_device_count(&mut n) }) == Status::Ok && n > 0
}

#[test]
fn compiled_flag_matches_the_build() {
    assert_eq!(
        unsafe { ninfer_cuda_compiled() },
        cfg!(feature = "cuda") as u32
    );
    let name = unsafe { std::ffi::CStr::from_ptr(ninfer_status_name(Status::NoDevice as u32)) };
    assert_eq!(name.to_str().unwrap(), "NO_DEVICE");
}

#[test]
fn every_entry_point_answers_no_device_and_writes_nothing() {
    if device_present() {
        println!("skipped: a CUDA device is present");
        return;
    }
    let mut n = 77u32;
    assert_eq!(
        unsafe { ninfer_cuda_device_count(&mut n) },
        Status::NoDevice
    );
    assert_eq!(n, 77);
    let msg = last_message();
    assert!(
        msg.contains("no CUDA support") || msg.contains("driver"),
        "{msg}"
    );
    let mut info = DeviceInfo {
        name: [0xAA; 256],
        major: 7,
        minor: 7,
        total: 7,
        sms: 7,
        l2: 7,
        native: 7,
    };
    assert_eq!(
        unsafe { ninfer_cuda_device_properties(0, &mut info) },
        Status::NoDevice
    );
    assert_eq!((info.name[0], info.major, info.total), (0xAA, 7, 7));

    let w = vec![0u8; 18 * 4];
    let view = view(Format::GgufQ4_0, 2, 64, &w);
    let canary = 0x5A5A as *mut Handle;
    let mut h = canary;
    assert_eq!(
        unsafe { ninfer_cuda_linear_prepare(&view, 0, &mut h) },
        Status::NoDevice
    );
    assert_eq!(h, canary);
    assert_eq!(
        unsafe { ninfer_linear_prepare(&view, 1, &mut h) },
        Status::NoDevice
    );
    assert_eq!(h, canary);
    let dv = DeviceView {
        format: Format::GgufQ4_0 as u32,
        layout: view.layout,
        rows: 2,
        cols: 64,
        addr: [0x1000, 0, 0],
        len: [72, 0, 0],
    };
    assert_eq!(
        unsafe { ninfer_cuda_linear_prepare_device(&dv, 0, &mut h) },
        Status::NoDevice
    );
    assert_eq!(h, canary);
    // Structural errors come before the device question.
    let bad = DeviceView {
        len: [71, 0, 0],
        ..dv
    };
    assert_eq!(
        unsafe { ninfer_cuda_linear_prepare_device(&bad, 0, &mut h) },
        Status::SizeMismatch
    );
    let null = DeviceView {
        addr: [0, 0, 0],
        ..dv
    };
    assert_eq!(
        unsafe { ninfer_cuda_linear_prepare_device(&null, 0, &mut h) },
        Status::NullPointer
    );
    assert_eq!(h, canary);
}

#[test]
fn null_out_pointers_are_refused_first() {
    let w = vec![0u8; 18 * 4];
    let view = view(Format::GgufQ4_0, 2, 64, &w);
    unsafe {
        assert_eq!(
            ninfer_cuda_device_count(std::ptr::null_mut()),
            Status::NullPointer
        );
        assert_eq!(
            ninfer_cuda_device_properties(0, std::ptr::null_mut()),
            Status::NullPointer
        );
        assert_eq!(
            ninfer_cuda_linear_prepare(&view, 0, std::ptr::null_mut()),
            Status::NullPointer
        );
        assert_eq!(
            ninfer_cuda_linear_prepare_device(std::ptr::null(), 0, std::ptr::null_mut()),
            Status::NullPointer
        );
        let mut bytes = 9u64;
        assert_eq!(
            ninfer_cuda_linear_workspace_size(std::ptr::null(), 1, &mut bytes),
            Status::NullPointer
        );
        assert_eq!(bytes, 9);
    }
}

/// A CPU handle needs no CUDA workspace.
#[test]
fn cpu_handles_need_no_workspace() {
    let w = vec![0u8; 18 * 4];
    let view = view(Format::GgufQ4_0, 2, 64, &w);
    let mut h: *mut Handle = std::ptr::null_mut();
    unsafe {
        assert_eq!(ninfer_linear_prepare(&view, 0, &mut h), Status::Ok);
        let mut bytes = 9u64;
        assert_eq!(
            ninfer_cuda_linear_workspace_size(h, 8, &mut bytes),
            Status::Ok
        );
        assert_eq!(bytes, 0);
        ninfer_linear_free(h);
    }
}

/// The support queries: CUDA is supported exactly when the build has it, for every format
/// and profile the CPU supports.
#[test]
fn support_queries_follow_the_build() {
    for f in Format::all() {
        let layout = f.info().layout as u32;
        let got = unsafe { ninfer_linear_supported(f as u32, layout, 0, 0, 1) };
        let want = cfg!(feature = "cuda") && f != Format::Int32;
        assert_eq!(got == Status::Ok, want, "{f}");
        for a in [0, 1] {
            let gpu = unsafe { ninfer_linear_activation_supported(f as u32, layout, a, 1) };
            let cpu = unsafe { ninfer_linear_activation_supported(f as u32, layout, a, 0) };
            assert_eq!(
                gpu == Status::Ok,
                cfg!(feature = "cuda") && cpu == Status::Ok,
                "{f} {a}"
            );
        }
    }
    let _ = std::ptr::null::<c_void>();
}
