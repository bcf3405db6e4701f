//! `forward_rows`: output ranges n0..n1 with strided x and y. Concatenating the ranges of a
//! partition of N gives the whole product word for word, for a format of every kernel
//! family and both activation profiles, every instruction set, threads 1 and 2, M across
//! the 64-row tiles; strided x and y leave every other element untouched; bad arguments
//! get a status and write nothing.

mod common;
use common::random::{Rng, random_planes};
use ninfer::linear::{self, Activation, Device, Isa, PreparedWeight};
use ninfer::{Dtype, Error, Format, Layout, Status, WeightView};

const N: usize = 37;
/// What untouched f32 elements of y hold (a NaN no product writes).
const CANARY: u32 = 0x7FC0_BEEF;

fn isas() -> Vec<Isa> {
    Isa::tiers().collect()
}

/// One format of every kernel family, with its activation profile.
fn cases() -> Vec<(Format, Activation)> {
    use Activation::{Exact, Q8_1};
    vec![
        (Format::Bf16, Exact),
        (Format::Fp32, Exact),
        (Format::Q4_G64Fp16, Exact),
        (Format::Q8_G32Fp16, Exact),
        (Format::Q5_G64Fp16, Exact),
        (Format::Fp8E4m3fnRowBf16, Exact),
        (Format::Nvfp4, Exact),
        (Format::GgufQ8_0, Q8_1),
        (Format::GgufQ4_0, Q8_1),
        (Format::GgufIq4Nl, Q8_1),
        (Format::GgufQ4_K, Q8_1),
        (Format::GgufQ6_K, Q8_1),
        (Format::GgufIq2Xxs, Q8_1),
        (Format::Q4_G64Fp16, Q8_1),
        (Format::Nvfp4, Q8_1),
    ]
}

fn k_of(format: Format) -> usize {
    let info = format.info();
    match info.layout {
        Layout::GgufBlocksV1 => info.block_values.max(32) as usize,
        Layout::BlockScaleK16_M128x4_V1 => 96,
        _ => 128,
    }
}

/// Random activations; some rows outside the range of the fp8 / nvfp4 scaled orders (a
/// huge and a subnormal value), so tiles mix both kinds of rows.
fn activations(m: usize, k: usize, rng: &mut Rng) -> Vec<f32> {
    let mut x: Vec<f32> = (0..m * k).map(|_| rng.unit()).collect();
    for r in 0..m {
        match r % 5 {
            1 => x[r * k] = 1.0e30,
            3 => x[r * k + 1] = 1.0e-40,
            _ => {}
        }
    }
    x
}

fn bytes_of(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|f| f.to_ne_bytes()).collect()
}

fn words(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4)
        .map(|w| u32::from_ne_bytes([w[0], w[1], w[2], w[3]]))
        .collect()
}

fn canaries(len: usize) -> Vec<u8> {
    (0..len).flat_map(|_| CANARY.to_ne_bytes()).collect()
}

/// Partitions of N: whole, single rows, uneven ranges with empty ones, ranges across the
/// engine's 8-row groups.
fn partitions(n: usize) -> Vec<Vec<(usize, usize)>> {
    vec![
        vec![(0, n)],
        (0..n).map(|i| (i, i + 1)).collect(),
        vec![(0, 0), (0, 3), (3, 3), (3, 13), (13, 29), (29, n), (n, n)],
        vec![(17, n), (9, 17), (0, 9)],
    ]
}

fn weight(format: Format, k: usize, rng: &mut Rng) -> Vec<Vec<u8>> {
    random_planes(format, N, k, rng)
}

