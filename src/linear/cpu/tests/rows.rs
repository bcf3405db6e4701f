//! Output ranges on the decoded paths (no format takes them by default): the ranges of a
//! partition of N give the whole product's bits.

use super::*;

#[test]
fn decoded_paths_give_the_whole_products_bits_in_ranges() {
    let (n, k) = (19, 256);
    for (format, kernel) in [
        (Format::Bf16, Kernel::Decoded),
        (Format::GgufQ4_K, Kernel::GgufDecoded),
    ] {
        let wb = weight(format, n, k);
        let view = WeightView::single(format, n, k, &wb).unwrap();
        let mut w = PreparedWeight::new(view).unwrap();
        *w.cpu_kernel() = kernel;
        for m in [1, 3, 65] {
            let x: Vec<f32> = (0..m * k)
                .map(|i| ((i * 7919 % 1000) as f32 - 500.0) / 250.0)
                .collect();
            let xb: Vec<u8> = x.iter().flat_map(|v| v.to_ne_bytes()).collect();
            for isa in [Isa::Scalar, Isa::detect()] {
                for threads in [1, 2] {
                    w.set_isa(isa).unwrap();
                    w.set_threads(threads).unwrap();
                    let mut whole = vec![0u8; m * n * 4];
                    w.forward(&xb, Dtype::F32, m, k, None, &mut whole, Dtype::F32)
                        .unwrap();
                    let mut y = vec![0xEEu8; m * n * 4];
                    for (n0, n1) in [(0, 5), (5, 5), (5, 6), (6, 17), (17, n)] {
                        w.forward_rows(
                            &xb,
                            Dtype::F32,
                            m,
                            k,
                            k,
                            None,
                            n0..n1,
                            &mut y,
                            n,
                            Dtype::F32,
                        )
                        .unwrap();
                    }
                    assert!(y == whole, "{format} {kernel:?} {isa:?} t{threads} M={m}");
                }
            }
        }
    }
}

/// `forward_cuda`'s argument checks come before the backend's: a workspace address that is
/// not a multiple of 16 is an invalid argument, an aligned one on a CPU weight unsupported,
/// and neither touches memory.
#[test]
fn forward_cuda_checks_the_workspace_alignment_first() {
    let (n, k) = (4, 64);
    let wb = weight(Format::Bf16, n, k);
    let w = PreparedWeight::new(WeightView::single(Format::Bf16, n, k, &wb).unwrap()).unwrap();
    let run = |ws: u64| {
        // SAFETY: every call below is refused before any address is used.
        unsafe {
            w.forward_cuda(
                16,
                Dtype::F32,
                1,
                k,
                0,
                32,
                Dtype::F32,
                std::ptr::null_mut(),
                ws,
                1 << 20,
            )
        }
    };
    assert!(matches!(run(8), Err(crate::Error::InvalidArgument(_))));
    assert!(matches!(run(64), Err(crate::Error::Unsupported(_))));
}
