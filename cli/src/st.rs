//! ninfer-encoded tensors in a safetensors file (docs/safetensors.md).
//!
//! A logical `[N, K]` tensor `NAME` of a registered format is stored as:
//! - one 1-D `U8` safetensors tensor `NAME.<plane>` per plane of the format's layout whose
//!   byte length is not 0 (plane names from `ninfer::layouts::plane_names`: `codes`,
//!   `high_bits`, `scales`, `divisors`, `rows`), holding the plane's bytes exactly;
//! - a `__metadata__` entry `ninfer.NAME` = `format=F;layout=L;shape=N,K`, the only source
//!   of the format, layout and shape (never guessed from lengths);
//! - optionally `ninfer-provenance.NAME` = `method=...;key=value...` (how it was made;
//!   free-text values escaped by [`provenance_value`]);
//! - and the file-level entry `ninfer` = `safetensors_v1`.
//!
//! Any other tensor is plain safetensors data.

use anyhow::{Context, Result, bail};
use ninfer::{Format, Layout, WeightView, layouts};
use safetensors::{Dtype, SafeTensors, tensor::TensorView};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Range;
use std::path::Path;

/// The file-level metadata key and its value.
pub const FILE_KEY: &str = "ninfer";
/// The value of [`FILE_KEY`]: this container's version.
pub const FILE_VERSION: &str = "safetensors_v1";
/// Prefix of a tensor's descriptor key.
pub const DESCRIPTOR_PREFIX: &str = "ninfer.";
/// Prefix of a tensor's provenance key.
pub const PROVENANCE_PREFIX: &str = "ninfer-provenance.";

/// A free-text value (a path, a tensor name) as it is written into a provenance record
/// `key=value;key=value`: `%` becomes `%25`, `;` becomes `%3B` and `=` becomes `%3D`, so
/// the record still splits at every `;` and at the first `=` of each field; every other
/// character is kept. Undo by replacing `%3B`, `%3D`, then `%25` (docs/safetensors.md).
pub fn provenance_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '%' => out.push_str("%25"),
            ';' => out.push_str("%3B"),
            '=' => out.push_str("%3D"),
            _ => out.push(c),
        }
    }
    out
}

/// The descriptor of one encoded tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Descriptor {
    pub format: Format,
    pub layout: Layout,
    pub rows: usize,
    pub cols: usize,
}

impl Descriptor {
    /// `format=F;layout=L;shape=N,K`.
    pub fn text(&self) -> String {
        format!(
            "format={};layout={};shape={},{}",
            self.format,
            self.layout.name(),
            self.rows,
            self.cols
        )
    }

    /// Parses the strict form written by [`Descriptor::text`]: exactly the keys `format`,
    /// `layout`, `shape` in this order, a registered compatible pair, a positive shape.
    pub fn parse(s: &str) -> Result<Descriptor> {
        let parts: Vec<&str> = s.split(';').collect();
        let field = |i: usize, key: &str| -> Result<&str> {
            match parts.get(i).and_then(|p| p.split_once('=')) {
                Some((k, v)) if k == key => Ok(v),
                _ => bail!("descriptor {s:?}: expected `format=F;layout=L;shape=N,K`"),
            }
        };
        if parts.len() != 3 {
            bail!("descriptor {s:?}: expected `format=F;layout=L;shape=N,K`");
        }
        let format = Format::from_name(field(0, "format")?)
            .map_err(|e| anyhow::anyhow!("descriptor {s:?}: {e}"))?;
        let layout = Layout::from_name(field(1, "layout")?)
            .map_err(|e| anyhow::anyhow!("descriptor {s:?}: {e}"))?;
        ninfer::registry::check_compatible(format, layout)
            .map_err(|e| anyhow::anyhow!("descriptor {s:?}: {e}"))?;
        let dims: Vec<&str> = field(2, "shape")?.split(',').collect();
        let parse = |d: &str| -> Result<usize> {
            match d.parse::<usize>() {
                Ok(n) if n > 0 && !d.starts_with('+') => Ok(n),
                _ => bail!("descriptor {s:?}: shape needs two positive integers N,K"),
            }
        };
        let [n, k] = dims[..] else {
            bail!("descriptor {s:?}: shape needs two positive integers N,K");
        };
        Ok(Descriptor {
            format,
            layout,
            rows: parse(n)?,
            cols: parse(k)?,
        })
    }

