//! Products under an address-space limit (`RLIMIT_AS`), each in a child process (a copy of
//! this test binary running one test with the limit set): a product whose M would need
//! temporaries beyond the limit if they grew with M runs in bounded memory and gives the
//! bits of its rows alone, and a product whose bounded temporaries still do not fit returns
//! `NINFER_STATUS_OUT_OF_MEMORY` with its message through the C API, leaves `y` untouched
//! and leaves the process running, instead of aborting it; with the default thread
//! setting and no room for a thread, a product runs on the calling thread, and later ones
//! get their pool once there is room.

#![cfg(target_os = "linux")]

mod common;
use common::*;

use ninfer::{Format, Status};
use std::ffi::c_void;
use std::process::Command;

#[repr(C)]
struct Handle {
    _private: [u8; 0],
}

unsafe extern "C" {
    fn ninfer_linear_prepare(view: *const View, device: u32, out: *mut *mut Handle) -> Status;
    fn ninfer_linear_set_threads(h: *mut Handle, threads: u32) -> Status;
    #[allow(clippy::too_many_arguments)]
    fn ninfer_linear_forward(
        h: *const Handle,
        x: *const c_void,
        x_bytes: usize,
        x_dtype: u32,
        m: u64,
        k: u64,
        bias: *const f32,
        bias_len: usize,
        y: *mut c_void,
        y_bytes: usize,
        y_dtype: u32,
    ) -> Status;
    fn ninfer_linear_free(h: *mut Handle);
}

/// The environment variable naming the test a child process runs the limited part of.
const CHILD: &str = "NINFER_TEST_RLIMIT_CHILD";
const DTYPE_F32: u32 = 0;
const DTYPE_BF16: u32 = 1;

/// Runs test `name` of this binary in a child process with [`CHILD`] set and checks that
/// it exited normally having printed `done`.
fn in_child(name: &str) {
    let out = match Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, name)
        .output()
    {
        Ok(out) => out,
        // Under an emulator without binfmt_misc the binary cannot start itself.
        Err(e) => return println!("skipped: this test binary cannot be started here: {e}"),
    };
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    println!("child stdout:\n{stdout}\nchild stderr:\n{stderr}");
    assert!(
        out.status.success() && stdout.contains("child: done"),
        "the child of {name} failed ({:?}): a call under the address-space limit must \
         not abort the process",
        out.status
    );
}

/// Whether this process is the child of test `name`.
fn is_child(name: &str) -> bool {
    std::env::var(CHILD).as_deref() == Ok(name)
}

/// This process's mapped address space in bytes (VmSize).
fn vm_size() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = s.lines().find(|l| l.starts_with("VmSize:")).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

/// Sets the soft address-space limit (the hard limit unchanged).
fn set_as_limit(bytes: u64) {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain syscalls on a local struct.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_AS, &mut lim), 0);
        lim.rlim_cur = bytes.min(lim.rlim_max);
        assert_eq!(libc::setrlimit(libc::RLIMIT_AS, &lim), 0);
    }
}

/// Lifts the soft address-space limit to the hard one.
fn lift_as_limit() {
    set_as_limit(u64::MAX);
}

/// Whether the address-space limit is enforced here: false under qemu-user, which accepts
/// `setrlimit(RLIMIT_AS)` and ignores it. Checked with the limit set: a block of `bytes`
/// (more than the headroom) must not be allocatable.
fn limit_binds(bytes: usize) -> bool {
    if can_allocate(bytes) {
        lift_as_limit();
        println!("child: skipped: RLIMIT_AS is not enforced here");
        println!("child: done");
        return false;
    }
    true
}

/// Whether a block of `bytes` can be allocated now.
fn can_allocate(bytes: usize) -> bool {
    Vec::<u8>::new().try_reserve_exact(bytes).is_ok()
}

fn last_message() -> String {
    let mut buf = vec![0u8; 1024];
    // SAFETY: buf has 1024 writable bytes.
    let len = unsafe { ninfer_last_error_message(buf.as_mut_ptr().cast(), buf.len()) };
    buf.truncate(len.min(1023));
    String::from_utf8(buf).unwrap()
}

