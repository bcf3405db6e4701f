//! CUDA against the CPU, bit for bit, on a real device (skipped, with the reason printed,
//! where there is none: CI has no GPU); the no-device statuses where there is none; the
//! kernels' build report (no local-memory spills); and the device benchmark
//! (`cuda_bench`, ignored by default: `scripts/device-check.sh` runs it).

use super::testdata::{Rng, payload, same, valid_payload};
use crate::cuda::driver::cuda_error;
use crate::dtype::Dtype;
use crate::error::Error;
use crate::linear::plan::Plan;
use crate::linear::{Activation, Device, PreparedWeight, supported_activation};
use crate::registry::{Format, LAYOUTS, Layout, compatible};
use crate::view::WeightView;
use cudarc::driver::result;

/// Whether a device is there; prints why not.
fn have_device() -> bool {
    match crate::cuda::device_count() {
        Ok(n) if n > 0 => true,
        Ok(_) => {
            println!("skipped: the driver reports no CUDA device");
            false
        }
        Err(e) => {
            println!("skipped: {e}");
            false
        }
    }
}

/// Every (format, layout, activation) the CUDA kernels cover.
fn covered() -> Vec<(Format, Layout, Activation)> {
    let mut v = Vec::new();
    for format in Format::all() {
        for layout in LAYOUTS.iter().map(|l| l.0) {
            for a in [Activation::Exact, Activation::Q8_1] {
                if compatible(format, layout)
                    && supported_activation(format, layout, a, Device::Cuda)
                {
                    v.push((format, layout, a));
                }
            }
        }
    }
    v
}

#[test]
fn the_kernels_build_without_spills_or_warnings() {
    let log = crate::cuda::driver::build_log();
    let entries = log.matches("Compiling entry function").count();
    assert!(entries > 0, "no ptxas report in the build log");
    for line in log.lines() {
        assert!(!line.contains("warning"), "NVRTC/ptxas warning: {line}");
        if line.contains("spill stores") {
            assert!(
                line.contains(" 0 bytes spill stores, 0 bytes spill loads"),
                "a kernel spills: {line}"
            );
        }
    }
    println!("{entries} kernel builds, no spill, no warning");
}

/// Every covered (format, profile) and every decodable format has its entry point in the
/// kernel source (`NF_EXACT_KERNELS(n)` declares nf_exact_n and nf_decode_n,
/// `NF_Q8_KERNEL(n)` nf_q8_n, `NF_DECODE_KERNEL(n)` nf_decode_n).
#[test]
fn every_covered_format_has_its_entry_points() {
    let src = include_str!("kernels/nf_kernels.cu");
    let declared = |mac: &str| -> Vec<u32> {
        src.lines()
            .filter(|l| l.starts_with(mac))
            .filter_map(|l| l[mac.len()..].split(')').next()?.trim().parse().ok())
            .collect()
    };
    let (exact, q8, dec) = (
        declared("NF_EXACT_KERNELS("),
        declared("NF_Q8_KERNEL("),
        declared("NF_DECODE_KERNEL("),
    );
    for (format, layout, a) in covered() {
        let plan = Plan::with(format, layout, a).unwrap();
        let list = if plan.quantizes_x() { &q8 } else { &exact };
        assert!(
            list.contains(&(format as u32)),
            "{format} {a:?}: no entry point"
        );
    }
    for f in Format::all().filter(|&f| super::weight::decodes(f)) {
        let n = f as u32;
        assert!(
            exact.contains(&n) || dec.contains(&n),
            "{f}: no nf_decode_{n}"
        );
    }
}

