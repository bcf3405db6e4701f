//! `import_encoded` for safetensors checkpoints: copies already quantized FP8 and NVFP4
//! weights into the planes of a registered format. Words are copied, never requantized;
//! anything that would change a represented value is refused with its reason.
//!
//! Supported naming schemes (for a layer `prefix`, e.g. `model.layers.0.mlp.up_proj`):
//!
//! - per-channel FP8 (compressed-tensors "channel" strategy, vLLM, fbgemm):
//!   `prefix.weight` F8_E4M3 `[N, K]` + `prefix.weight_scale` `[N, 1]` or `[N]` (a
//!   per-tensor `[1]` / `[]` scale is broadcast to every row) in F32, BF16 or F16, the
//!   dequantization multiplier. Targets `fp8_e4m3fn_row_bf16` / `_fp16`; a scale is
//!   imported only if it converts exactly into the target's scale type.
//! - NVFP4, compressed-tensors: `prefix.weight_packed` U8 `[N, K/2]`, `prefix.weight_scale`
//!   F8_E4M3 `[N, K/16]` (linear), `prefix.weight_global_scale` F32 `[1]` = d_w.
//! - NVFP4, ModelOpt: `prefix.weight` U8 `[N, K/2]`, `prefix.weight_scale` F8_E4M3
//!   `[N, K/16]`, `prefix.weight_scale_2` F32 `[]` / `[1]` = 1 / d_w, imported only when
//!   its reciprocal is exact in binary32 (a power of two).
//!
//! Both NVFP4 schemes store element 2j in the low nibble, as nvfp4 does; block scales are
//! swizzled into block_scale_k16_m128x4_v1 on import. Several layers (e.g. q/k/v) can be
//! stacked into one plane, each keeping its own divisor.

use ninfer::formats::{fp8_row, nvfp4};
use ninfer::layouts::{self, block_scale};
use ninfer::{Format, Layout, WeightView};
use safetensors::{Dtype, SafeTensors, tensor::TensorView};

/// Why a tensor was not imported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The checkpoint tensor (or layer prefix) concerned.
    pub tensor: String,
    /// What rule it breaks.
    pub reason: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.tensor, self.reason)
    }
}

impl std::error::Error for Refusal {}

fn refuse<T>(tensor: impl Into<String>, reason: impl Into<String>) -> Result<T, Refusal> {
    Err(Refusal {
        tensor: tensor.into(),
        reason: reason.into(),
    })
}

/// The NVFP4 checkpoint naming scheme of a layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nvfp4Scheme {
    /// `weight_packed`, `weight_scale`, `weight_global_scale` (= d_w).
    CompressedTensors,
    /// `weight`, `weight_scale`, `weight_scale_2` (= 1 / d_w).
    ModelOpt,
}

/// An imported weight: a registered format in its registered layout, with owned planes.
#[derive(Clone, Debug, PartialEq)]
pub struct Imported {
    /// The format.
    pub format: Format,
    /// Logical rows N.
    pub rows: usize,
    /// Logical columns K.
    pub cols: usize,
    /// The layout's planes (unused ones empty).
    pub planes: [Vec<u8>; 3],
}

impl Imported {
    /// A checked view of the planes.
    pub fn view(&self) -> Result<WeightView<'_>, ninfer::Error> {
        WeightView::new(
            self.format,
            self.format.info().layout,
            self.rows,
            self.cols,
            [&self.planes[0], &self.planes[1], &self.planes[2]],
        )
    }
}

fn tensor<'a>(st: &SafeTensors<'a>, name: &str) -> Result<TensorView<'a>, Refusal> {
    st.tensor(name)
        .or_else(|_| refuse(name, "tensor not found"))
}