fn bf16_view(rows: u64, cols: u64, w: &[u8]) -> View {
    View {
        format: Format::Bf16 as u32,
        layout: Format::Bf16.info().layout as u32,
        rows,
        cols,
        planes: [Bytes::of(w), Bytes::NONE, Bytes::NONE],
    }
}

/// A bf16 weight of n × k values.
fn bf16_weight(n: usize, k: usize) -> Vec<u8> {
    (0..n * k)
        .flat_map(|i| {
            let v = ((i * 37 % 101) as f32 - 50.0) / 64.0;
            half::bf16::from_f32(v).to_bits().to_le_bytes()
        })
        .collect()
}

/// A prepared handle on one thread (no thread is created under the limit).
fn prepare(v: &View) -> *mut Handle {
    let mut h: *mut Handle = std::ptr::null_mut();
    // SAFETY: v and its plane outlive the handle (freed by the callers).
    unsafe {
        assert_eq!(ninfer_linear_prepare(v, 0, &mut h), Status::Ok);
        assert_eq!(ninfer_linear_set_threads(h, 1), Status::Ok);
    }
    h
}

/// `ninfer_linear_forward` with bf16 x and f32 y, no bias.
fn forward(h: *const Handle, x: &[u8], m: usize, k: usize, y: &mut [f32]) -> Status {
    // SAFETY: x and y are live slices of the lengths given.
    unsafe {
        ninfer_linear_forward(
            h,
            x.as_ptr().cast(),
            x.len(),
            DTYPE_BF16,
            m as u64,
            k as u64,
            std::ptr::null(),
            0,
            y.as_mut_ptr().cast(),
            y.len() * 4,
            DTYPE_F32,
        )
    }
}

#[test]
// RLIMIT_AS in a re-launched copy of this binary: native only (under the aarch64 job's
// qemu-user the copy cannot start: exit 127, and the limit would bound the emulator).
#[cfg_attr(not(target_arch = "x86_64"), ignore = "native x86-64 only")]
fn huge_m_runs_in_bounded_memory_under_an_address_space_limit() {
    const NAME: &str = "huge_m_runs_in_bounded_memory_under_an_address_space_limit";
    if !is_child(NAME) {
        return in_child(NAME);
    }
    // 131072 rows of K = 256 bf16 activations (64 MiB): widened to f32 at once they
    // would take 128 MiB, twice the 64 MiB of headroom the limit leaves.
    let (n, k, m) = (16usize, 256usize, 131072usize);
    let w = bf16_weight(n, k);
    let v = bf16_view(n as u64, k as u64, &w);
    let h = prepare(&v);
    let x: Vec<u8> = (0..m * k)
        .flat_map(|i| {
            let v = ((i * 7 % 61) as f32 - 30.0) / 16.0 + (i / k) as f32 / m as f32;
            half::bf16::from_f32(v).to_bits().to_ne_bytes()
        })
        .collect();
    let mut y = vec![f32::NAN; m * n];
    let rows = [0, 1, 63, 64, 65, 4095, m / 2, m - 1];
    let alone: Vec<Vec<u32>> = rows
        .iter()
        .map(|&r| {
            let mut y1 = vec![0f32; n];
            assert_eq!(
                forward(h, &x[r * k * 2..(r + 1) * k * 2], 1, k, &mut y1),
                Status::Ok
            );
            y1.iter().map(|v| v.to_bits()).collect()
        })
        .collect();

    let headroom = 64 << 20;
    set_as_limit(vm_size() + headroom);
    // The premise: temporaries growing with M (x widened to f32) would not fit.
    if !limit_binds(m * k * 4) {
        return;
    }
    let status = forward(h, &x, m, k, &mut y);
    let message = last_message();
    lift_as_limit();
    assert_eq!(status, Status::Ok, "{message}");
    for (&r, want) in rows.iter().zip(&alone) {
        let got: Vec<u32> = y[r * n..(r + 1) * n].iter().map(|v| v.to_bits()).collect();
        assert_eq!(&got, want, "row {r} of M = {m} differs from the row alone");
    }
    assert!(y.iter().all(|v| v.is_finite()));
    // SAFETY: from prepare, freed once.
    unsafe { ninfer_linear_free(h) };
    println!("child: M = {m} × K = {k} under a limit of VmSize + 64 MiB: OK");
    println!("child: done");
}

