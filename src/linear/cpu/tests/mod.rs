//! Unit tests of the CPU engine, one file per kernel family. Integration tests (every
//! format, both activation profiles, the C API) live in `tests/linear*.rs`.

pub(super) use crate::decode;
pub(super) use crate::dtype::Dtype;
pub(super) use crate::layouts;
pub(super) use crate::linear::cpu::Isa;
pub(super) use crate::linear::cpu::engine::Kernel;
pub(super) use crate::linear::{PreparedWeight, q8_1, tolerance};
pub(super) use crate::registry::{Format, Layout};
pub(super) use crate::view::WeightView;

mod decoded;
mod fp8;
mod grouped;
mod nvfp4;
mod rows;

pub(super) fn weight(format: Format, n: usize, k: usize) -> Vec<u8> {
    let info = format.info();
    let bytes = n * k / info.block_values as usize * info.block_bytes as usize;
    let mut w: Vec<u8> = (0..bytes).map(|i| (i * 131 % 251) as u8).collect();
    match format {
        Format::Bf16 => {
            for c in w.chunks_exact_mut(2) {
                c[1] = 0x3C | (c[1] & 0x81); // finite, moderate exponents
            }
        }
        _ => {
            for b in w.chunks_exact_mut(info.block_bytes as usize) {
                let at = if format == Format::GgufQ6_K { 208 } else { 0 };
                b[at..at + 2].copy_from_slice(&half::f16::from_f32(0.01).to_bits().to_le_bytes());
                if format == Format::GgufQ4_K {
                    b[2..4].copy_from_slice(&half::f16::from_f32(0.003).to_bits().to_le_bytes());
                }
            }
        }
    }
    w
}

/// Outputs (bits) of `w` for x on both instruction sets, M = `m` and each row alone.
pub(super) fn grouped_runs(w: &mut PreparedWeight<'_>, x: &[f32], m: usize) -> Vec<Vec<u32>> {
    let (n, k) = (w.rows(), w.cols());
    let mut results = Vec::new();
    for isa in Isa::tested() {
        w.set_isa(isa).unwrap();
        let mut y = vec![0f32; m * n];
        w.forward_f32(x, m, None, &mut y).unwrap();
        results.push(y.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
        // Each activation row alone (the M = 1 kernel, no materialization).
        let mut single = Vec::new();
        for r in 0..m {
            let mut y1 = vec![0f32; n];
            w.forward_f32(&x[r * k..(r + 1) * k], 1, None, &mut y1)
                .unwrap();
            single.extend(y1.iter().map(|v| v.to_bits()));
        }
        results.push(single);
    }
    results
}
