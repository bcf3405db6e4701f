//! A small, bounds-checked GGUF container reader (header, metadata, tensor table) over a
//! memory-mapped or embedded byte image.
//!
//! Why not a crate: the two maintained candidates do not fit. `ggus` 0.5 reads the tensor
//! type field straight into its `GGmlType` enum (undefined behaviour for ids it lacks, such
//! as 42 = Q2_0) and panics in `size()` for others; `gguf-rs-lib` 0.3 fails the whole file
//! on a type id outside its table and sizes tensors with its own type table instead of this
//! library's registry. Here the type id stays a plain `u32`: the registry decides what it
//! is (`Format::from_ggml_type`), and a tensor of an unknown type is reported, not fatal.
//!
//! Layout facts (GGUF v2/v3, little-endian): magic "GGUF", u32 version, u64 tensor count,
//! u64 metadata count; metadata entries `string key, u32 type, value`; tensor entries
//! `string name, u32 n_dims, u64 ne[n_dims], u32 ggml type, u64 offset`; the data section
//! starts at the next multiple of `general.alignment` (default 32) and offsets are relative
//! to it. Dimensions are innermost first: `ne[0]` is the row length K.

use anyhow::{Context, Result, bail, ensure};
use std::fmt;
use std::path::Path;

/// The most dimensions ggml tensors have (GGML_MAX_DIMS).
pub const MAX_DIMS: usize = 4;
/// Array items kept per metadata array (the rest are only counted).
const ARRAY_HEAD: usize = 8;
/// Nesting limit for arrays of arrays (a malformed file must not recurse without end).
const MAX_DEPTH: u32 = 4;

/// The bytes of a GGUF file: mapped from disk or a static image.
pub enum Bytes {
    Mapped(memmap2::Mmap),
    Static(&'static [u8]),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m) => m,
            Bytes::Static(s) => s,
        }
    }
}

/// A metadata value. Arrays keep their element type, length and first items.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    Str(String),
    U64(u64),
    I64(i64),
    F64(f64),
    Array {
        elem: u32,
        len: u64,
        head: Vec<Value>,
    },
}

impl Value {
    /// The value as an unsigned integer, when it is one.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::U8(v) => Some(v.into()),
            Value::U16(v) => Some(v.into()),
            Value::U32(v) => Some(v.into()),
            Value::U64(v) => Some(v),
            Value::I8(v) => u64::try_from(v).ok(),
            Value::I16(v) => u64::try_from(v).ok(),
            Value::I32(v) => u64::try_from(v).ok(),
            Value::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }
}

fn value_type_name(t: u32) -> &'static str {
    match t {
        0 => "u8",
        1 => "i8",
        2 => "u16",
        3 => "i16",
        4 => "u32",
        5 => "i32",
        6 => "f32",
        7 => "bool",
        8 => "string",
        9 => "array",
        10 => "u64",
        11 => "i64",
        12 => "f64",
        _ => "?",
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::U8(v) => write!(f, "{v}"),
            Value::I8(v) => write!(f, "{v}"),
            Value::U16(v) => write!(f, "{v}"),
            Value::I16(v) => write!(f, "{v}"),
            Value::U32(v) => write!(f, "{v}"),
            Value::I32(v) => write!(f, "{v}"),
            Value::F32(v) => write!(f, "{v}"),
            Value::Bool(v) => write!(f, "{v}"),
            Value::Str(s) => {
                // Long strings (chat templates) are cut for display.
                let mut cut: String = s.chars().take(60).collect();
                if cut.len() < s.len() {
                    cut.push('…');
                }
                write!(f, "{cut:?}")
            }
            Value::U64(v) => write!(f, "{v}"),
            Value::I64(v) => write!(f, "{v}"),
            Value::F64(v) => write!(f, "{v}"),
            Value::Array { elem, len, head } => {
                write!(f, "[{} × {len}]", value_type_name(*elem))?;
                if !head.is_empty() {
                    let items: Vec<String> = head.iter().map(|v| v.to_string()).collect();
                    write!(f, " {}", items.join(", "))?;
                    if (head.len() as u64) < *len {
                        write!(f, ", …")?;
                    }
                }
                Ok(())
            }
        }
    }
}