#[test]
fn support_answers_match_the_kernel_tables() {
    let v = covered();
    // Every format the CPU computes (all but int32) has a CUDA kernel, in every profile.
    let formats: std::collections::BTreeSet<u32> = v.iter().map(|c| c.0 as u32).collect();
    assert_eq!(formats.len(), 30 - 1, "{formats:?}");
    for f in Format::all().filter(|&f| f != Format::Int32) {
        for layout in LAYOUTS.iter().map(|l| l.0).filter(|&l| compatible(f, l)) {
            for a in [Activation::Exact, Activation::Q8_1] {
                assert_eq!(
                    supported_activation(f, layout, a, Device::Cpu),
                    supported_activation(f, layout, a, Device::Cuda),
                    "{f} {layout} {a:?}"
                );
            }
        }
    }
    for &(format, layout, a) in &v {
        let plan = Plan::with(format, layout, a).unwrap();
        assert!(super::weight::covers(&plan));
    }
}

#[test]
fn without_a_device_every_entry_point_says_no_device() {
    if crate::cuda::device_count().is_ok_and(|n| n > 0) {
        println!("skipped: a device is present");
        return;
    }
    let wb = vec![0u8; 2 * 64];
    let view = WeightView::single(Format::Bf16, 1, 64, &wb).unwrap();
    for r in [
        PreparedWeight::on(view, Device::Cuda).map(|_| ()),
        PreparedWeight::on_cuda(view, 3).map(|_| ()),
        crate::cuda::device_properties(0).map(|_| ()),
    ] {
        let e = r.unwrap_err();
        assert!(matches!(e, Error::NoDevice(_)), "{e}");
        assert!(e.to_string().len() > 20, "{e}");
    }
    // SAFETY: nothing is dereferenced (the device does not exist).
    let b = unsafe {
        PreparedWeight::borrow_cuda(
            Format::Bf16,
            Layout::ContiguousLeV1,
            1,
            64,
            [(4096, 128), (0, 0), (0, 0)],
            0,
        )
    };
    assert!(matches!(b, Err(Error::NoDevice(_))));
    // Structural errors come first, device or not.
    let b = unsafe {
        PreparedWeight::borrow_cuda(
            Format::Bf16,
            Layout::ContiguousLeV1,
            1,
            64,
            [(4096, 127), (0, 0), (0, 0)],
            0,
        )
    };
    assert!(matches!(b, Err(Error::SizeMismatch { .. })), "{b:?}");
    let b = unsafe {
        PreparedWeight::borrow_cuda(
            Format::Bf16,
            Layout::ContiguousLeV1,
            1,
            64,
            [(0, 128), (0, 0), (0, 0)],
            0,
        )
    };
    assert!(matches!(b, Err(Error::NullWithLength(_))), "{b:?}");
}