/// The exact binary32 value of 16- or 32-bit float words, or a refusal.
fn floats(t: &TensorView<'_>, name: &str) -> Result<Vec<f32>, Refusal> {
    let d = t.data();
    Ok(match t.dtype() {
        Dtype::F32 => d
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
        Dtype::BF16 => d
            .chunks_exact(2)
            .map(|b| f32::from_bits((u16::from_le_bytes([b[0], b[1]]) as u32) << 16))
            .collect(),
        Dtype::F16 => d
            .chunks_exact(2)
            .map(|b| half::f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32())
            .collect(),
        other => return refuse(name, format!("dtype {other:?}: expected F32, BF16 or F16")),
    })
}

/// Converts a scale to the target's 16-bit scale word exactly, or says why not.
fn exact_scale(target: Format, v: f32) -> Result<u16, String> {
    if !v.is_finite() {
        return Err(format!("scale {v} is not finite"));
    }
    if v.is_sign_negative() {
        return Err(format!("scale {v} is negative (or -0)"));
    }
    match target {
        Format::Fp8E4m3fnRowBf16 => {
            let b = v.to_bits();
            if b & 0xFFFF != 0 {
                return Err(format!("scale {v:e} ({b:#010x}) has no exact BF16 value"));
            }
            Ok((b >> 16) as u16)
        }
        _ => {
            let h = half::f16::from_f32(v);
            if h.to_f32().to_bits() != v.to_bits() {
                return Err(format!("scale {v:e} has no exact binary16 value"));
            }
            Ok(h.to_bits())
        }
    }
}

/// Imports a per-channel FP8 layer into `target` (`fp8_e4m3fn_row_bf16` or `_fp16`).
///
/// Refused: missing tensors, wrong dtypes or shapes, a scale that is not an exact value of
/// the target's scale type, and any payload breaking §3.4 (NaN codes, a negative, −0 or
/// non-finite scale, a zero-scale row with a nonzero code).
pub fn import_fp8_row(
    st: &SafeTensors<'_>,
    prefix: &str,
    target: Format,
) -> Result<Imported, Refusal> {
    if !matches!(target, Format::Fp8E4m3fnRowBf16 | Format::Fp8E4m3fnRowFp16) {
        return refuse(prefix, format!("{target} is not a row-scaled FP8 format"));
    }
    let wname = format!("{prefix}.weight");
    let sname = format!("{prefix}.weight_scale");
    let w = tensor(st, &wname)?;
    if w.dtype() != Dtype::F8_E4M3 {
        return refuse(&wname, format!("dtype {:?}: expected F8_E4M3", w.dtype()));
    }
    let &[rows, cols] = w.shape() else {
        return refuse(&wname, format!("shape {:?}: expected [N, K]", w.shape()));
    };
    let s = tensor(st, &sname)?;
    let scales = floats(&s, &sname)?;
    let per_row = match s.shape() {
        [n, 1] | [n] if *n == rows => true,
        [] | [1] | [1, 1] => false,
        other => {
            return refuse(
                &sname,
                format!("shape {other:?}: expected [{rows}, 1], [{rows}] or a single value"),
            );
        }
    };
    let mut words = Vec::with_capacity(rows);
    for r in 0..rows {
        let v = scales[if per_row { r } else { 0 }];
        match exact_scale(target, v) {
            Ok(b) => words.push(b),
            Err(why) => return refuse(&sname, format!("row {r}: {why}")),
        }
    }
    let sizes = layouts::plane_sizes(target, target.info().layout, rows, cols)
        .or_else(|e| refuse(prefix, e.to_string()))?;
    let (mut p0, mut p1) = (try_zeroed(sizes[0], prefix)?, try_zeroed(sizes[1], prefix)?);
    fp8_row::pack(target, rows, cols, w.data(), &words, [&mut p0, &mut p1])
        .or_else(|e| refuse(prefix, e.to_string()))?;
    let planes = [p0, p1, Vec::new()];
    let out = Imported {
        format: target,
        rows,
        cols,
        planes,
    };
    let v = out.view().or_else(|e| refuse(prefix, e.to_string()))?;
    fp8_row::validate(&v).or_else(|e| refuse(prefix, e.to_string()))?;
    Ok(out)
}