/// One entry of the tensor table.
#[derive(Clone, Debug)]
pub struct TensorInfo {
    /// Tensor name.
    pub name: String,
    /// `ne`, innermost first (`ne[0]` = K).
    pub dims: Vec<u64>,
    /// The ggml type id, uninterpreted.
    pub ggml_type: u32,
    /// Offset of the data relative to the data section.
    pub offset: u64,
}

impl TensorInfo {
    /// Row length K (`ne[0]`; 1 for a scalar).
    pub fn k(&self) -> u64 {
        self.dims.first().copied().unwrap_or(1)
    }

    /// Rows: the product of the outer dimensions (`None` on overflow).
    pub fn rows(&self) -> Option<u64> {
        self.dims
            .iter()
            .skip(1)
            .try_fold(1u64, |a, &d| a.checked_mul(d))
    }

    /// Number of elements (`None` on overflow).
    pub fn elements(&self) -> Option<u64> {
        self.rows()?.checked_mul(self.k())
    }

    /// The logical shape, outermost first (numpy order), e.g. `[262144, 640]`.
    pub fn shape(&self) -> Vec<u64> {
        self.dims.iter().rev().copied().collect()
    }

    /// The shape as text, outermost dimension first (numpy order, GGUF's `ne` reversed),
    /// as every `ninfer` command prints shapes: `[262144, 640]`.
    pub fn shape_text(&self) -> String {
        let s: Vec<String> = self.shape().iter().map(|d| d.to_string()).collect();
        if s.is_empty() {
            "scalar".into()
        } else {
            format!("[{}]", s.join(", "))
        }
    }
}

/// A parsed GGUF file: its bytes plus the header, metadata and tensor table.
pub struct GgufFile {
    bytes: Bytes,
    /// Format version (2 or 3).
    pub version: u32,
    /// Metadata in file order.
    pub metadata: Vec<(String, Value)>,
    /// Tensor table in file order.
    pub tensors: Vec<TensorInfo>,
    /// `general.alignment` (32 when absent).
    pub alignment: u64,
    /// Absolute offset of the data section.
    pub data_start: u64,
}

impl GgufFile {
    /// Maps and parses `path`.
    pub fn open(path: &Path) -> Result<GgufFile> {
        let file =
            std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
        // SAFETY: the map is read-only; like every reader of model files we assume no other
        // process truncates the file while it is mapped (it would fault, not corrupt memory
        // we write).
        let map = unsafe { memmap2::Mmap::map(&file) }
            .with_context(|| format!("mapping {}", path.display()))?;
        Self::parse(Bytes::Mapped(map)).with_context(|| format!("reading {}", path.display()))
    }

    /// Parses a static image (the built-in sample).
    pub fn from_static(bytes: &'static [u8]) -> Result<GgufFile> {
        Self::parse(Bytes::Static(bytes))
    }

    fn parse(bytes: Bytes) -> Result<GgufFile> {
        let mut r = Cursor { b: &bytes, at: 0 };
        let magic = r.take(4)?;
        ensure!(magic == b"GGUF", "not a GGUF file (magic {magic:?})");
        let version = r.u32()?;
        ensure!(
            version == 2 || version == 3,
            "GGUF version {version} is not supported (2 and 3 are)"
        );
        let n_tensors = r.u64()?;
        let n_kv = r.u64()?;
        // Every entry takes at least 8 bytes: bound counts by the file size before
        // allocating anything.
        let room = bytes.len() as u64 / 8;
        ensure!(
            n_tensors <= room && n_kv <= room,
            "implausible counts ({n_tensors} tensors, {n_kv} metadata entries)"
        );
        let mut metadata = Vec::with_capacity(n_kv as usize);
        for i in 0..n_kv {
            let key = r.string().with_context(|| format!("metadata entry {i}"))?;
            let ty = r.u32()?;
            let v = r
                .value(ty, 0)
                .with_context(|| format!("metadata value of {key:?}"))?;
            metadata.push((key, v));
        }
        let alignment = match metadata.iter().find(|(k, _)| k == "general.alignment") {
            None => 32,
            Some((_, v)) => match v.as_u64() {
                Some(a) if a > 0 && a.is_power_of_two() => a,
                _ => bail!("general.alignment = {v} is not a power of two"),
            },
        };
        let mut tensors = Vec::with_capacity(n_tensors as usize);
        for i in 0..n_tensors {
            let name = r.string().with_context(|| format!("tensor entry {i}"))?;
            let n_dims = r.u32()? as usize;
            ensure!(
                n_dims <= MAX_DIMS,
                "tensor {name:?}: {n_dims} dimensions (at most {MAX_DIMS})"
            );
            let mut dims = Vec::with_capacity(n_dims);
            for _ in 0..n_dims {
                dims.push(r.u64()?);
            }
            let ggml_type = r.u32()?;
            let offset = r.u64()?;
            tensors.push(TensorInfo {
                name,
                dims,
                ggml_type,
                offset,
            });
        }
        let end = r.at as u64;
        let data_start = end.div_ceil(alignment) * alignment;
        Ok(GgufFile {
            bytes,
            version,
            metadata,
            tensors,
            alignment,
            data_start,
        })
    }