/// CUDA = CPU bit for bit: every covered format and profile, odd N (rows across blocks),
/// K not a multiple of 128 where the format allows it, M = 1, 2, 7, 8, 9, 17 (two grid
/// rows), f32 and bf16 activations, with and without bias, f32 and bf16 outputs, through
/// the host-buffer path and the device path with and without a workspace; device row
/// decode = decode_row.
#[test]
fn cuda_matches_the_cpu_bitwise() {
    if !have_device() {
        return;
    }
    let mut rng = Rng(5);
    let mut outputs = 0usize;
    // NINFER_CUDA_QUICK (the memcheck run): small K only.
    let quick = std::env::var_os("NINFER_CUDA_QUICK").is_some();
    // Every combination runs, so that one device run reports all of them; the failures
    // are listed and fail the test at the end.
    let mut failed = Vec::new();
    for (format, layout, activation) in covered() {
        let before = outputs;
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let ks: &[usize] = match activation {
                Activation::Q8_1 | Activation::Q8K => &[96, 256, 4096 + 256],
                Activation::Exact => &[16, 40, 200, 4096 + 48],
            };
            for &k in ks.iter().take(if quick { 2 } else { ks.len() }) {
                let n = 37;
                if crate::layouts::plane_sizes(format, layout, n, k).is_err()
                    || (format.info().category == crate::Category::GgufBlock
                        && k % format.info().block_values as usize != 0)
                {
                    continue;
                }
                let p = payload(format, layout, n, k, &mut rng);
                let view = WeightView::new(format, layout, n, k, [&p[0], &p[1], &p[2]]).unwrap();
                let mut cpu = PreparedWeight::new(view).unwrap();
                let mut gpu = PreparedWeight::on_cuda(view, 0).unwrap();
                cpu.set_activation(activation).unwrap();
                gpu.set_activation(activation).unwrap();
                let mmax = 17;
                let x: Vec<f32> = (0..mmax * k)
                    .map(|i| rng.unit() * if i % 29 == 0 { 50.0 } else { 1.0 })
                    .collect();
                let bias: Vec<f32> = (0..n).map(|_| rng.unit()).collect();
                for m in [1, 2, 7, 8, 9, 17] {
                    for (xd, yd, b) in [
                        (Dtype::F32, Dtype::F32, false),
                        (Dtype::Bf16, Dtype::F32, true),
                        (Dtype::F32, Dtype::Bf16, true),
                    ] {
                        let xb: Vec<u8> = match xd {
                            Dtype::F32 => x[..m * k].iter().flat_map(|v| v.to_ne_bytes()).collect(),
                            _ => x[..m * k]
                                .iter()
                                .flat_map(|v| half::bf16::from_f32(*v).to_bits().to_ne_bytes())
                                .collect(),
                        };
                        let bias = b.then_some(&bias[..]);
                        let mut yc = vec![0u8; m * n * yd.size()];
                        let mut yg = vec![0xA5u8; m * n * yd.size()];
                        cpu.forward(&xb, xd, m, k, bias, &mut yc, yd).unwrap();
                        gpu.forward(&xb, xd, m, k, bias, &mut yg, yd).unwrap();
                        let what =
                            format!("{format} {layout} {activation:?} K={k} M={m} {xd:?}->{yd:?}");
                        match yd {
                            Dtype::F32 => {
                                for (i, (a, g)) in
                                    yc.chunks_exact(4).zip(yg.chunks_exact(4)).enumerate()
                                {
                                    let (a, g) = (
                                        f32::from_ne_bytes(a.try_into().unwrap()),
                                        f32::from_ne_bytes(g.try_into().unwrap()),
                                    );
                                    assert!(
                                        same(a, g),
                                        "{what}: output {i}: CPU {a:e}, CUDA {g:e}"
                                    );
                                }
                            }
                            _ => {
                                for (i, (a, g)) in
                                    yc.chunks_exact(2).zip(yg.chunks_exact(2)).enumerate()
                                {
                                    let (a, g) = (
                                        u16::from_ne_bytes(a.try_into().unwrap()),
                                        u16::from_ne_bytes(g.try_into().unwrap()),
                                    );
                                    assert!(
                                        same_bf16(a, g),
                                        "{what}: output {i}: CPU {a:#06x}, CUDA {g:#06x}"
                                    );
                                }
                            }
                        }
                        outputs += m * n;
                    }
                }
                device_path_matches(&gpu, &cpu, &x, k, &mut outputs);
                if super::weight::decodes(format) {
                    // The CPU decoder checks every group: a payload it accepts (random codes in
                    // a grouped format's padding columns are not, where K is not a multiple
                    // of 128).
                    let p = valid_payload(format, layout, n, k, &mut rng);
                    let view =
                        WeightView::new(format, layout, n, k, [&p[0], &p[1], &p[2]]).unwrap();
                    let mut row = vec![0f32; k];
                    if (0..n).all(|r| crate::decode::decode_row(&view, r as u64, &mut row).is_ok())
                    {
                        decode_matches(&PreparedWeight::on_cuda(view, 0).unwrap(), &view);
                    } else {
                        assert!(k % 128 != 0, "{format} K={k}: payload not decodable");
                    }
                }
            }
        }));
        let what = format!("{format} {layout} {activation:?}");
        match r {
            Ok(()) => println!("ok   {what}: {} outputs", outputs - before),
            Err(e) => {
                let msg = e
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                println!("FAIL {what}: {msg}");
                failed.push(what);
            }
        }
    }
    println!("{outputs} CUDA outputs bit-identical to the CPU's");
    assert!(
        failed.is_empty(),
        "{} combinations differ: {failed:?}",
        failed.len()
    );
}