#[test]
// Runs every case natively; too slow for the aarch64 job's qemu debug build.
#[cfg_attr(
    not(target_arch = "x86_64"),
    ignore = "run natively on x86-64, scalar path included"
)]
fn ranges_concatenate_to_the_whole_product_word_for_word() {
    let mut rng = Rng(4242);
    let mut checked = 0;
    for (format, activation) in cases() {
        let layout = format.info().layout;
        assert!(linear::supported_activation(
            format,
            layout,
            activation,
            Device::Cpu
        ));
        let k = k_of(format);
        let planes = weight(format, k, &mut rng);
        let view =
            WeightView::new(format, layout, N, k, [&planes[0], &planes[1], &planes[2]]).unwrap();
        let bias: Vec<f32> = (0..N).map(|_| rng.unit()).collect();
        for m in [1usize, 3, 65, 130] {
            let x = activations(m, k, &mut rng);
            let xb = bytes_of(&x);
            // Strided x: rows ldx apart, NaN between them (never read).
            let ldx = k + 3;
            let mut xs = vec![f32::NAN; (m - 1) * ldx + k];
            for r in 0..m {
                xs[r * ldx..r * ldx + k].copy_from_slice(&x[r * k..(r + 1) * k]);
            }
            let xsb = bytes_of(&xs);
            let mut reference: Option<Vec<u32>> = None;
            for isa in isas() {
                for threads in [1, 2] {
                    let mut w = PreparedWeight::new(view).unwrap();
                    w.set_activation(activation).unwrap();
                    w.set_isa(isa).unwrap();
                    w.set_threads(threads).unwrap();
                    let what = format!("{format} {activation:?} {isa:?} t{threads} M={m}");
                    let mut whole = vec![0u8; m * N * 4];
                    w.forward(&xb, Dtype::F32, m, k, Some(&bias), &mut whole, Dtype::F32)
                        .unwrap();
                    let whole = words(&whole);
                    // Every setting gives the same bits.
                    match &reference {
                        None => reference = Some(whole.clone()),
                        Some(r) => assert!(*r == whole, "{what}: differs from the first setting"),
                    }
                    for parts in partitions(N) {
                        let mut y = canaries(m * N);
                        for &(n0, n1) in &parts {
                            w.forward_rows(
                                &xb,
                                Dtype::F32,
                                m,
                                k,
                                k,
                                Some(&bias),
                                n0..n1,
                                &mut y,
                                N,
                                Dtype::F32,
                            )
                            .unwrap();
                        }
                        assert!(words(&y) == whole, "{what}: partition {parts:?}");
                    }
                    // Strided x and y inside a larger tensor: ldy = N + 5, columns 2.. of a
                    // row hold the product's N outputs (y points at column 2 of row 0),
                    // trailing room after the last row.
                    let ldy = N + 5;
                    let total = (m - 1) * ldy + N + 7;
                    let mut big = canaries(total);
                    for (n0, n1) in [(0, 0), (5, 20), (0, 5), (20, N)] {
                        let y = &mut big[2 * 4..];
                        let yl = ((m - 1) * ldy + n1) * 4;
                        w.forward_rows(
                            &xsb,
                            Dtype::F32,
                            m,
                            k,
                            ldx,
                            Some(&bias),
                            n0..n1,
                            &mut y[..yl],
                            ldy,
                            Dtype::F32,
                        )
                        .unwrap();
                    }
                    let big = words(&big);
                    for (i, &v) in big.iter().enumerate() {
                        let (r, c) = (
                            (i as isize - 2).div_euclid(ldy as isize),
                            (i as isize - 2).rem_euclid(ldy as isize),
                        );
                        let inside = i >= 2 && (r as usize) < m && (c as usize) < N;
                        if inside {
                            assert_eq!(
                                v,
                                whole[r as usize * N + c as usize],
                                "{what}: strided y[{r}, {c}]"
                            );
                        } else {
                            assert_eq!(v, CANARY, "{what}: element {i} outside the ranges written");
                        }
                    }
                    checked += 1;
                }
            }
            // bf16 x and bf16 y in ranges: the whole bf16 call's bits (the last setting).
            let mut w = PreparedWeight::new(view).unwrap();
            w.set_activation(activation).unwrap();
            let xh: Vec<u8> = x
                .iter()
                .flat_map(|v| half::bf16::from_f32(*v).to_bits().to_ne_bytes())
                .collect();
            let mut whole = vec![0u8; m * N * 2];
            w.forward(&xh, Dtype::Bf16, m, k, None, &mut whole, Dtype::Bf16)
                .unwrap();
            let mut y = vec![0xA5u8; m * N * 2];
            for (n0, n1) in [(0, 1), (1, 11), (11, 12), (12, N)] {
                w.forward_rows(
                    &xh,
                    Dtype::Bf16,
                    m,
                    k,
                    k,
                    None,
                    n0..n1,
                    &mut y,
                    N,
                    Dtype::Bf16,
                )
                .unwrap();
            }
            assert!(y == whole, "{format} {activation:?} M={m}: bf16 ranges");
        }
    }
    println!("{checked} (format, profile, isa, threads, M) cases");
    assert!(checked >= cases().len() * 4 * 2);
}