    /// All bytes of the file.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// A metadata value by key.
    #[allow(dead_code)] // used by the tests and by later subcommands
    pub fn meta(&self, key: &str) -> Option<&Value> {
        self.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The tensor named `name`.
    #[allow(dead_code)]
    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        self.tensors.iter().find(|t| t.name == name)
    }

    /// `len` bytes of `t`'s data, checked against the file's end and the alignment.
    pub fn data(&self, t: &TensorInfo, len: usize) -> Result<&[u8]> {
        ensure!(
            t.offset.is_multiple_of(self.alignment),
            "data offset {} is not a multiple of the alignment {}",
            t.offset,
            self.alignment
        );
        let start = self
            .data_start
            .checked_add(t.offset)
            .context("data offset overflows")?;
        let end = start
            .checked_add(len as u64)
            .context("data end overflows")?;
        ensure!(
            end <= self.bytes.len() as u64,
            "data [{start}, {end}) runs past the end of the file ({} bytes): truncated",
            self.bytes.len()
        );
        Ok(&self.bytes[start as usize..end as usize])
    }

    /// Bytes from `t`'s data start to the next tensor's start (or the end of the file):
    /// an upper bound of its size, for types whose block size the registry does not know.
    pub fn span(&self, t: &TensorInfo) -> Option<u64> {
        let next = self
            .tensors
            .iter()
            .map(|o| o.offset)
            .filter(|&o| o > t.offset)
            .min()
            .map(|o| self.data_start + o)
            .unwrap_or(self.bytes.len() as u64);
        next.checked_sub(self.data_start.checked_add(t.offset)?)
    }
}