/// Two bf16 words are the same output: equal, or both NaN (a NaN's sign and payload are not
/// specified: the GPU's arithmetic gives its canonical NaN).
fn same_bf16(a: u16, b: u16) -> bool {
    let nan = |w: u16| w & 0x7FFF > 0x7F80;
    a == b || (nan(a) && nan(b))
}

/// The device path (caller's buffers, own workspace and library-allocated workspace) gives
/// the host path's bits.
fn device_path_matches(
    gpu: &PreparedWeight<'_>,
    cpu: &PreparedWeight<'_>,
    x: &[f32],
    k: usize,
    outputs: &mut usize,
) {
    let (m, n) = (8, gpu.rows());
    let mut want = vec![0f32; m * n];
    cpu.forward_f32(&x[..m * k], m, None, &mut want).unwrap();
    let xb: Vec<u8> = x[..m * k].iter().flat_map(|v| v.to_ne_bytes()).collect();
    // SAFETY: fresh device buffers of the sizes the forward needs.
    unsafe {
        let dx = result::malloc_sync(xb.len()).unwrap();
        result::memcpy_htod_sync(dx, &xb).unwrap();
        let dy = result::malloc_sync(m * n * 4).unwrap();
        let ws_len = gpu.workspace_size(m).unwrap();
        let ws = result::malloc_sync(ws_len.max(1)).unwrap();
        for (w, wl) in [(ws, ws_len), (0, 0)] {
            result::memset_d8_sync(dy, 0xA5, m * n * 4).unwrap();
            gpu.forward_cuda(
                dx,
                Dtype::F32,
                m,
                k,
                0,
                dy,
                Dtype::F32,
                std::ptr::null_mut(),
                w,
                wl,
            )
            .unwrap();
            result::stream::synchronize(std::ptr::null_mut())
                .map_err(|e| cuda_error("sync", e))
                .unwrap();
            let mut yb = vec![0u8; m * n * 4];
            result::memcpy_dtoh_sync(&mut yb, dy).unwrap();
            for (i, (c, g)) in want.iter().zip(yb.chunks_exact(4)).enumerate() {
                let g = f32::from_ne_bytes(g.try_into().unwrap());
                assert!(
                    same(*c, g),
                    "device path, workspace {wl}: output {i}: CPU {c:e}, CUDA {g:e}"
                );
            }
            *outputs += m * n;
        }
        // A short workspace is refused before anything is enqueued.
        if ws_len > 0 {
            let e = gpu.forward_cuda(
                dx,
                Dtype::F32,
                m,
                k,
                0,
                dy,
                Dtype::F32,
                std::ptr::null_mut(),
                ws,
                ws_len - 1,
            );
            assert!(matches!(e, Err(Error::BufferTooSmall { .. })));
        }
        for d in [dx, dy, ws] {
            result::free_sync(d).unwrap();
        }
    }
}

/// Device decode of rows 3.. = decode_row's words (f32) and their bf16 rounding.
fn decode_matches(gpu: &PreparedWeight<'_>, view: &WeightView<'_>) {
    let (first, count, k) = (3, 5, view.cols());
    for dt in [Dtype::F32, Dtype::Bf16] {
        let bytes = count * k * dt.size();
        let mut want = vec![0u8; bytes];
        for r in 0..count {
            crate::decode::decode_row_as(
                view,
                (first + r) as u64,
                dt,
                &mut want[r * k * dt.size()..],
            )
            .unwrap();
        }
        // SAFETY: a fresh buffer of `bytes` bytes.
        unsafe {
            let d = result::malloc_sync(bytes).unwrap();
            gpu.decode_rows_cuda(first, count, d, dt, std::ptr::null_mut())
                .unwrap();
            result::stream::synchronize(std::ptr::null_mut()).unwrap();
            let mut got = vec![0u8; bytes];
            result::memcpy_dtoh_sync(&mut got, d).unwrap();
            result::free_sync(d).unwrap();
            if dt == Dtype::F32 {
                for (a, b) in want.chunks_exact(4).zip(got.chunks_exact(4)) {
                    let (a, b) = (
                        f32::from_ne_bytes(a.try_into().unwrap()),
                        f32::from_ne_bytes(b.try_into().unwrap()),
                    );
                    assert!(same(a, b), "{} decode: {a:e} vs {b:e}", view.format());
                }
            } else {
                for (a, b) in want.chunks_exact(2).zip(got.chunks_exact(2)) {
                    let (a, b) = (
                        u16::from_ne_bytes(a.try_into().unwrap()),
                        u16::from_ne_bytes(b.try_into().unwrap()),
                    );
                    assert!(
                        same_bf16(a, b),
                        "{} bf16 decode: {a:#06x} vs {b:#06x}",
                        view.format()
                    );
                }
            }
        }
    }
}