    /// `[N, K]`.
    pub fn shape_text(&self) -> String {
        format!("[{}, {}]", self.rows, self.cols)
    }
}

/// A plain safetensors tensor.
pub struct Plain {
    pub name: String,
    pub dtype: Dtype,
    pub shape: Vec<usize>,
    range: Range<usize>,
}

/// An encoded tensor: its descriptor and its planes' byte ranges in the file.
pub struct Encoded {
    pub name: String,
    pub desc: Descriptor,
    planes: [Range<usize>; 3],
    pub provenance: Option<String>,
}

/// One entry of a file: an encoded tensor, plain data, or an encoded tensor whose
/// descriptor or planes are malformed (with the reason).
pub enum Entry {
    Encoded(Encoded),
    Plain(Plain),
    Broken { name: String, message: String },
}

impl Entry {
    pub fn name(&self) -> &str {
        match self {
            Entry::Encoded(e) => &e.name,
            Entry::Plain(p) => &p.name,
            Entry::Broken { name, .. } => name,
        }
    }
}

/// A mapped safetensors file, its metadata and its entries (sorted by name).
pub struct StFile {
    map: memmap2::Mmap,
    pub metadata: BTreeMap<String, String>,
    pub entries: Vec<Entry>,
}

/// Whether `path` looks like a safetensors file: its extension, or (without a GGUF magic)
/// an 8-byte header length followed by `{`.
pub fn is_safetensors(path: &Path) -> bool {
    if path.extension().is_some_and(|e| e == "safetensors") {
        return true;
    }
    let mut head = [0u8; 9];
    match std::fs::File::open(path).and_then(|mut f| {
        use std::io::Read;
        f.read_exact(&mut head)
    }) {
        Ok(()) => &head[..4] != b"GGUF" && head[8] == b'{',
        Err(_) => false,
    }
}

/// The safetensors dtype's name as the format writes it (`F32`, `BF16`, ...).
pub fn dtype_name(d: Dtype) -> String {
    format!("{d:?}")
}

/// Where the data of the header's tensors ends (8 + header length + the largest end
/// offset), when the header parses as JSON.
fn data_end(b: &[u8]) -> Option<u64> {
    let n = u64::from_le_bytes(b.get(..8)?.try_into().ok()?);
    let header = b.get(8..8usize.checked_add(usize::try_from(n).ok()?)?)?;
    let v: serde_json::Value = serde_json::from_slice(header).ok()?;
    let end = v
        .as_object()?
        .iter()
        .filter(|(k, _)| *k != "__metadata__")
        .filter_map(|(_, t)| t.get("data_offsets")?.get(1)?.as_u64())
        .max()
        .unwrap_or(0);
    Some((8 + n).saturating_add(end))
}

impl StFile {
    pub fn open(path: &Path) -> Result<StFile> {
        let file = crate::gguf::regular_file(path)?;
        // SAFETY: read-only map; as every model reader, we assume no other process
        // truncates the file while it is mapped.
        let map = unsafe { memmap2::Mmap::map(&file) }
            .with_context(|| format!("mapping {}", path.display()))?;
        Self::parse(map).with_context(|| format!("reading {}", path.display()))
    }

