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
//!
//! The file is untrusted: every count is checked against the bytes left before anything is
//! sized from it, allocations sized by the file are fallible, and every tensor's byte size
//! comes from ggml's type table ([`ggml_type`]) with checked arithmetic. What is refused,
//! and where ggml's reader and gguf-py's differ, is listed in `docs/gguf.md`; where they
//! differ this reader follows the stricter of the two.

use anyhow::{Context, Result, bail, ensure};
use std::collections::HashSet;
use std::fmt;
use std::path::Path;

/// The most dimensions ggml tensors have (GGML_MAX_DIMS).
pub const MAX_DIMS: usize = 4;
/// ggml's tensor name limit (GGML_MAX_NAME, counting the NUL): names have at most 63 bytes.
pub const MAX_NAME: usize = 64;
/// The fewest bytes a metadata entry takes: an empty key's length (8), its type (4) and a
/// one-byte value.
const MIN_KV_BYTES: u128 = 8 + 4 + 1;
/// The fewest bytes a tensor entry takes: name length (8), n_dims (4), type (4), offset (8).
const MIN_TENSOR_BYTES: u128 = 8 + 4 + 4 + 8;

/// One ggml type: its name, values per block and bytes per block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GgmlType {
    pub name: &'static str,
    pub block_values: u64,
    pub block_bytes: u64,
}

/// ggml's type table (`type_traits` in ggml.c; block structs in ggml-common.h): every type
/// id ggml defines, with its block size. Ids ggml removed (4, 5, 31–33, 36–38) and ids it
/// never had are `None`. The block types the library decodes come from its descriptors
/// (`ninfer::formats::gguf::blocks`), the others from the table here. gguf-py 0.19.0's
/// `GGML_QUANT_SIZES` agrees on every entry but Q8_1, which it sizes at 40 bytes (float d
/// and s of an older ggml); ggml's block is 36 bytes (two binary16 fields), and ggml is
/// what reads and writes these files.
pub fn ggml_type(ty: u32) -> Option<GgmlType> {
    if let Some(b) = ninfer::formats::gguf::blocks::from_ggml_type(ty) {
        // The block types the library decodes: their descriptors.
        return Some(GgmlType {
            name: b.name,
            block_values: b.values as u64,
            block_bytes: b.bytes as u64,
        });
    }
    let (name, block_values, block_bytes) = match ty {
        0 => ("F32", 1, 4),
        1 => ("F16", 1, 2),
        3 => ("Q4_1", 32, 20),
        7 => ("Q5_1", 32, 24),
        9 => ("Q8_1", 32, 36),
        15 => ("Q8_K", 256, 292),
        24 => ("I8", 1, 1),
        25 => ("I16", 1, 2),
        26 => ("I32", 1, 4),
        27 => ("I64", 1, 8),
        28 => ("F64", 1, 8),
        30 => ("BF16", 1, 2),
        34 => ("TQ1_0", 256, 54),
        35 => ("TQ2_0", 256, 66),
        39 => ("MXFP4", 32, 17),
        40 => ("NVFP4", 64, 36),
        41 => ("Q1_0", 128, 18),
        _ => return None,
    };
    Some(GgmlType {
        name,
        block_values,
        block_bytes,
    })
}

/// Pushes onto a vector sized by the file, failing instead of aborting when memory runs out.
fn push<T>(v: &mut Vec<T>, item: T) -> Result<()> {
    v.try_reserve(1)
        .map_err(|_| anyhow::anyhow!("out of memory reading the file's tables"))?;
    v.push(item);
    Ok(())
}

