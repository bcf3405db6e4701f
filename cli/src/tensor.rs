//! What the CLI can do with one GGUF tensor: the registry decides (by ggml type id) which
//! format it is; the library's view checks its structure and decodes its rows.
//!
//! Nothing here knows a block layout: sizes come from `ninfer::layouts::plane_sizes` and
//! values from `ninfer::decode::decode_row`, so every format the library learns to decode
//! is decoded here without a change.

use crate::gguf::{GgufFile, TensorInfo};
use ninfer::registry::ggml_type_name;
use ninfer::{Error, Format, Status, WeightView, decode, layouts};

/// ggml's F16 type id: a GGUF data type with no registered format, read by the CLI as
/// binary16 words (exact in f32).
pub const GGML_F16: u32 = 1;

/// Sizes of unregistered ggml types (values per block, bytes per block), facts from
/// ggml.h, for display only (`inspect`'s byte column). Types not listed are sized by the
/// distance to the next tensor.
fn unregistered_block(ty: u32) -> Option<(u64, u64)> {
    Some(match ty {
        1 => (1, 2),       // F16
        3 => (32, 20),     // Q4_1
        7 => (32, 24),     // Q5_1
        9 => (32, 36),     // Q8_1
        15 => (256, 292),  // Q8_K
        24 => (1, 1),      // I8
        25 => (1, 2),      // I16
        27 | 28 => (1, 8), // I64, F64
        34 => (256, 54),   // TQ1_0
        35 => (256, 66),   // TQ2_0
        39 => (32, 17),    // MXFP4
        _ => return None,
    })
}

/// The ggml name of a type id, or `type#N`.
pub fn type_name(ty: u32) -> String {
    ggml_type_name(ty)
        .map(str::to_owned)
        .unwrap_or_else(|| format!("type#{ty}"))
}

/// A tensor's rows, ready to decode.
#[derive(Clone, Copy)]
pub enum Rows<'a> {
    /// A registered format the library decodes.
    View(WeightView<'a>),
    /// ggml F16 words (`rows × k` little-endian binary16), converted by `half`.
    F16 {
        bytes: &'a [u8],
        rows: usize,
        k: usize,
    },
}

impl Rows<'_> {
    /// Number of rows.
    pub fn rows(&self) -> usize {
        match self {
            Rows::View(v) => v.rows(),
            Rows::F16 { rows, .. } => *rows,
        }
    }

    /// Values per row (K).
    pub fn k(&self) -> usize {
        match self {
            Rows::View(v) => v.cols(),
            Rows::F16 { k, .. } => *k,
        }
    }

    /// Decodes row `row` into `out[..K]`.
    pub fn decode(&self, row: usize, out: &mut [f32]) -> Result<(), Error> {
        match self {
            Rows::View(v) => decode::decode_row(v, row as u64, out),
            Rows::F16 { bytes, k, .. } => {
                let words = &bytes[row * k * 2..(row + 1) * k * 2];
                for (o, w) in out[..*k].iter_mut().zip(words.chunks_exact(2)) {
                    *o = half::f16::from_bits(u16::from_le_bytes([w[0], w[1]])).to_f32();
                }
                Ok(())
            }
        }
    }
}

/// What can be done with one tensor.
pub enum Plan<'a> {
    /// Decodable: its rows.
    Decode(Rows<'a>),
    /// Not decodable by design or in this build (an unregistered type, a format not yet
    /// decoded, int32): the library's status and message. Not a failure.
    Refused(Status, String),
    /// A decodable type whose tensor is malformed (bad shape, truncated data): a failure.
    /// The status is the library's when the library found it.
    Broken(Option<Status>, String),
}

impl Plan<'_> {
    /// `OK`, or the status name of the refusal or failure (`ERROR` when the container,
    /// not the library, found the problem).
    pub fn status_name(&self) -> &'static str {
        match self {
            Plan::Decode(_) => "OK",
            Plan::Refused(s, _) => s.name(),
            Plan::Broken(Some(s), _) => s.name(),
            Plan::Broken(None, _) => "ERROR",
        }
    }
}

/// A tensor of the file with its classification.
pub struct Tensor<'a> {
    /// The table entry.
    pub info: &'a TensorInfo,
    /// The registered format, when the ggml type has one.
    pub format: Option<Format>,
    /// Exact data bytes when known (registered types and F16 from the registry's or
    /// ggml's block facts), else an upper bound from the tensor offsets.
    pub bytes: Option<u64>,
    /// Whether `bytes` is exact.
    pub bytes_exact: bool,
    /// What can be done with it.
    pub plan: Plan<'a>,
}