    /// Parses the bytes of a safetensors file (mapped from disk, or an anonymous map of any
    /// bytes: the fuzz target's entry point).
    pub fn parse(map: memmap2::Mmap) -> Result<StFile> {
        // A header or data running past the end of the file: say it is truncated.
        if let Some(h) = map.get(..8) {
            let n = u64::from_le_bytes(h.try_into().expect("8 bytes"));
            let len = map.len() as u64;
            if n.saturating_add(8) > len && n <= 100_000_000 {
                bail!(
                    "truncated safetensors file: its header is {n} bytes, the file has {len} bytes"
                );
            }
        }
        if let Some(end) = data_end(&map)
            && end > map.len() as u64
        {
            bail!(
                "truncated safetensors file: the header's tensors end at byte {end}, the file has {} bytes",
                map.len()
            );
        }
        let (n, meta) = SafeTensors::read_metadata(&map)
            .map_err(|e| anyhow::anyhow!("not a safetensors file: {e}"))?;
        if let Some(dup) = repeated_key(&map[8..8 + n]) {
            bail!("safetensors: the header repeats {dup}");
        }
        // Check the whole file once (offsets inside the data, no overlaps).
        SafeTensors::deserialize(&map).map_err(|e| anyhow::anyhow!("safetensors: {e}"))?;
        let base = 8 + n;
        let metadata: BTreeMap<String, String> = meta
            .metadata()
            .clone()
            .unwrap_or_default()
            .into_iter()
            .collect();
        match metadata.get(FILE_KEY) {
            Some(v) if v != FILE_VERSION => bail!(
                "container version {v:?} (`{FILE_KEY}` in the metadata): this build reads {FILE_VERSION:?}"
            ),
            _ => {}
        }
        let infos: HashMap<String, _> = meta
            .tensors()
            .into_iter()
            .map(|(k, v)| {
                let r = base + v.data_offsets.0..base + v.data_offsets.1;
                (k, (v.dtype, v.shape.clone(), r))
            })
            .collect();
        let mut claimed: HashSet<String> = HashSet::new();
        let mut entries = Vec::new();
        for (key, value) in &metadata {
            let Some(name) = key.strip_prefix(DESCRIPTOR_PREFIX) else {
                continue;
            };
            let provenance = metadata.get(&format!("{PROVENANCE_PREFIX}{name}")).cloned();
            let entry = match Descriptor::parse(value) {
                Err(e) => Entry::Broken {
                    name: name.to_owned(),
                    message: format!("{e:#}"),
                },
                Ok(desc) => match planes_of(name, &desc, &infos, &mut claimed) {
                    Ok(planes) => Entry::Encoded(Encoded {
                        name: name.to_owned(),
                        desc,
                        planes,
                        provenance,
                    }),
                    Err(e) => Entry::Broken {
                        name: name.to_owned(),
                        message: format!("{e:#}"),
                    },
                },
            };
            entries.push(entry);
        }
        for (name, (dtype, shape, range)) in &infos {
            if !claimed.contains(name) {
                entries.push(Entry::Plain(Plain {
                    name: name.clone(),
                    dtype: *dtype,
                    shape: shape.clone(),
                    range: range.clone(),
                }));
            }
        }
        entries.sort_by(|a, b| a.name().cmp(b.name()));
        Ok(StFile {
            map,
            metadata,
            entries,
        })
    }

    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// The raw bytes of a plain tensor.
    pub fn data(&self, p: &Plain) -> &[u8] {
        &self.map[p.range.clone()]
    }

    /// A checked view of an encoded tensor's planes.
    pub fn view(&self, e: &Encoded) -> Result<WeightView<'_>, ninfer::Error> {
        let d = &e.desc;
        WeightView::new(
            d.format,
            d.layout,
            d.rows,
            d.cols,
            e.planes.clone().map(|r| &self.map[r]),
        )
    }

    /// Total plane bytes of an encoded tensor.
    pub fn plane_bytes(e: &Encoded) -> usize {
        e.planes.iter().map(|r| r.len()).sum()
    }
}