/// Inserts into a set sized by the file (fallible as [`push`]); false when already there.
fn insert(set: &mut HashSet<String>, key: &str) -> Result<bool> {
    if set.contains(key) {
        return Ok(false);
    }
    set.try_reserve(1)
        .map_err(|_| anyhow::anyhow!("out of memory reading the file's tables"))?;
    Ok(set.insert(key.to_owned()))
}

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
    /// The GGUF name of the value's type (`u32`, `string`, `array`, ...).
    pub fn type_name(&self) -> &'static str {
        value_type_name(match self {
            Value::U8(_) => 0,
            Value::I8(_) => 1,
            Value::U16(_) => 2,
            Value::I16(_) => 3,
            Value::U32(_) => 4,
            Value::I32(_) => 5,
            Value::F32(_) => 6,
            Value::Bool(_) => 7,
            Value::Str(_) => 8,
            Value::Array { .. } => 9,
            Value::U64(_) => 10,
            Value::I64(_) => 11,
            Value::F64(_) => 12,
        })
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
    /// The ggml type id (one of [`ggml_type`]'s).
    pub ggml_type: u32,
    /// Offset of the data relative to the data section.
    pub offset: u64,
    /// The data's exact size in bytes: elements / block values × block bytes (0 for a
    /// tensor with a zero dimension).
    pub nbytes: u64,
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

/// Opens `path` for reading, refusing what is not a regular file (a directory, a device)
/// with a message that says so rather than the mapping's errno.
pub fn regular_file(path: &Path) -> Result<std::fs::File> {
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let meta = file
        .metadata()
        .with_context(|| format!("reading {}", path.display()))?;
    if meta.is_dir() {
        bail!("{} is a directory", path.display());
    }
    if !meta.is_file() {
        bail!("{} is not a regular file", path.display());
    }
    Ok(file)
}

/// A 4-byte magic as text when it is printable ASCII, and in hex: `"GGUX" (0x47475558)`.
fn magic_text(m: &[u8]) -> String {
    let hex: String = m.iter().map(|b| format!("{b:02x}")).collect();
    if m.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
        format!("{:?} (0x{hex})", String::from_utf8_lossy(m))
    } else {
        format!("0x{hex}")
    }
}

