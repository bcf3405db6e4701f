//! `ninfer import IN.safetensors --out OUT.safetensors`: copies the already quantized FP8
//! per-channel and NVFP4 (compressed-tensors, ModelOpt) layers of a checkpoint into ninfer
//! planes (docs/safetensors.md) with `crate::import`; words are never requantized.
//!
//! Layers are found by name: `P.weight_packed` or `P.weight_scale_2` (NVFP4, one layer per
//! tensor, never stacked), `P.weight` of dtype F8_E4M3 (FP8 per channel). The ninfer
//! tensor is named `P.weight`. Every other tensor, and every tensor of a refused layer, is
//! copied through unchanged; a refused layer makes the exit status 1.
//!
//! Ternary (BitNet b1.58) layers move into t2_g128_fp16 with the library's
//! `import_ternary_safetensors`: `P.weight` U8 + `P.weight_scale` (transformers' packing,
//! found automatically), or, with `--ternary-values`, 2-D F32/BF16/F16 `P.weight` (codes with
//! `P.weight_scale`, or ±s per 128-value group). `--ternary-scale` says whether the value is
//! code / s (default) or code × s.
//!
//! `ninfer import IN.gguf --out OUT.safetensors`: moves the ternary TQ1_0/TQ2_0 tensors of
//! a GGUF file into t2_g128_fp16 planes (same names) with the library's
//! `import_gguf_ternary`; other tensors are carried as `ninfer quantize` carries them
//! (F32/F16/BF16/integer tensors as plain data, gguf_* blocks byte for byte). A refused
//! ternary tensor cannot be copied through (safetensors has no TQ dtype): the refusals are
//! reported, nothing is written, and the exit status is 1.

use crate::alloc::zeroed;
use crate::import::{self, Imported, Nvfp4Scheme};
use crate::input::{Item, Source};
use crate::st::{self, Descriptor, StFile, Writer};
use crate::table::{self, count};
use anyhow::{Result, bail};
use ninfer::formats::import::import_gguf_ternary;
use ninfer::{Format, layouts};
use safetensors::{Dtype, SafeTensors};
use std::collections::{BTreeMap, HashSet};
use std::path::Path;

/// `--fp8-format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Fp8Target {
    /// fp8_e4m3fn_row_bf16 when every scale is an exact BF16 value, else
    /// fp8_e4m3fn_row_fp16 when every scale is an exact binary16 value.
    Auto,
    /// fp8_e4m3fn_row_bf16 only.
    Bf16,
    /// fp8_e4m3fn_row_fp16 only.
    Fp16,
}

/// `--ternary-scale`: how a ternary layer's `weight_scale` s applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TernaryScaleArg {
    /// value = code / s (transformers' BitLinear; microsoft/bitnet-b1.58-2B-4T).
    Divide,
    /// value = code × s (transformers' AutoBitLinear, offline quantization).
    Multiply,
}

/// The ternary options of `ninfer import`.
#[derive(Clone, Debug, Default)]
pub struct TernaryArgs {
    /// `--ternary-values`: 2-D F32/BF16/F16 `P.weight` tensors are ternary (codes with
    /// `P.weight_scale`, or ±s per 128-group without).
    pub values: bool,
    /// `--tensors S`: with `--ternary-values`, only weights whose name contains S.
    pub filter: Option<String>,
    /// `--ternary-scale` (default divide).
    pub multiply: bool,
}

enum Kind {
    Fp8,
    Nvfp4(Nvfp4Scheme),
    Ternary(import::TernaryForm),
}

