//! Shared pieces of the fuzz targets: a byte reader that turns libFuzzer's input into a
//! format, a shape and planes, and the plain comparisons the targets assert with.
//!
//! Every target asserts properties (lengths, "nothing written on error", agreement with an
//! independent oracle), not only the absence of a crash.

use ninfer::layouts::{self, MAX_PLANES};
use ninfer::{Format, Layout, WeightView};

/// Reads libFuzzer's bytes front to back; past the end every read is 0 (an exhausted input
/// still yields a complete, mostly zero case).
pub struct Input<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Input<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Input { data, at: 0 }
    }

    pub fn u8(&mut self) -> u8 {
        let b = self.data.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b
    }

    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }

    /// `n` bytes: the next input bytes, zero-filled past the end.
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        let start = self.at.min(self.data.len());
        let end = self.at.saturating_add(n).min(self.data.len());
        let mut v = self.data[start..end].to_vec();
        v.resize(n, 0);
        self.at = self.at.saturating_add(n);
        v
    }

    /// Whether input bytes are left.
    pub fn more(&self) -> bool {
        self.at < self.data.len()
    }
}

/// Every registered format, in registry order.
pub fn formats() -> Vec<Format> {
    Format::all().collect()
}

/// Every registered layout.
pub const LAYOUTS: [Layout; 6] = [
    Layout::ContiguousLeV1,
    Layout::RowSplitK128_V1,
    Layout::BlockScaleK16_M128x4_V1,
    Layout::RowScaleV1,
    Layout::RowInterleavedV1,
    Layout::GgufBlocksV1,
];

/// The values one "unit" of K holds for `format` (a GGUF block, an nvfp4 K-block, else 1).
pub fn k_unit(format: Format) -> usize {
    match format {
        Format::Nvfp4 => 16,
        f => (f.info().block_values as usize).max(1),
    }
}

/// A tensor generated from the input: a registered format, mostly in its own layout (one
/// case in 16 any layout, to reach the incompatibility errors), 1..=4 rows, K mostly a
/// multiple of the format's unit (one case in 8 any K up to 600), and planes of exactly
/// the layout's sizes filled with the next input bytes (one case in 16 with a plane one
/// byte short or long, to reach the size checks).
pub struct Tensor {
    pub format: Format,
    pub layout: Layout,
    pub rows: usize,
    pub cols: usize,
    pub planes: [Vec<u8>; MAX_PLANES],
}

impl Tensor {
    /// `max_units` bounds K (in units of [`k_unit`]) and so the work per case.
    pub fn from_input(inp: &mut Input<'_>, max_units: usize) -> Tensor {
        let all = formats();
        let format = all[inp.u8() as usize % all.len()];
        let sel = inp.u8();
        let layout = if sel % 16 == 15 {
            LAYOUTS[(sel / 16) as usize % LAYOUTS.len()]
        } else {
            format.info().layout
        };
        let rows = 1 + (inp.u8() % 4) as usize;
        let kb = inp.u16();
        let cols = if kb % 8 == 7 {
            (kb >> 3) as usize % 601
        } else {
            k_unit(format) * (1 + (kb >> 3) as usize % max_units)
        };
        let shape_sel = inp.u8();
        let mut sizes = layouts::plane_sizes(format, layout, rows, cols).unwrap_or([0; 3]);
        if format == Format::Nvfp4 && layout == Layout::BlockScaleK16_M128x4_V1 {
            // One divisor per stacked source: 1 source, or one per row.
            sizes[2] = if shape_sel & 1 == 0 { 4 } else { 4 * rows };
        }
        if shape_sel % 16 == 15 {
            let p = (shape_sel as usize / 16) % MAX_PLANES;
            sizes[p] = if shape_sel & 0x10 == 0 {
                sizes[p] + 1
            } else {
                sizes[p].saturating_sub(1)
            };
        }
        let planes = sizes.map(|n| inp.bytes(n));
        Tensor {
            format,
            layout,
            rows,
            cols,
            planes,
        }
    }

    pub fn view(&self) -> ninfer::Result<WeightView<'_>> {
        WeightView::new(
            self.format,
            self.layout,
            self.rows,
            self.cols,
            [&self.planes[0], &self.planes[1], &self.planes[2]],
        )
    }
}

/// Bit equality of two f32 words, any NaN equal to any NaN (NaN payloads are not part of
/// any result's contract).
pub fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// [`same`] over two slices of equal length.
pub fn same_all(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(*x, *y))
}

/// A NaN with a payload no decoder produces: the canary of "nothing written".
pub const CANARY: f32 = f32::from_bits(0x7FA5_A5A5);

/// Whether every value of `v` is still the canary (bitwise).
pub fn untouched(v: &[f32]) -> bool {
    v.iter().all(|x| x.to_bits() == CANARY.to_bits())
}

/// binary32 → bf16 bits with round-to-nearest-even, NaN kept NaN (written plainly, not
/// through `half`).
pub fn bf16_rne(x: f32) -> u16 {
    let b = x.to_bits();
    if x.is_nan() {
        return ((b >> 16) as u16) | 0x0040;
    }
    let lsb = (b >> 16) & 1;
    (b.wrapping_add(0x7FFF + lsb) >> 16) as u16
}

/// binary32 → binary16 bits with round-to-nearest-even (overflow to ±Inf, NaN kept NaN),
/// written plainly with f64 arithmetic on the binade.
pub fn f16_rne(x: f32) -> u16 {
    let sign = if x.is_sign_negative() { 0x8000u16 } else { 0 };
    if x.is_nan() {
        return sign | 0x7E00;
    }
    let a = (x as f64).abs();
    if a.is_infinite() {
        return sign | 0x7C00;
    }
    // Subnormal step 2^-24 below 2^-14; otherwise 10 fraction bits in the binade.
    let e = if a < 2f64.powi(-14) {
        -14
    } else {
        a.log2().floor() as i32
    };
    let step = 2f64.powi(e - 10);
    let q = a / step;
    let mut r = q.round();
    if (q - q.floor() - 0.5).abs() == 0.0 && r % 2.0 != 0.0 {
        r -= 1.0;
    }
    let v = r * step;
    if v >= 65520.0 || v > 65504.0 {
        return sign | 0x7C00;
    }
    sign | half::f16::from_f64(v).to_bits() // exact: v is an f16 value
}