type Infos = HashMap<String, (Dtype, Vec<usize>, Range<usize>)>;

/// The first key a safetensors JSON header repeats, described: a tensor name, the
/// `__metadata__` entry, or a key inside `__metadata__` (JSON readers, the `safetensors`
/// crate's included, keep the last one silently). `None` when every key is unique, or when
/// the header is not a JSON object (the `safetensors` crate reports that).
fn repeated_key(header: &[u8]) -> Option<String> {
    use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
    use std::fmt;

    /// Visits a JSON object: the first repeated key; `__metadata__`'s value is visited
    /// by `Keys(false)` when `top` is set.
    struct Keys(bool);
    impl<'de> Visitor<'de> for Keys {
        type Value = Option<String>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
            let mut seen = HashSet::new();
            let mut dup = None;
            while let Some(k) = m.next_key::<String>()? {
                if self.0 && k == "__metadata__" {
                    if let Some(d) = m.next_value_seed(Keys(false))? {
                        dup.get_or_insert(format!("the __metadata__ key {d}"));
                    }
                } else {
                    m.next_value::<IgnoredAny>()?;
                }
                if dup.is_none() && !seen.insert(k.clone()) {
                    dup = Some(match (self.0, k.as_str()) {
                        (true, "__metadata__") => "the __metadata__ entry".to_owned(),
                        (true, _) => format!("the tensor name {k:?}"),
                        (false, _) => format!("{k:?}"),
                    });
                }
            }
            Ok(dup)
        }
    }
    impl<'de> DeserializeSeed<'de> for Keys {
        type Value = Option<String>;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_map(self)
        }
    }
    let mut de = serde_json::Deserializer::from_slice(header);
    Keys(true).deserialize(&mut de).ok().flatten()
}

/// The byte ranges of `name`'s planes: every plane the layout names must be a 1-D U8
/// tensor `name.<plane>`, absent only when its size is 0.
fn planes_of(
    name: &str,
    d: &Descriptor,
    infos: &Infos,
    claimed: &mut HashSet<String>,
) -> Result<[Range<usize>; 3]> {
    let sizes = layouts::plane_sizes(d.format, d.layout, d.rows, d.cols)
        .map_err(|e| anyhow::anyhow!("{}: {e}", e.status().name()))?;
    let mut out = [0..0, 0..0, 0..0];
    for (i, plane) in layouts::plane_names(d.layout).iter().enumerate() {
        let tname = format!("{name}.{plane}");
        let is_divisors = d.layout == Layout::BlockScaleK16_M128x4_V1 && *plane == "divisors";
        match infos.get(&tname) {
            None if sizes[i] == 0 && !is_divisors => {}
            None => bail!("plane tensor {tname:?} is missing"),
            Some((dtype, shape, range)) => {
                if *dtype != Dtype::U8 || shape.len() != 1 {
                    bail!("plane tensor {tname:?} is {dtype:?} {shape:?}: expected 1-D U8 bytes");
                }
                out[i] = range.clone();
                claimed.insert(tname);
            }
        }
    }
    Ok(out)
}

/// An output tensor: name, dtype, shape, bytes (owned or borrowed from the input).
type OutTensor<'a> = (String, Dtype, Vec<usize>, std::borrow::Cow<'a, [u8]>);

/// A safetensors file being written: tensors (owned or borrowed bytes) and metadata.
#[derive(Default)]
pub struct Writer<'a> {
    tensors: Vec<OutTensor<'a>>,
    names: HashSet<String>,
    metadata: HashMap<String, String>,
}

impl<'a> Writer<'a> {
    fn add(
        &mut self,
        name: String,
        dtype: Dtype,
        shape: Vec<usize>,
        data: std::borrow::Cow<'a, [u8]>,
    ) -> Result<()> {
        if !self.names.insert(name.clone()) {
            bail!("two output tensors would be named {name:?}");
        }
        self.tensors.push((name, dtype, shape, data));
        Ok(())
    }