pub fn run(input: &Path, out: &Path, fp8: Fp8Target, ternary: &TernaryArgs) -> Result<bool> {
    if !st::is_safetensors(input) {
        return run_gguf(input, out);
    }
    if ternary.filter.is_some() && !ternary.values {
        bail!("--tensors selects the weights of --ternary-values: it needs --ternary-values");
    }
    let rule = match ternary.multiply {
        true => ninfer::formats::import::TernaryScaleRule::Multiply,
        false => ninfer::formats::import::TernaryScaleRule::Divide,
    };
    crate::input::check_out(input, out)?;
    let file = StFile::open(input)?;
    let bytes = file.bytes();
    let stf = SafeTensors::deserialize(bytes).map_err(|e| anyhow::anyhow!("safetensors: {e}"))?;
    // Layers by prefix, in name order.
    let mut layers: BTreeMap<String, Kind> = BTreeMap::new();
    for (name, t) in stf.iter() {
        if let Some(p) = name
            .strip_suffix(".weight_packed")
            .or_else(|| name.strip_suffix(".weight_scale_2"))
        {
            if let Some(s) = import::detect_nvfp4(&stf, p) {
                layers.insert(p.to_owned(), Kind::Nvfp4(s));
            }
        } else if let Some(p) = name.strip_suffix(".weight")
            && t.dtype() == Dtype::F8_E4M3
        {
            layers.insert(p.to_owned(), Kind::Fp8);
        } else if let Some(p) = name.strip_suffix(".weight")
            && t.dtype() == Dtype::U8
            && t.shape().len() == 2
            && stf.tensor(&format!("{p}.weight_scale")).is_ok()
            // U8 weights beside a second-level scale are NVFP4 (found under that name).
            && import::detect_nvfp4(&stf, p).is_none()
        {
            layers.insert(p.to_owned(), Kind::Ternary(import::TernaryForm::Packed));
        } else if let Some(p) = name.strip_suffix(".weight")
            && ternary.values
            && matches!(t.dtype(), Dtype::F32 | Dtype::BF16 | Dtype::F16)
            && t.shape().len() == 2
            && ternary.filter.as_deref().is_none_or(|f| name.contains(f))
        {
            layers.insert(p.to_owned(), Kind::Ternary(import::TernaryForm::Values));
        }
    }
    if layers.is_empty() {
        bail!(
            "{}: no FP8 per-channel (P.weight F8_E4M3 + P.weight_scale), NVFP4 \
             (P.weight_packed + P.weight_global_scale, or P.weight + P.weight_scale_2) or \
             packed ternary (P.weight U8 + P.weight_scale) layer{}",
            input.display(),
            match ternary.values {
                true => ", and no 2-D F32/BF16/F16 P.weight selected for --ternary-values",
                false => " (ternary values stored as floats need --ternary-values)",
            }
        );
    }
    let mut w = Writer::default();
    for (k, v) in &file.metadata {
        if k != st::FILE_KEY {
            w.meta(k.clone(), v.clone())?;
        }
    }
    let mut consumed: HashSet<String> = HashSet::new();
    let mut report = Vec::new();
    let mut refusals = Vec::new();
    for (prefix, kind) in &layers {
        let (res, scheme, parts): (Result<Imported, _>, &str, &[&str]) = match kind {
            Kind::Fp8 => {
                let targets: &[Format] = match fp8 {
                    Fp8Target::Auto => &[Format::Fp8E4m3fnRowBf16, Format::Fp8E4m3fnRowFp16],
                    Fp8Target::Bf16 => &[Format::Fp8E4m3fnRowBf16],
                    Fp8Target::Fp16 => &[Format::Fp8E4m3fnRowFp16],
                };
                let mut why = Vec::new();
                let mut got = None;
                for &t in targets {
                    match import::import_encoded(&stf, prefix, t) {
                        Ok(x) => {
                            got = Some(x);
                            break;
                        }
                        Err(r) => why.push(format!("{t}: {r}")),
                    }
                }
                (
                    got.ok_or(why.join("; ")),
                    "fp8-per-channel",
                    &["weight", "weight_scale"],
                )
            }
            Kind::Ternary(form) => {
                let scale = stf.tensor(&format!("{prefix}.weight_scale")).is_ok();
                (
                    import::import_ternary(&stf, prefix, *form, rule).map_err(|r| r.to_string()),
                    match (form, scale, ternary.multiply) {
                        (import::TernaryForm::Packed, _, false) => "bitnet-packed-divide",
                        (import::TernaryForm::Packed, _, true) => "bitnet-packed-multiply",
                        (_, true, false) => "ternary-codes-divide",
                        (_, true, true) => "ternary-codes-multiply",
                        (_, false, _) => "ternary-values",
                    },
                    match scale {
                        true => &["weight", "weight_scale"],
                        false => &["weight"],
                    },
                )
            }
            Kind::Nvfp4(s) => (
                import::import_encoded(&stf, prefix, Format::Nvfp4).map_err(|r| r.to_string()),
                match s {
                    Nvfp4Scheme::CompressedTensors => "nvfp4-compressed-tensors",
                    Nvfp4Scheme::ModelOpt => "nvfp4-modelopt",
                },
                match s {
                    Nvfp4Scheme::CompressedTensors => {
                        &["weight_packed", "weight_scale", "weight_global_scale"]
                    }
                    Nvfp4Scheme::ModelOpt => &["weight", "weight_scale", "weight_scale_2"],
                },
            ),
        };
        match res {
            Err(why) => {
                refusals.push(format!("  {prefix}  ({scheme})  {why}"));
                report.push(vec![
                    prefix.clone(),
                    scheme.into(),
                    String::new(),
                    String::new(),
                    String::new(),
                    "REFUSED, copied".into(),
                ]);
            }
            Ok(imp) => {
                let name = format!("{prefix}.weight");
                let sources: Vec<String> = parts.iter().map(|p| format!("{prefix}.{p}")).collect();
                let desc = Descriptor {
                    format: imp.format,
                    layout: imp.format.info().layout,
                    rows: imp.rows,
                    cols: imp.cols,
                };
                let b: usize = imp.planes.iter().map(Vec::len).sum();
                report.push(vec![
                    name.clone(),
                    scheme.into(),
                    imp.format.to_string(),
                    desc.shape_text(),
                    count(b as u64),
                    "imported".into(),
                ]);
                consumed.extend(sources.iter().cloned());
                w.encoded(
                    &name,
                    desc,
                    imp.planes,
                    format!(
                        "method=import_encoded;scheme={scheme};source={}",
                        st::provenance_value(&sources.join(","))
                    ),
                )?;
            }
        }
    }
    let mut copied = 0;
    for (name, t) in stf.iter() {
        if !consumed.contains(name) {
            w.plain(name, t.dtype(), t.shape(), t.data())?;
            copied += 1;
        }
    }
    outln!("import {} → {}", input.display(), out.display());
    outln!();
    table::print(
        &["tensor", "scheme", "format", "shape", "bytes", "status"],
        &[false, false, false, false, true, false],
        &report,
    )?;
    if !refusals.is_empty() {
        outln!(
            "\nrefused ({}), tensors copied through unchanged:",
            refusals.len()
        );
        for r in &refusals {
            outln!("{r}");
        }
    }
    let imported = layers.len() - refusals.len();
    w.write(out)?;
    outln!(
        "\n{} layers: {imported} imported, {} refused; {copied} other tensors copied; wrote {}",
        layers.len(),
        refusals.len(),
        out.display()
    );
    Ok(refusals.is_empty())
}