impl Tensor<'_> {
    /// `gguf_q8_0`, `F16 (no registered format)`, `Q4_1 (unregistered)`.
    pub fn format_text(&self) -> String {
        match self.format {
            Some(f) => f.name().to_owned(),
            None if self.info.ggml_type == GGML_F16 => "F16 (no registered format)".into(),
            None => format!("{} (unregistered)", type_name(self.info.ggml_type)),
        }
    }

    /// The per-type grouping key: the ggml type name, with the format in brackets.
    pub fn type_key(&self) -> String {
        let ggml = type_name(self.info.ggml_type);
        match self.format {
            Some(f) => format!("{ggml} ({f})"),
            None if self.info.ggml_type == GGML_F16 => format!("{ggml} (data)"),
            None => ggml,
        }
    }

    /// Number of values (rows × K), when it fits.
    pub fn values(&self) -> Option<u64> {
        self.info.elements()
    }
}

fn usize_of(v: u64, what: &str) -> Result<usize, String> {
    usize::try_from(v).map_err(|_| format!("{what} = {v} does not fit in memory"))
}

/// Classifies every tensor of `file`.
pub fn classify(file: &GgufFile) -> Vec<Tensor<'_>> {
    file.tensors.iter().map(|t| classify_one(file, t)).collect()
}

fn classify_one<'a>(file: &'a GgufFile, info: &'a TensorInfo) -> Tensor<'a> {
    let ty = info.ggml_type;
    let format = Format::from_ggml_type(ty);
    let (rows, k) = match (info.rows(), usize_of(info.k(), "K")) {
        (Some(r), Ok(k)) => match usize_of(r, "rows") {
            Ok(r) => (r, k),
            Err(e) => return broken(file, info, format.ok(), None, e),
        },
        (None, _) => {
            return broken(file, info, format.ok(), None, "rows overflow".into());
        }
        (_, Err(e)) => return broken(file, info, format.ok(), None, e),
    };
    match format {
        Ok(f) => {
            let layout = f.info().layout;
            let size = match layouts::plane_sizes(f, layout, rows, k) {
                Ok(s) => s,
                Err(e) => return broken(file, info, Some(f), Some(e.status()), e.to_string()),
            };
            // Every GGUF-mapped format (gguf_*, fp32, bf16, int32) has a one-plane layout.
            let len = size[0];
            let mut t = Tensor {
                info,
                format: Some(f),
                bytes: Some(len as u64),
                bytes_exact: true,
                plan: Plan::Refused(Status::Internal, String::new()),
            };
            t.plan = match file.data(info, len) {
                Err(e) => Plan::Broken(None, format!("{e:#}")),
                Ok(data) => match WeightView::single(f, rows, k, data) {
                    Err(e) => Plan::Broken(Some(e.status()), e.to_string()),
                    Ok(view) if decode::is_decodable(&view) => Plan::Decode(Rows::View(view)),
                    Ok(view) => {
                        // Ask the library why, so the message is its own.
                        let mut row = vec![0f32; k];
                        match decode::decode_row(&view, 0, &mut row) {
                            Err(e) => Plan::Refused(e.status(), e.to_string()),
                            Ok(()) => Plan::Decode(Rows::View(view)),
                        }
                    }
                },
            };
            t
        }
        Err(_) if ty == GGML_F16 => {
            let len = rows
                .checked_mul(k)
                .and_then(|n| n.checked_mul(2))
                .filter(|&n| n <= isize::MAX as usize);
            let Some(len) = len else {
                return broken(
                    file,
                    info,
                    None,
                    Some(Status::Overflow),
                    "size overflow".into(),
                );
            };
            let plan = if rows == 0 || k == 0 {
                Plan::Broken(Some(Status::BadShape), format!("shape [{rows}, {k}]"))
            } else {
                match file.data(info, len) {
                    Ok(bytes) => Plan::Decode(Rows::F16 { bytes, rows, k }),
                    Err(e) => Plan::Broken(None, format!("{e:#}")),
                }
            };
            Tensor {
                info,
                format: None,
                bytes: Some(len as u64),
                bytes_exact: true,
                plan,
            }
        }
        Err(e) => {
            let (bytes, exact) = match unregistered_block(ty) {
                Some((bv, bb)) => (
                    info.elements()
                        .filter(|n| n % bv == 0)
                        .and_then(|n| (n / bv).checked_mul(bb)),
                    true,
                ),
                None => (file.span(info), false),
            };
            Tensor {
                info,
                format: None,
                bytes,
                bytes_exact: exact && bytes.is_some(),
                plan: Plan::Refused(e.status(), e.to_string()),
            }
        }
    }
}