    /// A plain tensor copied through.
    pub fn plain(
        &mut self,
        name: &str,
        dtype: Dtype,
        shape: &[usize],
        data: &'a [u8],
    ) -> Result<()> {
        self.add(name.to_owned(), dtype, shape.to_vec(), data.into())
    }

    /// A metadata entry (refused if the key is taken).
    pub fn meta(&mut self, key: String, value: String) -> Result<()> {
        if self.metadata.contains_key(&key) {
            bail!("metadata key {key:?} is written twice");
        }
        self.metadata.insert(key, value);
        Ok(())
    }

    /// An encoded tensor: its non-empty planes (the divisors plane always), descriptor
    /// and provenance.
    pub fn encoded(
        &mut self,
        name: &str,
        desc: Descriptor,
        planes: [Vec<u8>; 3],
        provenance: String,
    ) -> Result<()> {
        for (i, p) in planes.into_iter().enumerate() {
            let plane = layouts::plane_name(desc.layout, i);
            let is_divisors = desc.layout == Layout::BlockScaleK16_M128x4_V1 && plane == "divisors";
            if p.is_empty() && !is_divisors {
                continue;
            }
            let len = p.len();
            self.add(format!("{name}.{plane}"), Dtype::U8, vec![len], p.into())?;
        }
        self.meta(format!("{DESCRIPTOR_PREFIX}{name}"), desc.text())?;
        self.meta(format!("{PROVENANCE_PREFIX}{name}"), provenance)?;
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.tensors.len()
    }

    /// Writes the file (a sibling temporary renamed into place).
    pub fn write(mut self, path: &Path) -> Result<()> {
        self.metadata
            .insert(FILE_KEY.to_owned(), FILE_VERSION.to_owned());
        let views = self
            .tensors
            .iter()
            .map(|(n, d, s, b)| Ok((n.clone(), TensorView::new(*d, s.clone(), b)?)))
            .collect::<Result<Vec<_>, safetensors::SafeTensorError>>()
            .map_err(|e| anyhow::anyhow!("safetensors: {e}"))?;
        safetensors::serialize_to_file(views, Some(self.metadata), path)
            .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
        plain_file_mode(path)
    }
}

/// Gives a written file the mode a plain `File::create` would (0666 less the umask, usually
/// 0644): the safetensors writer goes through a private temporary file (0600).
#[cfg(unix)]
fn plain_file_mode(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    // SAFETY: umask only swaps the process's mask; it is set back at once (no file is
    // created by this process in between).
    let mask = unsafe {
        let m = libc::umask(0o022);
        libc::umask(m);
        m
    };
    #[allow(clippy::unnecessary_cast)] // mode_t is u16 on some Unix targets
    let mode = 0o666 & !(mask as u32);
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("setting the mode of {}", path.display()))
}

#[cfg(not(unix))]
fn plain_file_mode(_path: &Path) -> Result<()> {
    Ok(())
}

/// The exact binary32 values of a plain F32, BF16 or F16 tensor's bytes.
///
/// # Errors
/// `None` for another dtype; [`ninfer::Error::OutOfMemory`] when the values do not fit in
/// memory.
pub fn widen(dtype: Dtype, bytes: &[u8]) -> Option<Result<Vec<f32>, ninfer::Error>> {
    Some(match dtype {
        Dtype::F32 => words(bytes, "the f32 values", f32::from_le_bytes),
        Dtype::BF16 => words(bytes, "the bf16 values", |b| {
            f32::from_bits((u16::from_le_bytes(b) as u32) << 16)
        }),
        Dtype::F16 => words(bytes, "the f16 values", |b| {
            half::f16::from_bits(u16::from_le_bytes(b)).to_f32()
        }),
        _ => return None,
    })
}