/// Per format: µs per GEMV (M = 1 and 8) on 28672 × 8192 and 8192 × 8192 (valid encodings
/// and typical nvfp4 divisors, so that every row takes its fast order), weight GB/s and
/// the fraction of the device's memory bandwidth measured in the same run (a
/// device-to-device copy of 2 GiB: bytes read and written per second). Weights rotate
/// through enough copies to exceed L2. Printed as a table; `scripts/device-check.sh` runs
/// it.
#[test]
#[ignore]
fn cuda_bench() {
    if !have_device() {
        return;
    }
    let props = crate::cuda::device_properties(0).unwrap();
    // The raw driver calls below need the device's context current on this thread.
    crate::cuda::driver::Device::get(0).unwrap().bind().unwrap();
    println!(
        "device: {} (sm_{}{}, {} SMs, L2 {} MB)",
        props.name,
        props.compute_capability.0,
        props.compute_capability.1,
        props.multiprocessors,
        props.l2_cache_bytes >> 20
    );
    let bw = copy_bandwidth();
    println!(
        "memory bandwidth (D2D copy, bytes read + written / s): {:.0} GB/s",
        bw / 1e9
    );
    println!(
        "{:<24} {:>12} {:>3} {:>10} {:>9} {:>6}",
        "format+activation", "N x K", "M", "us", "GB/s", "%BW"
    );
    let mut rng = Rng(9);
    // NINFER_BENCH_FORMATS=name,name: only these formats (a quick look at a few kernels).
    let only = std::env::var("NINFER_BENCH_FORMATS").ok();
    for (format, layout, activation) in covered() {
        if let Some(o) = &only
            && !o.split(',').any(|f| f == format.name())
        {
            continue;
        }
        for (n, k) in [(28672usize, 8192usize), (8192, 8192)] {
            let mut p = valid_payload(format, layout, n, k, &mut rng);
            if format == Format::Nvfp4 {
                // Typical divisors: every row in the fast orders.
                for w in p[2].chunks_exact_mut(4) {
                    w.copy_from_slice(&(2688.0f32 / (rng.unit().abs() + 0.1)).to_le_bytes());
                }
            }
            let view = WeightView::new(format, layout, n, k, [&p[0], &p[1], &p[2]]).unwrap();
            let bytes: usize = p.iter().map(|v| v.len()).sum();
            let copies = (3 * props.l2_cache_bytes as usize / bytes.max(1)).clamp(1, 8);
            let ws: Vec<PreparedWeight<'_>> = (0..copies)
                .map(|_| {
                    let mut w = PreparedWeight::on_cuda(view, 0).unwrap();
                    w.set_activation(activation).unwrap();
                    w
                })
                .collect();
            for m in [1usize, 8] {
                let us = time_forward(&ws, m, k, n);
                let gbs = bytes as f64 / (us * 1e-6) / 1e9;
                println!(
                    "{:<24} {:>12} {:>3} {:>10.2} {:>9.0} {:>5.0}%",
                    format!("{}+{}", format, activation.name()),
                    format!("{n}x{k}"),
                    m,
                    us,
                    gbs,
                    100.0 * gbs * 1e9 / bw
                );
            }
        }
    }
    graph_forward(&mut rng);
}