/// The NVFP4 scheme a layer's tensor names follow, if any.
pub fn detect_nvfp4(st: &SafeTensors<'_>, prefix: &str) -> Option<Nvfp4Scheme> {
    let has = |s: &str| st.tensor(&format!("{prefix}.{s}")).is_ok();
    if has("weight_packed") && has("weight_global_scale") {
        Some(Nvfp4Scheme::CompressedTensors)
    } else if has("weight") && has("weight_scale_2") {
        Some(Nvfp4Scheme::ModelOpt)
    } else {
        None
    }
}

/// One NVFP4 layer's codes, linear scales and divisor.
struct Nvfp4Layer {
    rows: usize,
    cols: usize,
    codes: Vec<u8>,
    scales: Vec<u8>,
    divisor: f32,
}

fn single(t: &TensorView<'_>, name: &str) -> Result<f32, Refusal> {
    if t.shape().iter().product::<usize>() != 1 {
        return refuse(name, format!("shape {:?}: expected one value", t.shape()));
    }
    Ok(floats(t, name)?[0])
}

fn nvfp4_layer(st: &SafeTensors<'_>, prefix: &str) -> Result<Nvfp4Layer, Refusal> {
    let Some(scheme) = detect_nvfp4(st, prefix) else {
        return refuse(
            prefix,
            "no NVFP4 tensors (weight_packed + weight_global_scale, or weight + weight_scale_2)",
        );
    };
    let (cname, dname) = match scheme {
        Nvfp4Scheme::CompressedTensors => ("weight_packed", "weight_global_scale"),
        Nvfp4Scheme::ModelOpt => ("weight", "weight_scale_2"),
    };
    let cname = format!("{prefix}.{cname}");
    let sname = format!("{prefix}.weight_scale");
    let dname = format!("{prefix}.{dname}");
    let c = tensor(st, &cname)?;
    if c.dtype() != Dtype::U8 {
        return refuse(
            &cname,
            format!(
                "dtype {:?}: expected U8 (two E2M1 codes per byte)",
                c.dtype()
            ),
        );
    }
    let &[rows, half_cols] = c.shape() else {
        return refuse(&cname, format!("shape {:?}: expected [N, K/2]", c.shape()));
    };
    let cols = half_cols * 2;
    if cols % 16 != 0 || cols == 0 || rows == 0 {
        return refuse(
            &cname,
            format!("K = {cols}: nvfp4 needs a positive multiple of 16"),
        );
    }
    let s = tensor(st, &sname)?;
    if !matches!(s.dtype(), Dtype::F8_E4M3 | Dtype::U8) {
        return refuse(&sname, format!("dtype {:?}: expected F8_E4M3", s.dtype()));
    }
    if s.shape() != [rows, cols / 16] {
        return refuse(
            &sname,
            format!(
                "shape {:?}: expected [{rows}, {}] (linear)",
                s.shape(),
                cols / 16
            ),
        );
    }
    let d = tensor(st, &dname)?;
    let x = single(&d, &dname)?;
    let divisor = match scheme {
        Nvfp4Scheme::CompressedTensors => x,
        Nvfp4Scheme::ModelOpt => {
            // 1/x is exact in binary32 only for powers of two: check the f64 product, which
            // is exact for two binary32 factors.
            let r = (1.0f64 / x as f64) as f32;
            if !(x.is_finite() && x > 0.0 && r.is_finite() && r as f64 * x as f64 == 1.0) {
                return refuse(
                    &dname,
                    format!(
                        "weight_scale_2 = {x:e}: its reciprocal (the divisor d_w) is not exact in binary32"
                    ),
                );
            }
            r
        }
    };
    Ok(Nvfp4Layer {
        rows,
        cols,
        codes: c.data().to_vec(),
        scales: s.data().to_vec(),
        divisor,
    })
}