/// A bounds-checked little-endian reader.
struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: u64) -> Result<&'a [u8]> {
        let left = (self.b.len() - self.at) as u64;
        if n > left {
            bail!(
                "unexpected end of file at byte {} ({n} bytes needed, {left} left)",
                self.at
            );
        }
        let s = &self.b[self.at..self.at + n as usize];
        self.at += n as usize;
        Ok(s)
    }
    fn arr<const N: usize>(&mut self) -> Result<[u8; N]> {
        Ok(self.take(N as u64)?.try_into().expect("length checked"))
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.arr()?))
    }
    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.arr()?))
    }
    fn string(&mut self) -> Result<String> {
        let n = self.u64()?;
        let s = self.take(n)?;
        Ok(String::from_utf8_lossy(s).into_owned())
    }
    fn value(&mut self, ty: u32, depth: u32) -> Result<Value> {
        Ok(match ty {
            0 => Value::U8(self.arr::<1>()?[0]),
            1 => Value::I8(self.arr::<1>()?[0] as i8),
            2 => Value::U16(u16::from_le_bytes(self.arr()?)),
            3 => Value::I16(i16::from_le_bytes(self.arr()?)),
            4 => Value::U32(self.u32()?),
            5 => Value::I32(i32::from_le_bytes(self.arr()?)),
            6 => Value::F32(f32::from_le_bytes(self.arr()?)),
            7 => Value::Bool(self.arr::<1>()?[0] != 0),
            8 => Value::Str(self.string()?),
            9 => {
                ensure!(depth < MAX_DEPTH, "arrays nested too deeply");
                let elem = self.u32()?;
                let len = self.u64()?;
                // Each element takes at least one byte.
                ensure!(
                    len <= (self.b.len() - self.at) as u64,
                    "array of {len} elements runs past the end of the file"
                );
                let mut head = Vec::new();
                for i in 0..len {
                    let v = self.value(elem, depth + 1)?;
                    if i < ARRAY_HEAD as u64 {
                        head.push(v);
                    }
                }
                Value::Array { elem, len, head }
            }
            10 => Value::U64(self.u64()?),
            11 => Value::I64(i64::from_le_bytes(self.arr()?)),
            12 => Value::F64(f64::from_le_bytes(self.arr()?)),
            other => bail!("unknown metadata value type {other}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hand-assembled GGUF v3 image: one u32 metadata entry, one string array, and two
    /// tensors, one of them of type 42 (unknown to older readers).
    fn image() -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(b"GGUF");
        b.extend_from_slice(&3u32.to_le_bytes());
        b.extend_from_slice(&2u64.to_le_bytes()); // tensors
        b.extend_from_slice(&2u64.to_le_bytes()); // kv
        let s = |b: &mut Vec<u8>, s: &str| {
            b.extend_from_slice(&(s.len() as u64).to_le_bytes());
            b.extend_from_slice(s.as_bytes());
        };
        s(&mut b, "general.alignment");
        b.extend_from_slice(&4u32.to_le_bytes());
        b.extend_from_slice(&64u32.to_le_bytes());
        s(&mut b, "names");
        b.extend_from_slice(&9u32.to_le_bytes());
        b.extend_from_slice(&8u32.to_le_bytes());
        b.extend_from_slice(&2u64.to_le_bytes());
        s(&mut b, "a");
        s(&mut b, "b");
        // tensor "w": ne = [64, 3], type 42, offset 0
        s(&mut b, "w");
        b.extend_from_slice(&2u32.to_le_bytes());
        b.extend_from_slice(&64u64.to_le_bytes());
        b.extend_from_slice(&3u64.to_le_bytes());
        b.extend_from_slice(&42u32.to_le_bytes());
        b.extend_from_slice(&0u64.to_le_bytes());
        // tensor "v": ne = [4], type 0 (F32), offset 64
        s(&mut b, "v");
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&4u64.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&64u64.to_le_bytes());
        while b.len() % 64 != 0 {
            b.push(0);
        }
        b.extend(std::iter::repeat_n(7u8, 64 + 16));
        b
    }

    fn parse(v: Vec<u8>) -> Result<GgufFile> {
        GgufFile::from_static(Box::leak(v.into_boxed_slice()))
    }

    #[test]
    fn reads_header_metadata_and_tensors() {
        let f = parse(image()).unwrap();
        assert_eq!(f.version, 3);
        assert_eq!(f.alignment, 64);
        assert_eq!(f.data_start % 64, 0);
        assert_eq!(
            f.meta("names").unwrap().to_string(),
            "[string × 2] \"a\", \"b\""
        );
        let w = f.tensor("w").unwrap();
        assert_eq!((w.ggml_type, w.k(), w.rows()), (42, 64, Some(3)));
        assert_eq!(w.shape(), vec![3, 64]);
        assert_eq!(f.span(w), Some(64));
        let v = f.tensor("v").unwrap();
        assert_eq!(f.data(v, 16).unwrap(), &[7u8; 16]);
        assert!(f.data(v, 17).is_err(), "past the end");
    }

    #[test]
    fn refuses_malformed_images_without_panicking() {
        let good = image();
        // Every truncation of the header and tensor table (178 bytes) is an error, never a
        // panic.
        for n in 0..178 {
            assert!(parse(good[..n].to_vec()).is_err(), "truncated at {n}");
        }
        let mut bad = good.clone();
        bad[0] = b'X';
        assert!(parse(bad).is_err());
        let mut bad = good.clone();
        bad[4] = 1; // version 1
        assert!(parse(bad).is_err());
        let mut bad = good;
        bad[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(parse(bad).is_err());
    }
}