impl GgufFile {
    /// Maps and parses `path`.
    pub fn open(path: &Path) -> Result<GgufFile> {
        let file = regular_file(path)?;
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

    /// Parses the bytes of a GGUF file (mapped, static, or an anonymous map of any bytes:
    /// the fuzz target's entry point). Every size and offset is checked before use.
    pub fn parse(bytes: Bytes) -> Result<GgufFile> {
        let mut r = Cursor { b: &bytes, at: 0 };
        let magic = r.take(4)?;
        ensure!(
            magic == b"GGUF",
            "not a GGUF file (magic {}, \"GGUF\" expected)",
            magic_text(magic)
        );
        let version = r.u32()?;
        ensure!(
            version == 2 || version == 3,
            "GGUF version {version} is not supported (2 and 3 are)"
        );
        let n_tensors = r.u64()?;
        let n_kv = r.u64()?;
        // Bound the counts by the bytes left before anything is sized from them.
        let left = r.left() as u128;
        let needed = n_kv as u128 * MIN_KV_BYTES + n_tensors as u128 * MIN_TENSOR_BYTES;
        ensure!(
            needed <= left,
            "the header claims {n_tensors} tensors and {n_kv} metadata entries: they need at \
             least {needed} bytes, {left} are left (truncated or corrupt)"
        );
        let mut metadata = Vec::new();
        let mut keys = HashSet::new();
        for i in 0..n_kv {
            let key = r.string().with_context(|| format!("metadata entry {i}"))?;
            ensure!(!key.is_empty(), "metadata entry {i} has an empty key");
            ensure!(
                insert(&mut keys, &key)?,
                "duplicate metadata key {key:?} (entry {i} repeats it)"
            );
            let ty = r.u32()?;
            let v = r
                .value(ty, 0)
                .with_context(|| format!("metadata value of {key:?}"))?;
            push(&mut metadata, (key, v))?;
        }
        let alignment = match metadata.iter().find(|(k, _)| k == "general.alignment") {
            None => 32,
            Some((_, Value::U32(a))) if *a > 0 && a.is_power_of_two() => u64::from(*a),
            Some((_, Value::U32(a))) => bail!("general.alignment = {a} is not a power of two"),
            Some((_, v)) => bail!(
                "general.alignment must be a u32 (it is the {} {v})",
                v.type_name()
            ),
        };
        let mut tensors = Vec::new();
        let mut names = HashSet::new();
        for i in 0..n_tensors {
            let name = r.string().with_context(|| format!("tensor entry {i}"))?;
            ensure!(
                name.len() < MAX_NAME,
                "tensor entry {i}: name of {} bytes (ggml's limit is {})",
                name.len(),
                MAX_NAME - 1
            );
            ensure!(
                insert(&mut names, &name)?,
                "duplicate tensor name {name:?} (tensor entry {i} repeats it)"
            );
            let info = r
                .tensor_info(name.clone())
                .with_context(|| format!("tensor {name:?}"))?;
            push(&mut tensors, info)?;
        }
        let end = r.at as u64;
        let data_start = end.div_ceil(alignment) * alignment;
        // As ggml: each tensor's data starts where the previous one's ends, padded to the
        // alignment. Aliased, overlapping or reordered data is refused here.
        let mut expected = 0u64;
        let mut previous: Option<&TensorInfo> = None;
        for t in &tensors {
            // A tensor without values (a zero dimension) takes no bytes, as in ggml: data
            // left where it would be is the likely cause of a mismatch after it.
            let empty_before = match previous {
                Some(p) if p.nbytes == 0 => format!(
                    "; the tensor before it, {:?}, has no values (ne {:?}) and so takes no \
                     bytes",
                    p.name, p.dims
                ),
                _ => String::new(),
            };
            ensure!(
                t.offset == expected,
                "tensor {:?}: data offset {}, expected {expected} (each tensor's data must \
                 follow the previous one's, padded to the alignment {alignment}: overlapping \
                 or aliased tensors are refused{empty_before})",
                t.name,
                t.offset
            );
            previous = Some(t);
            expected = t
                .nbytes
                .checked_next_multiple_of(alignment)
                .and_then(|n| n.checked_add(expected))
                .with_context(|| format!("tensor {:?}: data offsets overflow", t.name))?;
        }
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

    /// `t`'s data ([`TensorInfo::nbytes`] bytes), checked against the file's end.
    pub fn data(&self, t: &TensorInfo) -> Result<&[u8]> {
        let start = self
            .data_start
            .checked_add(t.offset)
            .context("data offset overflows")?;
        let end = start.checked_add(t.nbytes).context("data end overflows")?;
        ensure!(
            end <= self.bytes.len() as u64,
            "data [{start}, {end}) runs past the end of the file ({} bytes): truncated",
            self.bytes.len()
        );
        Ok(&self.bytes[start as usize..end as usize])
    }
}

/// A bounds-checked little-endian reader.
struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn left(&self) -> usize {
        self.b.len() - self.at
    }
    fn take(&mut self, n: u64) -> Result<&'a [u8]> {
        let left = self.left() as u64;
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
    /// A GGUF string (invalid UTF-8 replaced), its buffer allocated fallibly.
    fn string(&mut self) -> Result<String> {
        let n = self.u64()?;
        let s = self.take(n)?;
        let oom = |_| anyhow::anyhow!("out of memory for a string of {n} bytes");
        let mut out = String::new();
        out.try_reserve_exact(s.len()).map_err(oom)?;
        for chunk in s.utf8_chunks() {
            out.try_reserve(chunk.valid().len() + 3).map_err(oom)?;
            out.push_str(chunk.valid());
            if !chunk.invalid().is_empty() {
                out.push(char::REPLACEMENT_CHARACTER);
            }
        }
        Ok(out)
    }
    /// The rest of a tensor entry after its name: dimensions, type, offset; the byte size
    /// from ggml's type table.
    fn tensor_info(&mut self, name: String) -> Result<TensorInfo> {
        let n_dims = self.u32()?;
        ensure!(
            n_dims as usize <= MAX_DIMS,
            "{n_dims} dimensions (at most {MAX_DIMS})"
        );
        let mut dims = Vec::with_capacity(n_dims as usize);
        for j in 0..n_dims {
            let d = self.u64()?;
            // ggml reads dimensions as int64 and refuses negative ones.
            ensure!(d <= i64::MAX as u64, "dimension {j} = {d} exceeds int64");
            dims.push(d);
        }
        let type_id = self.u32()?;
        let offset = self.u64()?;
        let ty = ggml_type(type_id).with_context(|| {
            format!("ggml type id {type_id} is not a ggml type: the file is malformed")
        })?;
        let elements = dims
            .iter()
            .try_fold(1u64, |a, &d| a.checked_mul(d))
            .filter(|&n| n < i64::MAX as u64)
            .with_context(|| format!("shape {dims:?}: the element count does not fit in int64"))?;
        let k = dims.first().copied().unwrap_or(1);
        ensure!(
            k % ty.block_values == 0,
            "{}: K = {k} (ne[0]) is not a multiple of the {}-value block",
            ty.name,
            ty.block_values
        );
        let nbytes = (elements / ty.block_values)
            .checked_mul(ty.block_bytes)
            .with_context(|| format!("shape {dims:?} of {}: the byte size overflows", ty.name))?;
        Ok(TensorInfo {
            name,
            dims,
            ggml_type: type_id,
            offset,
            nbytes,
        })
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
                    len <= self.left() as u64,
                    "array of {len} elements runs past the end of the file"
                );
                let mut head = Vec::with_capacity(ARRAY_HEAD.min(len as usize));
                for i in 0..len {
                    let v = self
                        .value(elem, depth + 1)
                        .with_context(|| format!("array element {i}"))?;
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

/// A GGUF v3 image builder for tests: metadata entries as raw (key, type, value bytes) and
/// tensors laid out as ggml lays them out (each at the previous one's end, padded to the
/// alignment) unless an offset is given; data bytes all `fill`.
#[cfg(test)]
pub(crate) mod testing {
    pub fn string(b: &mut Vec<u8>, s: &str) {
        b.extend_from_slice(&(s.len() as u64).to_le_bytes());
        b.extend_from_slice(s.as_bytes());
    }

    /// A tensor entry: name, ne, ggml type, offset (None: the packed offset), data bytes.
    pub type Entry = (String, Vec<u64>, u32, Option<u64>, u64);

    pub struct Image {
        pub kv: Vec<(String, u32, Vec<u8>)>,
        pub tensors: Vec<Entry>,
        pub alignment: u64,
        pub fill: u8,
    }

    impl Default for Image {
        fn default() -> Image {
            Image {
                kv: Vec::new(),
                tensors: Vec::new(),
                alignment: 32,
                fill: 0,
            }
        }
    }

    impl Image {
        pub fn kv(mut self, key: &str, ty: u32, value: &[u8]) -> Image {
            self.kv.push((key.into(), ty, value.into()));
            self
        }

        /// A tensor with `len` data bytes (hand-computed by the caller).
        pub fn tensor(mut self, name: &str, ne: &[u64], ty: u32, len: u64) -> Image {
            self.tensors.push((name.into(), ne.into(), ty, None, len));
            self
        }

        /// A tensor at an explicit data offset.
        pub fn tensor_at(mut self, name: &str, ne: &[u64], ty: u32, len: u64, at: u64) -> Image {
            self.tensors
                .push((name.into(), ne.into(), ty, Some(at), len));
            self
        }

        pub fn bytes(&self) -> Vec<u8> {
            let mut b = Vec::new();
            b.extend_from_slice(b"GGUF");
            b.extend_from_slice(&3u32.to_le_bytes());
            b.extend_from_slice(&(self.tensors.len() as u64).to_le_bytes());
            b.extend_from_slice(&(self.kv.len() as u64).to_le_bytes());
            for (k, ty, v) in &self.kv {
                string(&mut b, k);
                b.extend_from_slice(&ty.to_le_bytes());
                b.extend_from_slice(v);
            }
            let mut at = 0u64;
            let mut end = 0u64;
            for (name, ne, ty, offset, len) in &self.tensors {
                string(&mut b, name);
                b.extend_from_slice(&(ne.len() as u32).to_le_bytes());
                for d in ne {
                    b.extend_from_slice(&d.to_le_bytes());
                }
                b.extend_from_slice(&ty.to_le_bytes());
                let o = offset.unwrap_or(at);
                b.extend_from_slice(&o.to_le_bytes());
                at = o + len.div_ceil(self.alignment) * self.alignment;
                end = end.max(o + len);
            }
            while !(b.len() as u64).is_multiple_of(self.alignment) {
                b.push(0);
            }
            b.resize(b.len() + end as usize, self.fill);
            b
        }

        pub fn leak(&self) -> &'static [u8] {
            Box::leak(self.bytes().into_boxed_slice())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::Image;
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
        assert_eq!((w.nbytes, f.data(w).unwrap().len()), (54, 54));
        let v = f.tensor("v").unwrap();
        assert_eq!(f.data(v).unwrap(), &[7u8; 16]);
        let mut cut = image();
        cut.pop();
        let f = parse(cut).unwrap();
        let e = f.data(f.tensor("v").unwrap()).unwrap_err();
        assert!(format!("{e:#}").contains("truncated"), "{e:#}");
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

    fn refusal(img: &Image) -> String {
        match parse(img.bytes()) {
            Ok(_) => panic!("accepted"),
            Err(e) => format!("{e:#}"),
        }
    }

    const U32: u32 = 4;

    #[test]
    fn counts_are_checked_against_the_bytes_left() {
        // 10 tensors of 1 F32 value: a valid image, then its counts patched.
        let mut img = Image::default();
        for i in 0..10 {
            img = img.tensor(&format!("t{i}"), &[1], 0, 4);
        }
        let good = img.bytes();
        assert!(parse(good.clone()).is_ok());
        // A count the file cannot hold (but below its size / 8, the old bound): refused
        // from the header, before any table is sized from it.
        for (at, count) in [(8, good.len() as u64 / 8), (16, good.len() as u64 / 9)] {
            let mut bad = good.clone();
            bad[at..at + 8].copy_from_slice(&count.to_le_bytes());
            let e = format!("{:#}", parse(bad).err().expect("refused"));
            assert!(e.contains("the header claims") && e.contains("left"), "{e}");
        }
        for count in [u64::MAX, 1 << 60] {
            let mut bad = good.clone();
            bad[16..24].copy_from_slice(&count.to_le_bytes());
            assert!(refusal_bytes(bad).contains("the header claims"));
        }
    }

    fn refusal_bytes(b: Vec<u8>) -> String {
        format!("{:#}", parse(b).err().expect("refused"))
    }

    #[test]
    fn empty_and_duplicate_keys_are_refused_by_name() {
        let e = refusal(&Image::default().kv("", U32, &1u32.to_le_bytes()));
        assert!(e.contains("metadata entry 0 has an empty key"), "{e}");
        let e = refusal(
            &Image::default()
                .kv("general.name", U32, &1u32.to_le_bytes())
                .kv("a", U32, &1u32.to_le_bytes())
                .kv("general.name", U32, &2u32.to_le_bytes()),
        );
        assert!(e.contains("duplicate metadata key \"general.name\""), "{e}");
    }

    #[test]
    fn general_alignment_must_be_a_power_of_two_u32() {
        let ok = Image::default()
            .kv("general.alignment", U32, &64u32.to_le_bytes())
            .tensor("t", &[1], 0, 4);
        assert_eq!(parse(ok.bytes()).unwrap().alignment, 64);
        // u64 (10), i32 (5), u16 (2) 32: the right number in the wrong type.
        for (ty, v) in [
            (10u32, 32u64.to_le_bytes().to_vec()),
            (5, 32i32.to_le_bytes().to_vec()),
            (2, 32u16.to_le_bytes().to_vec()),
        ] {
            let e = refusal(&Image::default().kv("general.alignment", ty, &v));
            assert!(e.contains("general.alignment must be a u32"), "{e}");
        }
        for a in [0u32, 48] {
            let e = refusal(&Image::default().kv("general.alignment", U32, &a.to_le_bytes()));
            assert!(e.contains("not a power of two"), "{e}");
        }
    }

    #[test]
    fn duplicate_and_overlong_tensor_names_are_refused() {
        let e = refusal(
            &Image::default()
                .tensor("w", &[1], 0, 4)
                .tensor("b", &[1], 0, 4)
                .tensor("w", &[1], 0, 4),
        );
        assert!(e.contains("duplicate tensor name \"w\""), "{e}");
        let long = "x".repeat(64);
        let e = refusal(&Image::default().tensor(&long, &[1], 0, 4));
        assert!(e.contains("name of 64 bytes"), "{e}");
        assert!(parse(Image::default().tensor(&long[1..], &[1], 0, 4).bytes()).is_ok());
    }

    #[test]
    fn unknown_types_and_impossible_shapes_are_refused_by_tensor() {
        for ty in [4u32, 5, 31, 36, 43, 9999] {
            let e = refusal(&Image::default().tensor("w", &[32], ty, 0));
            assert!(
                e.contains("tensor \"w\"") && e.contains("not a ggml type"),
                "{e}"
            );
        }
        // K not a multiple of the block (Q4_1: 32 values).
        let e = refusal(&Image::default().tensor("q", &[48, 2], 3, 0));
        assert!(
            e.contains("tensor \"q\"") && e.contains("Q4_1: K = 48"),
            "{e}"
        );
        // A dimension ggml reads as a negative int64, an element count beyond int64.
        let e = refusal(&Image::default().tensor("n", &[1 << 63], 24, 0));
        assert!(e.contains("exceeds int64"), "{e}");
        let e = refusal(&Image::default().tensor("n", &[1 << 32, 1 << 31], 24, 0));
        assert!(e.contains("does not fit in int64"), "{e}");
        let e = refusal(&Image::default().tensor("n", &[1, 1, 1, 1, 1], 0, 4));
        assert!(e.contains("5 dimensions"), "{e}");
    }

    #[test]
    fn every_tensor_is_sized_by_ggml_types_table() {
        // One tensor per type; sizes worked by hand from the block table.
        let cases: [(u32, &[u64], u64); 8] = [
            (24, &[100, 3], 300), // I8
            (27, &[5], 40),       // I64
            (3, &[64, 2], 80),    // Q4_1: 4 blocks × 20
            (9, &[32], 36),       // Q8_1 (ggml's 36-byte block)
            (35, &[256, 2], 132), // TQ2_0
            (39, &[64], 34),      // MXFP4
            (41, &[128, 3], 54),  // Q1_0
            (1, &[7, 0], 0),      // F16 with a zero dimension
        ];
        let mut img = Image::default();
        for (i, (ty, ne, len)) in cases.iter().enumerate() {
            img = img.tensor(&format!("t{i}"), ne, *ty, *len);
        }
        let f = parse(img.bytes()).unwrap();
        for (t, (_, _, len)) in f.tensors.iter().zip(&cases) {
            assert_eq!(t.nbytes, *len, "{}", t.name);
            assert_eq!(f.data(t).unwrap().len() as u64, *len);
        }
    }

    #[test]
    fn aliased_overlapping_or_gapped_data_is_refused() {
        // Two names for the same bytes.
        let e = refusal(
            &Image::default()
                .tensor("a", &[8], 0, 32)
                .tensor_at("b", &[8], 0, 32, 0),
        );
        assert!(
            e.contains("tensor \"b\": data offset 0, expected 32"),
            "{e}"
        );
        // Overlap, a gap, and out-of-order.
        for at in [16u64, 64, 96] {
            let e =
                refusal(
                    &Image::default()
                        .tensor("a", &[8], 0, 32)
                        .tensor_at("b", &[8], 0, 32, at),
                );
            assert!(e.contains("expected 32"), "{e}");
        }
        // 5000 aliases of one tensor: refused at once, before any data is read.
        let mut img = Image::default().tensor("w", &[1 << 20], 0, 4 << 20);
        for i in 0..5000 {
            img = img.tensor_at(&format!("alias{i}"), &[1 << 20], 0, 4 << 20, 0);
        }
        let t0 = std::time::Instant::now();
        let e = refusal(&img);
        assert!(e.contains("tensor \"alias0\""), "{e}");
        assert!(t0.elapsed().as_secs() < 5);
        // Empty tensors take no bytes: the next tensor starts at the same offset.
        let f = parse(
            Image::default()
                .tensor("e", &[0, 4], 8, 0)
                .tensor("a", &[8], 0, 32)
                .bytes(),
        )
        .unwrap();
        assert_eq!((f.tensors[0].offset, f.tensors[1].offset), (0, 0));
        // Empty tensors of a block type (ne[0] = 0) too, wherever they stand.
        let f = parse(
            Image::default()
                .tensor("a", &[32, 2], 8, 68)
                .tensor("e", &[0, 54], 8, 0)
                .tensor("b", &[32], 8, 34)
                .bytes(),
        )
        .unwrap();
        let offsets: Vec<u64> = f.tensors.iter().map(|t| t.offset).collect();
        assert_eq!(offsets, [0, 96, 96]);
        // Data left after an empty tensor (a writer that reserved bytes for it): refused as
        // ggml refuses it, with the empty tensor named as the likely cause.
        let e = refusal(
            &Image::default()
                .tensor_at("e", &[0, 54], 8, 0, 0)
                .tensor_at("b", &[32], 8, 34, 1728),
        );
        assert!(
            e.contains("tensor \"b\": data offset 1728, expected 0")
                && e.contains("the tensor before it, \"e\", has no values (ne [0, 54])"),
            "{e}"
        );
    }

    #[test]
    fn the_type_table_is_ggml_s() {
        // gguf-py 0.19.0's GGML_QUANT_SIZES (values, bytes) for every type it knows, with
        // Q8_1 at ggml's 36 bytes (gguf-py says 40: float d and s of an older ggml), and
        // Q2_0 (42) from ggml-common.h.
        let table: [(u32, u64, u64); 35] = [
            (0, 1, 4),
            (1, 1, 2),
            (2, 32, 18),
            (3, 32, 20),
            (6, 32, 22),
            (7, 32, 24),
            (8, 32, 34),
            (9, 32, 36),
            (10, 256, 84),
            (11, 256, 110),
            (12, 256, 144),
            (13, 256, 176),
            (14, 256, 210),
            (15, 256, 292),
            (16, 256, 66),
            (17, 256, 74),
            (18, 256, 98),
            (19, 256, 50),
            (20, 32, 18),
            (21, 256, 110),
            (22, 256, 82),
            (23, 256, 136),
            (24, 1, 1),
            (25, 1, 2),
            (26, 1, 4),
            (27, 1, 8),
            (28, 1, 8),
            (29, 256, 56),
            (30, 1, 2),
            (34, 256, 54),
            (35, 256, 66),
            (39, 32, 17),
            (40, 64, 36),
            (41, 128, 18),
            (42, 64, 18),
        ];
        for id in 0..256u32 {
            let want = table.iter().find(|e| e.0 == id).map(|e| (e.1, e.2));
            let got = ggml_type(id).map(|t| (t.block_values, t.block_bytes));
            assert_eq!(got, want, "type {id}");
        }
    }
}