/// `ninfer import` of a GGUF file: see the module documentation.
fn run_gguf(input: &Path, out: &Path) -> Result<bool> {
    let source = Source::open(input)?;
    crate::input::check_out(input, out)?;
    let mut w = Writer::default();
    let mut report = Vec::new();
    let mut refusals = Vec::new();
    let (mut imported, mut copied) = (0usize, 0usize);
    for item in source.items()? {
        match item {
            Item::Ternary {
                name,
                ggml_type,
                rows,
                cols,
                blocks,
            } => {
                let ty = ninfer::registry::ggml_type_name(ggml_type).unwrap_or("?");
                let target = Format::T2_G128Fp16;
                let res = layouts::plane_sizes(target, target.info().layout, rows, cols).and_then(
                    |sizes| {
                        let [a, b, c] = sizes;
                        let mut planes = [
                            zeroed(a, "plane 0")?,
                            zeroed(b, "plane 1")?,
                            zeroed(c, "plane 2")?,
                        ];
                        let [a, b, c] = &mut planes;
                        import_gguf_ternary(ggml_type, blocks, rows, cols, [a, b, c])
                            .map(|()| planes)
                    },
                );
                match res {
                    Err(e) => {
                        refusals.push(format!("  {name}  ({ty})  {} — {e}", e.status().name()));
                        report.push(vec![
                            name,
                            ty.to_owned(),
                            String::new(),
                            format!("[{rows}, {cols}]"),
                            String::new(),
                            "REFUSED".into(),
                        ]);
                    }
                    Ok(planes) => {
                        let desc = Descriptor {
                            format: target,
                            layout: target.info().layout,
                            rows,
                            cols,
                        };
                        let b: usize = planes.iter().map(Vec::len).sum();
                        report.push(vec![
                            name.clone(),
                            ty.to_owned(),
                            target.to_string(),
                            desc.shape_text(),
                            count(b as u64),
                            "imported".into(),
                        ]);
                        w.encoded(
                            &name,
                            desc,
                            planes,
                            format!(
                                "method=import_encoded;scheme=gguf-{};source={}",
                                ty.to_ascii_lowercase(),
                                st::provenance_value(&name)
                            ),
                        )?;
                        imported += 1;
                    }
                }
            }
            Item::GgufBlocks {
                name, desc, blocks, ..
            } => {
                w.encoded(
                    &name,
                    desc,
                    [blocks.to_vec(), vec![], vec![]],
                    format!(
                        "method=import_encoded;scheme=gguf;source={}",
                        st::provenance_value(&name)
                    ),
                )?;
                copied += 1;
            }
            Item::Plain(p) => {
                w.plain(&p.name, p.dtype, &p.shape, p.data)?;
                copied += 1;
            }
            // A GGUF file has no ninfer-encoded tensors.
            Item::Copied { name, .. } => bail!("{name}: unexpected encoded tensor in a GGUF file"),
        }
    }
    outln!("import {} → {}", input.display(), out.display());
    outln!();
    table::print(
        &["tensor", "ggml type", "format", "shape", "bytes", "status"],
        &[false, false, false, false, true, false],
        &report,
    )?;
    if !refusals.is_empty() {
        outln!(
            "\nrefused ({}); a ternary tensor cannot be copied through, so {} was not written:",
            refusals.len(),
            out.display()
        );
        for r in &refusals {
            outln!("{r}");
        }
        return Ok(false);
    }
    if imported == 0 {
        outln!(
            "\nno TQ1_0/TQ2_0 tensor in {}: nothing to import, {} not written",
            input.display(),
            out.display()
        );
        return Ok(false);
    }
    w.write(out)?;
    outln!(
        "\n{imported} ternary tensors imported into t2_g128_fp16, {copied} other tensors carried; wrote {}",
        out.display()
    );
    Ok(true)
}