/// µs per forward of a 4096 × 4096 q4_g64_fp16 weight at M = 1 replayed from a CUDA graph
/// (one forward captured on a stream with its workspace; 200 launches timed together).
fn graph_forward(rng: &mut Rng) {
    let (format, layout, n, k) = (Format::Q4_G64Fp16, Layout::RowSplitK128_V1, 4096, 4096);
    let p = payload(format, layout, n, k, rng);
    let view = WeightView::new(format, layout, n, k, [&p[0], &p[1], &p[2]]).unwrap();
    for activation in [Activation::Exact, Activation::Q8_1] {
        let mut w = PreparedWeight::on_cuda(view, 0).unwrap();
        w.set_activation(activation).unwrap();
        // SAFETY: buffers sized for the forward; the stream, graph and events are created
        // and destroyed here.
        unsafe {
            use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
            let stream = result::stream::create(result::stream::StreamKind::NonBlocking).unwrap();
            let dx = result::malloc_sync(k * 4).unwrap();
            result::memset_d8_sync(dx, 0x3C, k * 4).unwrap();
            let dy = result::malloc_sync(n * 4).unwrap();
            let wsz = w.workspace_size(1).unwrap().max(1);
            let wbuf = result::malloc_sync(wsz).unwrap();
            result::stream::begin_capture(
                stream,
                CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
            )
            .unwrap();
            w.forward_cuda(
                dx,
                Dtype::F32,
                1,
                k,
                0,
                dy,
                Dtype::F32,
                stream.cast(),
                wbuf,
                wsz,
            )
            .unwrap();
            let graph = result::stream::end_capture(stream).unwrap();
            let exec = result::graph::instantiate(graph, CUgraphInstantiate_flags(0)).unwrap();
            let launches = 200;
            let mut best = f64::MAX;
            for _ in 0..5 {
                use cudarc::driver::sys::CUevent_flags;
                let (s, e) = (
                    result::event::create(CUevent_flags::CU_EVENT_DEFAULT).unwrap(),
                    result::event::create(CUevent_flags::CU_EVENT_DEFAULT).unwrap(),
                );
                result::event::record(s, stream).unwrap();
                for _ in 0..launches {
                    result::graph::launch(exec, stream).unwrap();
                }
                result::event::record(e, stream).unwrap();
                result::event::synchronize(e).unwrap();
                best =
                    best.min(result::event::elapsed(s, e).unwrap() as f64 * 1e3 / launches as f64);
                result::event::destroy(s).unwrap();
                result::event::destroy(e).unwrap();
            }
            println!(
                "{format}+{} {n}x{k} M=1 from a CUDA graph: {best:.2} us per forward",
                activation.name()
            );
            result::graph::exec_destroy(exec).unwrap();
            result::graph::destroy(graph).unwrap();
            for d in [dx, dy, wbuf] {
                result::free_sync(d).unwrap();
            }
            result::stream::destroy(stream).unwrap();
        }
    }
}

/// Bytes moved (read and written) per second by a device-to-device copy of 2 GiB (best
/// of 5): the reference a GEMV's weight bytes per second are a fraction of.
fn copy_bandwidth() -> f64 {
    let len = 1usize << 31;
    // SAFETY: two fresh buffers; timed with events on the default stream.
    unsafe {
        let (a, b) = (
            result::malloc_sync(len).unwrap(),
            result::malloc_sync(len).unwrap(),
        );
        let best = (0..5)
            .map(|_| {
                time(|| {
                    result::memcpy_dtod_async(b, a, len, std::ptr::null_mut()).unwrap();
                })
            })
            .fold(f64::MAX, f64::min);
        result::free_sync(a).unwrap();
        result::free_sync(b).unwrap();
        2.0 * len as f64 / (best * 1e-6)
    }
}