fn broken<'a>(
    file: &'a GgufFile,
    info: &'a TensorInfo,
    format: Option<Format>,
    status: Option<Status>,
    msg: String,
) -> Tensor<'a> {
    let decodable_type = format.is_some() || info.ggml_type == GGML_F16;
    Tensor {
        info,
        format,
        bytes: file.span(info),
        bytes_exact: false,
        plan: if decodable_type {
            Plan::Broken(status, msg)
        } else {
            let e = Format::from_ggml_type(info.ggml_type).expect_err("unregistered");
            Plan::Refused(e.status(), e.to_string())
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A GGUF v3 image with one tensor per `(name, ne, type)` entry, each followed by
    /// `data_len` bytes of zeros (aligned to 32).
    fn image(tensors: &[(&str, &[u64], u32)], data_len: usize) -> &'static [u8] {
        let mut b = Vec::new();
        b.extend_from_slice(b"GGUF");
        b.extend_from_slice(&3u32.to_le_bytes());
        b.extend_from_slice(&(tensors.len() as u64).to_le_bytes());
        b.extend_from_slice(&0u64.to_le_bytes());
        let slot = data_len.div_ceil(32) * 32;
        for (i, (name, ne, ty)) in tensors.iter().enumerate() {
            b.extend_from_slice(&(name.len() as u64).to_le_bytes());
            b.extend_from_slice(name.as_bytes());
            b.extend_from_slice(&(ne.len() as u32).to_le_bytes());
            for d in *ne {
                b.extend_from_slice(&d.to_le_bytes());
            }
            b.extend_from_slice(&ty.to_le_bytes());
            b.extend_from_slice(&((i * slot) as u64).to_le_bytes());
        }
        while b.len() % 32 != 0 {
            b.push(0);
        }
        b.resize(b.len() + slot * tensors.len(), 0);
        Box::leak(b.into_boxed_slice())
    }

    fn plan_of(t: &Tensor<'_>) -> (&'static str, String) {
        match &t.plan {
            Plan::Decode(_) => ("decode", String::new()),
            Plan::Refused(s, m) => (s.name(), m.clone()),
            Plan::Broken(s, m) => (s.map_or("ERROR", |s| s.name()), m.clone()),
        }
    }

    #[test]
    fn classification_follows_the_registry() {
        let f = GgufFile::from_static(image(
            &[
                ("q8", &[64, 2], 8),             // gguf_q8_0: 2 rows × 2 blocks × 34 bytes
                ("f16", &[4, 2], 1),             // F16 data
                ("q41", &[32, 2], 3),            // Q4_1: unregistered
                ("q10", &[128, 1], 41),          // Q1_0: unregistered
                ("t99", &[32], 99),              // unknown to everyone
                ("i32", &[4], 26),               // int32: registered, not decodable to f32
                ("badk", &[48, 2], 8),           // K not a multiple of 32
                ("zero", &[0, 2], 0),            // empty
                ("big", &[1 << 40, 1 << 40], 0), // overflows
                ("long", &[64, 4], 8),           // more bytes than the data slot holds
            ],
            136,
        ))
        .unwrap();
        let ts = classify(&f);
        let by = |n: &str| ts.iter().find(|t| t.info.name == n).unwrap();
        assert_eq!(plan_of(by("q8")).0, "decode");
        assert_eq!((by("q8").bytes, by("q8").bytes_exact), (Some(136), true));
        assert_eq!(by("q8").format, Some(Format::GgufQ8_0));
        assert_eq!(plan_of(by("f16")).0, "decode");
        assert_eq!(by("f16").format_text(), "F16 (no registered format)");
        let (s, m) = plan_of(by("q41"));
        assert_eq!(s, "UNREGISTERED_TYPE");
        assert!(m.contains("Q4_1"), "{m}");
        assert_eq!((by("q41").bytes, by("q41").bytes_exact), (Some(40), true));
        assert_eq!(by("q41").format_text(), "Q4_1 (unregistered)");
        assert_eq!(plan_of(by("q10")).0, "UNREGISTERED_TYPE");
        assert_eq!(plan_of(by("t99")).0, "UNREGISTERED_TYPE");
        assert_eq!(by("t99").format_text(), "type#99 (unregistered)");
        assert!(!by("t99").bytes_exact, "sized by the next offset");
        assert_eq!(plan_of(by("i32")).0, "UNSUPPORTED");
        assert_eq!(plan_of(by("badk")).0, "BAD_SHAPE");
        assert_eq!(plan_of(by("zero")).0, "BAD_SHAPE");
        assert_eq!(plan_of(by("big")).0, "OVERFLOW");
        let (s, m) = plan_of(by("long"));
        assert_eq!(s, "ERROR");
        assert!(m.contains("truncated"), "{m}");
    }

    #[test]
    fn f16_rows_are_exact() {
        let bytes: Vec<u8> = [0x3C00u16, 0xC000, 0x0001, 0x7C00]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        let rows = Rows::F16 {
            bytes: &bytes,
            rows: 2,
            k: 2,
        };
        let mut out = [0f32; 2];
        rows.decode(1, &mut out).unwrap();
        assert_eq!(out[0].to_bits(), 2f32.powi(-24).to_bits());
        assert_eq!(out[1], f32::INFINITY);
        rows.decode(0, &mut out).unwrap();
        assert_eq!(out, [1.0, -2.0]);
    }
}