/// Imports one or more NVFP4 layers (either naming scheme, detected per layer) stacked in
/// the given order into one nvfp4 tensor with one divisor per layer.
///
/// Refused: missing or mistyped tensors, K not a multiple of 16, layers of different
/// shapes (a stacked source covers N / divisors rows), a ModelOpt `weight_scale_2` whose
/// reciprocal is inexact, and any payload breaking §3.3 (−0, negative or NaN block scales;
/// a divisor that is not finite and > 0).
pub fn import_nvfp4(st: &SafeTensors<'_>, prefixes: &[&str]) -> Result<Imported, Refusal> {
    let Some(first) = prefixes.first() else {
        return refuse("(none)", "no layer to import");
    };
    let layers = prefixes
        .iter()
        .map(|p| nvfp4_layer(st, p))
        .collect::<Result<Vec<_>, _>>()?;
    let (rows0, cols) = (layers[0].rows, layers[0].cols);
    for (l, p) in layers.iter().zip(prefixes) {
        if (l.rows, l.cols) != (rows0, cols) {
            return refuse(
                *p,
                format!(
                    "shape [{}, {}] differs from {first}'s [{rows0}, {cols}]: stacked sources need equal shapes",
                    l.rows, l.cols
                ),
            );
        }
    }
    let rows = rows0 * layers.len();
    let nkb = cols / 16;
    let linear: Vec<u8> = layers
        .iter()
        .flat_map(|l| l.scales.iter().copied())
        .collect();
    let sizes = layouts::plane_sizes(Format::Nvfp4, Layout::BlockScaleK16_M128x4_V1, rows, cols)
        .or_else(|e| refuse(*first, e.to_string()))?;
    let mut swizzled = try_zeroed(sizes[1], first)?;
    block_scale::pack_scales(rows, nkb, &linear, &mut swizzled)
        .or_else(|e| refuse(*first, e.to_string()))?;
    let out = Imported {
        format: Format::Nvfp4,
        rows,
        cols,
        planes: [
            layers
                .iter()
                .flat_map(|l| l.codes.iter().copied())
                .collect(),
            swizzled,
            layers
                .iter()
                .flat_map(|l| l.divisor.to_le_bytes())
                .collect(),
        ],
    };
    let v = out.view().or_else(|e| refuse(*first, e.to_string()))?;
    nvfp4::validate(&v).or_else(|e| {
        // Name the layer: a row r of the stack belongs to layer r / rows0.
        let who = match &e {
            ninfer::Error::InvalidEncoding { at, .. } if (at.row as usize) < rows => {
                prefixes[at.row as usize / rows0]
            }
            _ => first,
        };
        refuse(who, e.to_string())
    })?;
    Ok(out)
}

/// `import_encoded` for one layer into `target`: nvfp4 (either NVFP4 scheme) or a
/// row-scaled FP8 format (per-channel FP8 tensors).
pub fn import_encoded(
    st: &SafeTensors<'_>,
    prefix: &str,
    target: Format,
) -> Result<Imported, Refusal> {
    match target {
        Format::Nvfp4 => import_nvfp4(st, &[prefix]),
        Format::Fp8E4m3fnRowBf16 | Format::Fp8E4m3fnRowFp16 => import_fp8_row(st, prefix, target),
        other => refuse(
            prefix,
            format!("import_encoded into {other} is not supported by this importer"),
        ),
    }
}

/// A vector sized by the input, allocated fallibly ([`crate::alloc::zeroed`]): a refusal of
/// tensor `name` when memory is short.
fn try_zeroed<T: Clone + Default>(n: usize, name: &str) -> Result<Vec<T>, Refusal> {
    crate::alloc::zeroed(n, "a buffer of the import").or_else(|e| refuse(name, e.to_string()))
}

/// How a ternary safetensors layer `P` is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TernaryForm {
    /// `P.weight` U8 `[N/4, K]` (transformers' BitNet packing) + `P.weight_scale`.
    Packed,
    /// `P.weight` F32/BF16/F16 `[N, K]`: codes −1/0/+1 with `P.weight_scale`, or the values
    /// ±s of each 128-group without one.
    Values,
}