#[test]
#[cfg_attr(not(target_arch = "x86_64"), ignore = "native x86-64 only")]
fn out_of_memory_is_a_status_through_the_c_api_not_an_abort() {
    const NAME: &str = "out_of_memory_is_a_status_through_the_c_api_not_an_abort";
    if !is_child(NAME) {
        return in_child(NAME);
    }
    // One row of K = 2²² bf16 weights (8 MiB); 16 rows of x (128 MiB as bf16) need a tile
    // of 16 × K f32 (256 MiB): more than the 64 MiB of headroom the limit leaves.
    let (n, k, m) = (1usize, 1usize << 22, 16usize);
    let w = bf16_weight(n, k);
    let v = bf16_view(n as u64, k as u64, &w);
    let h = prepare(&v);
    let x: Vec<u8> = (0..m * k)
        .flat_map(|i| half::bf16::from_f32((i % 3) as f32).to_bits().to_ne_bytes())
        .collect();
    let canary = f32::from_bits(0x7FC0_1234);
    let mut y = vec![canary; m * n];

    set_as_limit(vm_size() + (64 << 20));
    if !limit_binds(m * k * 4) {
        return;
    }
    let status = forward(h, &x, m, k, &mut y);
    let message = last_message();
    lift_as_limit();
    assert_eq!(status, Status::OutOfMemory, "{message}");
    assert_eq!(Status::OutOfMemory as u32, 22);
    assert!(
        message.contains("out of memory") && message.contains(&format!("{} bytes", m * k * 4)),
        "the message names the buffer and its bytes: {message}"
    );
    assert!(
        y.iter().all(|v| v.to_bits() == canary.to_bits()),
        "y was written on OUT_OF_MEMORY"
    );
    println!("child: status {status:?}: {message}");

    // The process goes on: without the limit the same call succeeds.
    assert_eq!(forward(h, &x, m, k, &mut y), Status::Ok);
    let want: f32 = (0..k)
        .map(|i| {
            let wv = half::bf16::from_bits(u16::from_le_bytes([w[2 * i], w[2 * i + 1]]));
            wv.to_f32() as f64 * (i % 3) as f64
        })
        .sum::<f64>() as f32;
    assert!(
        (y[0] - want).abs() <= 1e-3 * want.abs().max(1.0),
        "{} vs {want}",
        y[0]
    );
    // SAFETY: from prepare, freed once.
    unsafe { ninfer_linear_free(h) };
    println!("child: done");
}

#[test]
#[cfg_attr(not(target_arch = "x86_64"), ignore = "native x86-64 only")]
fn default_threads_when_no_thread_can_start() {
    const NAME: &str = "default_threads_when_no_thread_can_start";
    if !is_child(NAME) {
        return in_child(NAME);
    }
    // The default thread setting (0) with room for no thread stack: the first product
    // runs on the calling thread (the library's pool cannot be made), and once the limit
    // is lifted the pool is made and later products, on this handle and a new one, run.
    let (n, k, m) = (64usize, 256usize, 2usize);
    let w = bf16_weight(n, k);
    let v = bf16_view(n as u64, k as u64, &w);
    let h = prepare(&v);
    let x: Vec<u8> = (0..m * k)
        .flat_map(|i| half::bf16::from_f32((i % 5) as f32).to_bits().to_ne_bytes())
        .collect();
    let mut want = vec![0f32; m * n];
    assert_eq!(forward(h, &x, m, k, &mut want), Status::Ok);
    // SAFETY: h from prepare, not in use elsewhere.
    assert_eq!(unsafe { ninfer_linear_set_threads(h, 0) }, Status::Ok);
    set_as_limit(vm_size() + (256 << 10));
    if !limit_binds(256 << 20) {
        return;
    }
    let mut y = vec![f32::NAN; m * n];
    let status = forward(h, &x, m, k, &mut y);
    let message = last_message();
    lift_as_limit();
    assert_eq!(status, Status::Ok, "{message}");
    assert_eq!(y, want);
    for _ in 0..2 {
        y.fill(f32::NAN);
        assert_eq!(
            forward(h, &x, m, k, &mut y),
            Status::Ok,
            "{}",
            last_message()
        );
        assert_eq!(y, want);
    }
    let h2 = prepare(&v);
    // SAFETY: h2 from prepare, not in use elsewhere.
    assert_eq!(unsafe { ninfer_linear_set_threads(h2, 0) }, Status::Ok);
    y.fill(f32::NAN);
    assert_eq!(
        forward(h2, &x, m, k, &mut y),
        Status::Ok,
        "{}",
        last_message()
    );
    assert_eq!(y, want);
    // SAFETY: from prepare, each freed once.
    unsafe {
        ninfer_linear_free(h);
        ninfer_linear_free(h2);
    }
    println!("child: done");
}