/// `f` of each whole `N`-byte word of `bytes`, in a fallibly allocated vector (see
/// [`crate::alloc::zeroed`]).
pub fn words<const N: usize, T: Clone + Default>(
    bytes: &[u8],
    what: &str,
    f: impl Fn([u8; N]) -> T,
) -> Result<Vec<T>, ninfer::Error> {
    let mut v = crate::alloc::zeroed(bytes.len() / N, what)?;
    for (o, b) in v.iter_mut().zip(bytes.chunks_exact(N)) {
        *o = f(b.try_into().expect("N bytes"));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_round_trip_and_refusals() {
        let d = Descriptor {
            format: Format::Q4_G64Fp16,
            layout: Layout::RowSplitK128_V1,
            rows: 1536,
            cols: 384,
        };
        assert_eq!(
            d.text(),
            "format=q4_g64_fp16;layout=row_split_k128_v1;shape=1536,384"
        );
        assert_eq!(Descriptor::parse(&d.text()).unwrap(), d);
        for bad in [
            "format=q4_g64_fp16;layout=row_split_k128_v1",
            "layout=row_split_k128_v1;format=q4_g64_fp16;shape=1,2",
            "format=q4_g64_fp16;layout=row_scale_v1;shape=1,2",
            "format=q9;layout=row_split_k128_v1;shape=1,2",
            "format=q4_g64_fp16;layout=row_split_k128_v1;shape=0,2",
            "format=q4_g64_fp16;layout=row_split_k128_v1;shape=2",
            "format=q4_g64_fp16;layout=row_split_k128_v1;shape=1,2,3",
            "format=q4_g64_fp16;layout=row_split_k128_v1;shape=1,2;x=1",
        ] {
            assert!(Descriptor::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn repeated_keys_are_found() {
        let t = r#""w": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}"#;
        assert_eq!(repeated_key(format!("{{{t}}}").as_bytes()), None);
        assert_eq!(
            repeated_key(format!("{{{t}, {t}}}").as_bytes()).as_deref(),
            Some("the tensor name \"w\"")
        );
        let m = r#""__metadata__": {"a": "1", "b": "2", "a": "3"}"#;
        assert_eq!(
            repeated_key(format!("{{{m}, {t}}}").as_bytes()).as_deref(),
            Some("the __metadata__ key \"a\"")
        );
        let m = r#""__metadata__": {"a": "1"}"#;
        assert_eq!(
            repeated_key(format!("{{{m}, {t}, {m}}}").as_bytes()).as_deref(),
            Some("the __metadata__ entry")
        );
        assert_eq!(repeated_key(b"[1, 2]"), None);
    }

    /// A safetensors file with a repeated tensor name or metadata key is refused, naming it
    /// (without the check, the last entry wins silently).
    #[test]
    fn files_repeating_a_key_are_refused() {
        let dir = std::env::temp_dir().join(format!("ninfer-st-dup-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let t = r#""w": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}"#;
        for (name, header, want) in [
            ("ok", format!("{{{t}}}"), None),
            (
                "tensor",
                format!("{{{t}, {t}}}"),
                Some("the tensor name \"w\""),
            ),
            (
                "meta",
                format!(r#"{{"__metadata__": {{"ninfer.w": "x", "ninfer.w": "y"}}, {t}}}"#),
                Some("the __metadata__ key \"ninfer.w\""),
            ),
        ] {
            let mut b = (header.len() as u64).to_le_bytes().to_vec();
            b.extend_from_slice(header.as_bytes());
            b.push(7);
            let p = dir.join(format!("{name}.safetensors"));
            std::fs::write(&p, &b).unwrap();
            match (StFile::open(&p), want) {
                (Ok(_), None) => {}
                (Err(e), Some(w)) => {
                    let e = format!("{e:#}");
                    assert!(e.contains(w), "{name}: {e}");
                }
                (r, w) => panic!("{name}: {:?} where {w:?} was expected", r.err()),
            }
        }
    }
}