/// µs per forward of m rows, rotating through the weight copies (median of 50 rounds).
fn time_forward(ws: &[PreparedWeight<'_>], m: usize, k: usize, n: usize) -> f64 {
    // SAFETY: buffers sized for the forward; each weight gets its own workspace.
    unsafe {
        let dx = result::malloc_sync(m * k * 4).unwrap();
        result::memset_d8_sync(dx, 0x3C, m * k * 4).unwrap();
        let dy = result::malloc_sync(m * n * 4).unwrap();
        let wsz = ws[0].workspace_size(m).unwrap().max(1);
        let wbuf = result::malloc_sync(wsz).unwrap();
        let run = |w: &PreparedWeight<'_>| {
            w.forward_cuda(
                dx,
                Dtype::F32,
                m,
                k,
                0,
                dy,
                Dtype::F32,
                std::ptr::null_mut(),
                wbuf,
                wsz,
            )
            .unwrap()
        };
        for w in ws {
            run(w);
        }
        let mut t: Vec<f64> = (0..50)
            .map(|_| time(|| ws.iter().for_each(run)) / ws.len() as f64)
            .collect();
        t.sort_by(f64::total_cmp);
        for d in [dx, dy, wbuf] {
            result::free_sync(d).unwrap();
        }
        t[t.len() / 2]
    }
}

/// µs of the work `f` enqueues on the default stream (CUDA events).
fn time(f: impl FnOnce()) -> f64 {
    use cudarc::driver::sys::CUevent_flags;
    let (s, e) = (
        result::event::create(CUevent_flags::CU_EVENT_DEFAULT).unwrap(),
        result::event::create(CUevent_flags::CU_EVENT_DEFAULT).unwrap(),
    );
    // SAFETY: events created above, recorded on the default stream.
    unsafe {
        result::event::record(s, std::ptr::null_mut()).unwrap();
        f();
        result::event::record(e, std::ptr::null_mut()).unwrap();
        result::event::synchronize(e).unwrap();
        let ms = result::event::elapsed(s, e).unwrap();
        result::event::destroy(s).unwrap();
        result::event::destroy(e).unwrap();
        ms as f64 * 1e3
    }
}

/// `forward_rows` on a CUDA weight: the whole product with packed rows is `forward` (the
/// same bits); a range or strides are `Unsupported`, with y untouched.
#[test]
fn forward_rows_on_a_cuda_weight_takes_only_the_whole_product() {
    if !have_device() {
        return;
    }
    let mut rng = Rng(9);
    let (format, n, k, m) = (Format::Bf16, 11usize, 64usize, 3usize);
    let layout = format.info().layout;
    let p = valid_payload(format, layout, n, k, &mut rng);
    let view = WeightView::new(format, layout, n, k, [&p[0], &p[1], &p[2]]).unwrap();
    let gpu = PreparedWeight::on_cuda(view, 0).unwrap();
    let x: Vec<u8> = (0..m * k).flat_map(|_| rng.unit().to_ne_bytes()).collect();
    let mut whole = vec![0u8; m * n * 4];
    gpu.forward(&x, Dtype::F32, m, k, None, &mut whole, Dtype::F32)
        .unwrap();
    let mut y = vec![0xA5u8; m * n * 4];
    let f32y = Dtype::F32;
    gpu.forward_rows(&x, Dtype::F32, m, k, k, None, 0..n, &mut y, n, f32y)
        .unwrap();
    assert_eq!(y, whole);
    let mut y = vec![0xA5u8; (m - 1) * (n + 1) * 4 + n * 4];
    for (rows, ldy) in [(0..n - 1, n), (1..n, n), (0..n, n + 1)] {
        let e = gpu
            .forward_rows(&x, Dtype::F32, m, k, k, None, rows, &mut y, ldy, f32y)
            .unwrap_err();
        assert!(matches!(e, Error::Unsupported(_)), "{e}");
        assert!(y.iter().all(|&b| b == 0xA5), "y written on error");
    }
}