/// Imports a ternary (BitNet b1.58) layer `prefix` into t2_g128_fp16 with the library's
/// `import_ternary_safetensors`: `P.weight` in `form`, and `P.weight_scale` (one value,
/// F32/BF16/F16) applied by `rule` when present. Never requantizes: a layer the library
/// refuses is returned as a [`Refusal`] with its status and reason.
pub fn import_ternary(
    st: &SafeTensors<'_>,
    prefix: &str,
    form: TernaryForm,
    rule: ninfer::formats::import::TernaryScaleRule,
) -> Result<Imported, Refusal> {
    use ninfer::formats::float_source::FloatSource;
    use ninfer::formats::import::{TernaryCodes, import_ternary_safetensors};
    let wname = format!("{prefix}.weight");
    let sname = format!("{prefix}.weight_scale");
    let w = tensor(st, &wname)?;
    let scale = match st.tensor(&sname) {
        Ok(t) => Some((single(&t, &sname)?, rule)),
        Err(_) => None,
    };
    let &[r, cols] = w.shape() else {
        return refuse(&wname, format!("shape {:?}: expected 2-D", w.shape()));
    };
    let d = w.data();
    let (mut f32s, mut u16s): (Vec<f32>, Vec<u16>) = (vec![], vec![]);
    let rows;
    let codes = match (form, w.dtype()) {
        (TernaryForm::Packed, Dtype::U8) => {
            rows = r.checked_mul(4).ok_or_else(|| Refusal {
                tensor: wname.clone(),
                reason: "rows × 4 overflows".into(),
            })?;
            TernaryCodes::Packed(d)
        }
        (TernaryForm::Values, Dtype::F32) => {
            rows = r;
            f32s = try_zeroed(d.len() / 4, &wname)?;
            for (o, b) in f32s.iter_mut().zip(d.chunks_exact(4)) {
                *o = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
            TernaryCodes::Values(FloatSource::F32(&f32s))
        }
        (TernaryForm::Values, dt @ (Dtype::BF16 | Dtype::F16)) => {
            rows = r;
            u16s = try_zeroed(d.len() / 2, &wname)?;
            for (o, b) in u16s.iter_mut().zip(d.chunks_exact(2)) {
                *o = u16::from_le_bytes([b[0], b[1]]);
            }
            TernaryCodes::Values(match dt {
                Dtype::BF16 => FloatSource::Bf16(&u16s),
                _ => FloatSource::F16(&u16s),
            })
        }
        (_, other) => {
            return refuse(
                &wname,
                format!(
                    "dtype {other:?}: packed ternary codes are U8, ternary values F32/BF16/F16"
                ),
            );
        }
    };
    let format = Format::T2_G128Fp16;
    let lib = |e: ninfer::Error| Refusal {
        tensor: wname.clone(),
        reason: format!("{} — {e}", e.status().name()),
    };
    let sizes =
        ninfer::layouts::plane_sizes(format, format.info().layout, rows, cols).map_err(lib)?;
    let mut planes: [Vec<u8>; 3] = [
        try_zeroed(sizes[0], &wname)?,
        try_zeroed(sizes[1], &wname)?,
        try_zeroed(sizes[2], &wname)?,
    ];
    {
        let [a, b, c] = &mut planes;
        import_ternary_safetensors(codes, scale, rows, cols, [a, b, c]).map_err(lib)?;
    }
    drop((f32s, u16s));
    Ok(Imported {
        format,
        rows,
        cols,
        planes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ninfer::formats::float_source::FloatSource;
    use safetensors::serialize;

    fn file(tensors: Vec<(&str, Dtype, Vec<usize>, Vec<u8>)>) -> Vec<u8> {
        let views: Vec<(String, TensorView<'_>)> = tensors
            .iter()
            .map(|(n, d, s, b)| (n.to_string(), TensorView::new(*d, s.clone(), b).unwrap()))
            .collect();
        serialize(views, None).unwrap()
    }

    fn f32s(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn fp8_per_channel_exact_scales() {
        let codes = vec![0x38, 0xBC, 0x00, 0x7E, 0x80, 0x01];
        let bytes = file(vec![
            ("l.weight", Dtype::F8_E4M3, vec![2, 3], codes.clone()),
            (
                "l.weight_scale",
                Dtype::F32,
                vec![2, 1],
                f32s(&[0.5, 2f32.powi(-20)]),
            ),
        ]);
        let st = SafeTensors::deserialize(&bytes).unwrap();
        let b = import_encoded(&st, "l", Format::Fp8E4m3fnRowBf16).unwrap();
        assert_eq!(b.planes[0], codes);
        assert_eq!(b.planes[1], [0x00, 0x3F, 0x80, 0x35]);
        let h = import_encoded(&st, "l", Format::Fp8E4m3fnRowFp16).unwrap();
        assert_eq!(
            h.planes[0],
            [0x00, 0x38, 0x38, 0xBC, 0x00, 0x10, 0x00, 0x7E, 0x80, 0x01]
        );
        let mut out = [0f32; 3];
        ninfer::decode::decode_row(&h.view().unwrap(), 0, &mut out).unwrap();
        assert_eq!(out, [0.5, -0.75, 0.0]);
    }

    #[test]
    fn fp8_refusals() {
        let ok_codes = vec![0x38u8; 4];
        let case = |codes: Vec<u8>, sdt: Dtype, scales: Vec<u8>, sshape: Vec<usize>, target| {
            let bytes = file(vec![
                ("l.weight", Dtype::F8_E4M3, vec![2, 2], codes),
                ("l.weight_scale", sdt, sshape, scales),
            ]);
            let st = SafeTensors::deserialize(&bytes).unwrap();
            import_encoded(&st, "l", target)
                .map(|_| ())
                .map_err(|e| e.reason)
        };
        let bf = Format::Fp8E4m3fnRowBf16;
        let hf = Format::Fp8E4m3fnRowFp16;
        let r = case(
            ok_codes.clone(),
            Dtype::F32,
            f32s(&[0.1, 1.0]),
            vec![2, 1],
            bf,
        )
        .unwrap_err();
        assert!(r.contains("no exact BF16"), "{r}");
        let r = case(
            ok_codes.clone(),
            Dtype::F32,
            f32s(&[1e-8, 1.0]),
            vec![2, 1],
            hf,
        )
        .unwrap_err();
        assert!(r.contains("no exact binary16"), "{r}");
        let r = case(
            ok_codes.clone(),
            Dtype::F32,
            f32s(&[-1.0, 1.0]),
            vec![2],
            bf,
        )
        .unwrap_err();
        assert!(r.contains("negative"), "{r}");
        let r = case(
            ok_codes.clone(),
            Dtype::F32,
            f32s(&[-0.0, 1.0]),
            vec![2],
            bf,
        )
        .unwrap_err();
        assert!(r.contains("negative"), "{r}");
        let r = case(
            ok_codes.clone(),
            Dtype::F32,
            f32s(&[f32::INFINITY, 1.0]),
            vec![2],
            bf,
        )
        .unwrap_err();
        assert!(r.contains("not finite"), "{r}");
        let r = case(
            vec![0x38, 0x7F, 0, 0],
            Dtype::F32,
            f32s(&[1.0, 1.0]),
            vec![2],
            bf,
        )
        .unwrap_err();
        assert!(r.contains("NaN"), "{r}");
        let r = case(ok_codes.clone(), Dtype::F32, f32s(&[0.0, 1.0]), vec![2], bf).unwrap_err();
        assert!(r.contains("zero-scale"), "{r}");
        let r = case(
            ok_codes.clone(),
            Dtype::F32,
            f32s(&[1.0, 1.0, 1.0]),
            vec![3],
            bf,
        )
        .unwrap_err();
        assert!(r.contains("shape"), "{r}");
        let r = case(ok_codes.clone(), Dtype::I32, vec![0; 8], vec![2], bf).unwrap_err();
        assert!(r.contains("dtype"), "{r}");
        // Near misses: a BF16 scale into the fp16 target when exact; a per-tensor scale;
        // a zero scale with signed-zero codes.
        let bf16_half = 0x3F00u16.to_le_bytes().repeat(2);
        case(ok_codes.clone(), Dtype::BF16, bf16_half, vec![2, 1], hf).unwrap();
        let bytes = file(vec![
            (
                "l.weight",
                Dtype::F8_E4M3,
                vec![2, 2],
                vec![0x00, 0x80, 0x38, 0x38],
            ),
            ("l.weight_scale", Dtype::F32, vec![2], f32s(&[0.0, 1.0])),
        ]);
        let st = SafeTensors::deserialize(&bytes).unwrap();
        import_encoded(&st, "l", bf).unwrap();
        let bytes = file(vec![
            ("l.weight", Dtype::F8_E4M3, vec![2, 2], ok_codes.clone()),
            ("l.weight_scale", Dtype::F32, vec![], f32s(&[0.25])),
        ]);
        let st = SafeTensors::deserialize(&bytes).unwrap();
        let b = import_encoded(&st, "l", bf).unwrap();
        assert_eq!(b.planes[1], [0x80, 0x3E, 0x80, 0x3E]);
        assert!(
            import_encoded(&st, "missing", bf)
                .unwrap_err()
                .reason
                .contains("not found")
        );
    }

    /// Quantizes with the library, writes the layer as a checkpoint would (linear scales).
    fn nvfp4_layer_bytes(seed: f32, rows: usize, cols: usize) -> (Vec<u8>, Vec<u8>, Vec<u8>, f32) {
        let src: Vec<f32> = (0..rows * cols)
            .map(|i| (i as f32 * 0.37 + seed).sin() * seed)
            .collect();
        let sizes =
            layouts::plane_sizes(Format::Nvfp4, Layout::BlockScaleK16_M128x4_V1, rows, cols)
                .unwrap();
        let (mut c, mut s, mut d) = (vec![0; sizes[0]], vec![0; sizes[1]], vec![0; 4]);
        nvfp4::nvfp4_quantize(
            FloatSource::F32(&src),
            rows,
            cols,
            1,
            [&mut c, &mut s, &mut d],
        )
        .unwrap();
        let mut lin = vec![0; rows * cols / 16];
        block_scale::unpack_scales(rows, cols / 16, &s, &mut lin).unwrap();
        (c, lin, s, f32::from_le_bytes(d.try_into().unwrap()))
    }

    #[test]
    fn nvfp4_both_schemes_and_stacking() {
        let (c1, l1, s1, d1) = nvfp4_layer_bytes(1.5, 130, 48);
        let (c2, l2, _, _) = nvfp4_layer_bytes(0.2, 130, 48);
        let bytes = file(vec![
            ("q.weight_packed", Dtype::U8, vec![130, 24], c1.clone()),
            ("q.weight_scale", Dtype::F8_E4M3, vec![130, 3], l1.clone()),
            ("q.weight_global_scale", Dtype::F32, vec![1], f32s(&[d1])),
            ("k.weight", Dtype::U8, vec![130, 24], c2.clone()),
            ("k.weight_scale", Dtype::F8_E4M3, vec![130, 3], l2.clone()),
            ("k.weight_scale_2", Dtype::F32, vec![], f32s(&[0.125])),
            ("v.weight", Dtype::U8, vec![130, 24], c2.clone()),
            ("v.weight_scale", Dtype::F8_E4M3, vec![130, 3], l2.clone()),
            ("v.weight_scale_2", Dtype::F32, vec![], f32s(&[0.1])),
            ("o.weight_packed", Dtype::U8, vec![64, 24], vec![0; 64 * 24]),
            (
                "o.weight_scale",
                Dtype::F8_E4M3,
                vec![64, 3],
                vec![0x80; 64 * 3],
            ),
            ("o.weight_global_scale", Dtype::F32, vec![1], f32s(&[1.0])),
        ]);
        let st = SafeTensors::deserialize(&bytes).unwrap();
        assert_eq!(detect_nvfp4(&st, "q"), Some(Nvfp4Scheme::CompressedTensors));
        assert_eq!(detect_nvfp4(&st, "k"), Some(Nvfp4Scheme::ModelOpt));
        // One layer: the planes are exactly the quantizer's.
        let q = import_encoded(&st, "q", Format::Nvfp4).unwrap();
        assert_eq!(q.planes, [c1.clone(), s1, d1.to_le_bytes().to_vec()]);
        // Stacked q + k: divisors d1 and 1 / 0.125 = 8.
        let qk = import_nvfp4(&st, &["q", "k"]).unwrap();
        assert_eq!(qk.rows, 260);
        assert_eq!(
            qk.planes[2],
            [d1.to_le_bytes(), 8f32.to_le_bytes()].concat()
        );
        assert_eq!(qk.planes[0], [c1, c2].concat());
        let mut back = vec![0; 260 * 3];
        block_scale::unpack_scales(260, 3, &qk.planes[1], &mut back).unwrap();
        assert_eq!(back, [l1, l2].concat());
        // Refusals: inexact reciprocal, -0 scales (named layer), shape mismatch.
        let r = import_nvfp4(&st, &["q", "v"]).unwrap_err();
        assert!(
            r.tensor == "v.weight_scale_2" && r.reason.contains("not exact"),
            "{r}"
        );
        let r = import_nvfp4(&st, &["o"]).unwrap_err();
        assert!(r.tensor == "o" && r.reason.contains("sign bit"), "{r}");
        let r = import_nvfp4(&st, &["q", "o"]).unwrap_err();
        assert!(r.reason.contains("equal shapes"), "{r}");
        let r = import_nvfp4(&st, &["nothing"]).unwrap_err();
        assert!(r.reason.contains("no NVFP4 tensors"), "{r}");
    }

    /// A checkpoint written by an independent Python producer
    /// (scripts/fixtures/nvfp4_checkpoint.py, real MiniLM rows) with the expected planes.
    #[test]
    fn python_checkpoint_imports_to_expected_planes() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/data/nvfp4/checkpoint.safetensors"
        );
        let bytes = std::fs::read(path).unwrap_or_else(|e| {
            panic!("fixture {path} missing ({e}): run scripts/fixtures/nvfp4_checkpoint.py")
        });
        let st = SafeTensors::deserialize(&bytes).unwrap();
        let data = |n: &str| st.tensor(n).unwrap().data().to_vec();
        let b = import_encoded(&st, "fp8b", Format::Fp8E4m3fnRowBf16).unwrap();
        assert_eq!(b.planes[0], data("fp8b.weight"));
        assert_eq!(b.planes[1], data("expected.fp8b.scales"));
        let r = import_encoded(&st, "fp8f", Format::Fp8E4m3fnRowBf16).unwrap_err();
        assert!(r.reason.contains("no exact BF16"), "{r}");
        let qk = import_nvfp4(&st, &["q", "k"]).unwrap();
        assert_eq!(
            qk.planes[0],
            [data("q.weight_packed"), data("k.weight_packed")].concat()
        );
        assert_eq!(qk.planes[1], data("expected.qk.scales"));
        assert_eq!(qk.planes[2], data("expected.qk.divisors"));
        let m = import_encoded(&st, "m", Format::Nvfp4).unwrap();
        assert_eq!(m.planes[0], data("m.weight"));
        assert_eq!(m.planes[1], data("expected.m.scales"));
        assert_eq!(m.planes[2], data("expected.m.divisors"));
        // Every imported row decodes.
        let mut out = vec![0f32; 96];
        for r in 0..96 {
            ninfer::decode::decode_row(&qk.view().unwrap(), r, &mut out).unwrap();
        }
    }
}