#[test]
fn bad_arguments_get_a_status_and_write_nothing() {
    let mut rng = Rng(7);
    let (format, k, m) = (Format::Q8_G32Fp16, 64usize, 3usize);
    let planes = weight(format, k, &mut rng);
    let view = WeightView::new(
        format,
        format.info().layout,
        N,
        k,
        [&planes[0], &planes[1], &planes[2]],
    )
    .unwrap();
    let w = PreparedWeight::new(view).unwrap();
    let (ldx, ldy) = (k + 1, N + 2);
    let xb = bytes_of(&activations((m - 1) * ldx / k + 2, k, &mut rng));
    let x_len = ((m - 1) * ldx + k) * 4;
    let bias = vec![0.5f32; N];
    let y_len = |n1: usize| ((m - 1) * ldy + n1) * 4;
    #[allow(clippy::type_complexity)]
    let run = |x: &[u8],
               k: usize,
               ldx: usize,
               bias: Option<&[f32]>,
               (n0, n1): (usize, usize),
               y_len: usize,
               ldy: usize,
               y_dtype: Dtype|
     -> Result<(), Error> {
        let mut y = canaries(y_len.div_ceil(4) + 1);
        let r = w.forward_rows(
            x,
            Dtype::F32,
            m,
            k,
            ldx,
            bias,
            n0..n1,
            &mut y[..y_len],
            ldy,
            y_dtype,
        );
        if r.is_err() {
            assert!(words(&y).iter().all(|&v| v == CANARY), "y written on error");
        }
        r
    };
    let st = |r: Result<(), Error>| r.map_err(|e| e.status()).err().unwrap_or(Status::Ok);
    let xs = &xb[..x_len];
    let f32y = Dtype::F32;
    // The exact extents are enough.
    assert_eq!(
        st(run(xs, k, ldx, Some(&bias), (3, 9), y_len(9), ldy, f32y)),
        Status::Ok
    );
    assert_eq!(
        st(run(
            xs,
            k,
            ldx,
            Some(&bias[..9]),
            (3, 9),
            y_len(9),
            ldy,
            f32y
        )),
        Status::Ok
    );
    assert_eq!(
        st(run(xs, k, ldx, None, (9, 9), y_len(9), 9, f32y)),
        Status::Ok
    );
    assert_eq!(
        st(run(xs, k, ldx, None, (N, N), y_len(N), N, f32y)),
        Status::Ok
    );
    // n0 > n1, n1 > N.
    let e = run(xs, k, ldx, None, (9, 3), y_len(9), ldy, f32y).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    assert!(e.to_string().contains("n0 = 9 > n1 = 3"), "{e}");
    let e = run(xs, k, ldx, None, (3, N + 1), y_len(N + 1), N + 2, f32y).unwrap_err();
    assert_eq!(e.status(), Status::RowOutOfRange, "{e}");
    assert!(
        e.to_string()
            .contains(&format!("n1 = {} is beyond N = {N}", N + 1)),
        "{e}"
    );
    // K, ldx < K, ldy < n1.
    let e = run(xs, k - 32, ldx, None, (3, 9), y_len(9), ldy, f32y).unwrap_err();
    assert_eq!(e.status(), Status::BadShape);
    let e = run(xs, k, k - 1, None, (3, 9), y_len(9), ldy, f32y).unwrap_err();
    assert_eq!(e.status(), Status::BadShape);
    assert!(e.to_string().contains("ldx"), "{e}");
    let e = run(xs, k, ldx, None, (3, 9), y_len(9), 8, f32y).unwrap_err();
    assert_eq!(e.status(), Status::BadShape);
    assert!(e.to_string().contains("ldy = 8"), "{e}");
    // Short x, y, bias by one element / byte.
    let e = run(&xs[..x_len - 1], k, ldx, None, (3, 9), y_len(9), ldy, f32y).unwrap_err();
    assert_eq!(
        e,
        Error::BufferTooSmall {
            what: "x (bytes)",
            needed: x_len,
            actual: x_len - 1
        }
    );
    let e = run(xs, k, ldx, None, (3, 9), y_len(9) - 1, ldy, f32y).unwrap_err();
    assert_eq!(
        e,
        Error::BufferTooSmall {
            what: "y (bytes)",
            needed: y_len(9),
            actual: y_len(9) - 1
        }
    );
    let e = run(xs, k, ldx, Some(&bias[..8]), (3, 9), y_len(9), ldy, f32y).unwrap_err();
    assert_eq!(
        e,
        Error::BufferTooSmall {
            what: "bias",
            needed: 9,
            actual: 8
        }
    );
    // f16 outputs; overflowing extents.
    let e = run(xs, k, ldx, None, (3, 9), y_len(9), ldy, Dtype::F16).unwrap_err();
    assert_eq!(e.status(), Status::Unsupported);
    let e = run(xs, k, usize::MAX / 2, None, (3, 9), y_len(9), ldy, f32y).unwrap_err();
    assert_eq!(e.status(), Status::Overflow, "{e}");
}
