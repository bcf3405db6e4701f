//! The tensors of an input file, safetensors or GGUF, as `ninfer quantize` and
//! `ninfer import` walk them: plain data, already encoded ninfer tensors, GGUF blocks of a
//! registered gguf_* format, and ternary GGUF tensors (TQ1_0/TQ2_0).

use crate::gguf::GgufFile;
use crate::st::{self, Descriptor, Entry, StFile};
use anyhow::{Context, Result, bail};
use ninfer::formats::import::ternary_block_bytes;
use ninfer::{Format, Layout, WeightView};
use safetensors::Dtype;
use std::path::Path;

/// Refuses, before any work, an output path that names the input file (writing it would
/// replace the input) or lies in a directory that does not exist.
pub fn check_out(input: &Path, out: &Path) -> Result<()> {
    if out.exists() && input.canonicalize().ok() == out.canonicalize().ok() {
        bail!("--out {} is the input file", out.display());
    }
    let dir = match out.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        bail!("--out {}: no directory {}", out.display(), dir.display());
    }
    Ok(())
}

/// The input file: safetensors (plain and ninfer-encoded tensors) or GGUF.
pub enum Source {
    St(StFile),
    Gguf(GgufFile),
}

/// A plain input tensor: safetensors dtype, shape outermost first, little-endian bytes.
pub struct PlainItem<'a> {
    pub name: String,
    pub dtype: Dtype,
    pub shape: Vec<usize>,
    pub data: &'a [u8],
}

/// One input tensor, whichever file it comes from.
pub enum Item<'a> {
    /// Plain data: encoded when selected and a 2-D F32/BF16/F16 matrix, else copied.
    Plain(PlainItem<'a>),
    /// A ninfer-encoded tensor of a safetensors input: its planes are copied (its
    /// descriptor and provenance travel with the file's metadata).
    Copied {
        name: String,
        desc: Descriptor,
        planes: [&'a [u8]; 3],
    },
    /// A GGUF tensor of a registered gguf_* format: its blocks are copied as that format's
    /// `gguf_blocks_v1` tensor [rows, K] (`shape` is the GGUF shape, outermost first).
    GgufBlocks {
        name: String,
        desc: Descriptor,
        blocks: &'a [u8],
        shape: Vec<usize>,
    },
    /// A GGUF tensor of a ternary type (TQ1_0 or TQ2_0, `ggml_type` 34 or 35), `rows × cols`
    /// values (`cols` = `ne[0]`): it has no registered format of its own; `ninfer import`
    /// moves it into t2_g128_fp16.
    Ternary {
        name: String,
        ggml_type: u32,
        rows: usize,
        cols: usize,
        blocks: &'a [u8],
    },
}

/// The safetensors dtype a GGUF scalar type is stored as, if it has one.
pub fn gguf_plain_dtype(ggml_type: u32) -> Option<Dtype> {
    Some(match ggml_type {
        0 => Dtype::F32,
        1 => Dtype::F16,
        30 => Dtype::BF16,
        24 => Dtype::I8,
        25 => Dtype::I16,
        26 => Dtype::I32,
        27 => Dtype::I64,
        28 => Dtype::F64,
        _ => return None,
    })
}

impl Source {
    /// Opens a safetensors file (by extension or header) or else a GGUF file.
    pub fn open(path: &Path) -> Result<Source> {
        Ok(match st::is_safetensors(path) {
            true => Source::St(StFile::open(path)?),
            false => Source::Gguf(GgufFile::open(path)?),
        })
    }

    /// Every tensor, in the file's order (safetensors: by name). A GGUF tensor of a type
    /// that has no safetensors dtype, no registered gguf_* format and is not ternary (Q4_1,
    /// MXFP4, ...) cannot be carried into the output: the file is refused before anything
    /// is written.
    pub fn items(&self) -> Result<Vec<Item<'_>>> {
        let mut items = Vec::new();
        match self {
            Source::St(file) => {
                for e in &file.entries {
                    items.push(match e {
                        Entry::Plain(p) => Item::Plain(PlainItem {
                            name: p.name.clone(),
                            dtype: p.dtype,
                            shape: p.shape.clone(),
                            data: file.data(p),
                        }),
                        Entry::Encoded(enc) => Item::Copied {
                            name: enc.name.clone(),
                            desc: enc.desc,
                            planes: file
                                .view(enc)
                                .with_context(|| format!("tensor {:?}", enc.name))?
                                .planes(),
                        },
                        Entry::Broken { name, message } => bail!("{name}: {message}"),
                    });
                }
            }
            Source::Gguf(file) => {
                let mut uncarried = Vec::new();
                for t in &file.tensors {
                    let data = file
                        .data(t)
                        .with_context(|| format!("tensor {:?}", t.name))?;
                    let shape = t
                        .shape()
                        .into_iter()
                        .map(usize::try_from)
                        .collect::<Result<Vec<usize>, _>>()
                        .with_context(|| format!("tensor {:?}: shape too large", t.name))?;
                    if let Some(dtype) = gguf_plain_dtype(t.ggml_type) {
                        items.push(Item::Plain(PlainItem {
                            name: t.name.clone(),
                            dtype,
                            shape,
                            data,
                        }));
                        continue;
                    }
                    if ternary_block_bytes(t.ggml_type).is_some() {
                        items.push(Item::Ternary {
                            name: t.name.clone(),
                            ggml_type: t.ggml_type,
                            rows: usize::try_from(t.rows().unwrap_or(0))?,
                            cols: usize::try_from(t.k())?,
                            blocks: data,
                        });
                        continue;
                    }
                    let Ok(format) = Format::from_ggml_type(t.ggml_type) else {
                        uncarried.push(format!(
                            "{} ({})",
                            t.name,
                            ninfer::registry::ggml_type_name(t.ggml_type).unwrap_or("unknown")
                        ));
                        continue;
                    };
                    let (rows, cols) = (t.rows().unwrap_or(0) as usize, t.k() as usize);
                    WeightView::new(format, Layout::GgufBlocksV1, rows, cols, [data, &[], &[]])
                        .with_context(|| format!("tensor {:?} ({format})", t.name))?;
                    items.push(Item::GgufBlocks {
                        name: t.name.clone(),
                        desc: Descriptor {
                            format,
                            layout: Layout::GgufBlocksV1,
                            rows,
                            cols,
                        },
                        blocks: data,
                        shape,
                    });
                }
                if !uncarried.is_empty() {
                    bail!(
                        "{} GGUF tensor(s) of a type with no safetensors dtype and no registered \
                         gguf_* format cannot be carried into the output (nothing written): {}{}",
                        uncarried.len(),
                        uncarried.join(", "),
                        match uncarried.iter().any(|u| u.contains("(TQ")) {
                            true =>
                                "; `ninfer import` moves TQ1_0/TQ2_0 tensors into \
                                     t2_g128_fp16 without rounding",
                            false => "",
                        }
                    );
                }
            }
        }
        Ok(items)
    }
}