/// Every encoder's planes for one source (grouped q4, fp8 rows, nvfp4), each then
/// validated; the same bytes whatever threads ran them.
fn encode_all(x: &[f32], rows: usize, cols: usize) -> Vec<Vec<u8>> {
    use ninfer::formats::float_source::FloatSource;
    use ninfer::formats::{fp8_row, grouped, nvfp4};
    use ninfer::layouts::plane_sizes;
    let mut out = Vec::new();
    let planes = |f: Format| plane_sizes(f, f.info().layout, rows, cols).unwrap();
    let check = |f: Format, p: &[Vec<u8>; 3]| {
        let v =
            ninfer::WeightView::new(f, f.info().layout, rows, cols, p.each_ref().map(|p| &p[..]))
                .unwrap();
        ninfer::validate::validate(&v).unwrap();
    };

    let f = Format::Q4_G64Fp16;
    let mut p = planes(f).map(|n| vec![0u8; n]);
    let [a, b, c] = &mut p;
    let opts = grouped::encode::Options::ABSMAX;
    grouped::encode::quantize(f, FloatSource::F32(x), rows, cols, &opts, [a, b, c]).unwrap();
    check(f, &p);
    out.extend(p);

    let f = Format::Fp8E4m3fnRowBf16;
    let mut p = planes(f).map(|n| vec![0u8; n]);
    let [a, b, _] = &mut p;
    fp8_row::fp8_row_maxabs(f, FloatSource::F32(x), rows, cols, [a, b]).unwrap();
    check(f, &p);
    out.extend(p);

    let f = Format::Nvfp4;
    let mut p = planes(f).map(|n| vec![0u8; n]);
    let [a, b, c] = &mut p;
    nvfp4::nvfp4_quantize(FloatSource::F32(x), rows, cols, 1, [a, b, c]).unwrap();
    check(f, &p);
    out.extend(p);
    out
}

#[test]
#[cfg_attr(not(target_arch = "x86_64"), ignore = "native x86-64 only")]
fn encoders_when_no_thread_can_start() {
    const NAME: &str = "encoders_when_no_thread_can_start";
    if !is_child(NAME) {
        return in_child(NAME);
    }
    // With room for no thread stack, the encoders and validators (which run on the
    // library's default pool) work on the calling thread; once the limit is lifted the
    // pool is made and they give the same bytes. (On rayon's global pool, whose creation
    // fails once for good, they panicked here and on every later call.)
    let (rows, cols) = (300usize, 256usize);
    let x: Vec<f32> = (0..rows * cols)
        .map(|i| ((i * 7919 % 1000) as f32 - 500.0) / 97.0)
        .collect();
    // 1 MiB of headroom: the encoders' buffers fit, a thread's 2 MiB stack does not.
    set_as_limit(vm_size() + (1 << 20));
    if !limit_binds(256 << 20) {
        return;
    }
    let alone = std::panic::catch_unwind(|| encode_all(&x, rows, cols));
    lift_as_limit();
    let alone = alone.expect("the encoders must run on the calling thread");
    for _ in 0..2 {
        assert!(encode_all(&x, rows, cols) == alone);
    }
    println!("child: done");
}
