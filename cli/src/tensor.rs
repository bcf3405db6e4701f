//! What the CLI can do with one GGUF tensor: the registry decides (by ggml type id) which
//! format it is; the library's view checks its structure and decodes its rows.
//!
//! Nothing here knows a block layout: sizes come from `ninfer::layouts::plane_sizes` and
//! values from `ninfer::decode::decode_row`, so every format the library learns to decode
//! is decoded here without a change.

use crate::gguf::{GgufFile, TensorInfo};
use ninfer::registry::ggml_type_name;
use ninfer::{Error, Format, Status, WeightView, decode};

/// ggml's F16 type id: a GGUF data type with no registered format, read by the CLI as
/// binary16 words (exact in f32).
pub const GGML_F16: u32 = 1;

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
    /// A tensor with a zero dimension: no values, nothing to decode.
    Empty { k: usize },
}

impl Rows<'_> {
    /// Number of rows.
    pub fn rows(&self) -> usize {
        match self {
            Rows::View(v) => v.rows(),
            Rows::F16 { rows, .. } => *rows,
            Rows::Empty { .. } => 0,
        }
    }

    /// Values per row (K).
    pub fn k(&self) -> usize {
        match self {
            Rows::View(v) => v.cols(),
            Rows::F16 { k, .. } => *k,
            Rows::Empty { k } => *k,
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
            Rows::Empty { .. } => Err(Error::RowOutOfRange {
                row: row as u64,
                rows: 0,
            }),
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
    /// A malformed tensor (truncated data, whatever its type; a shape its format cannot
    /// hold): a failure. The status is the library's when the library found it.
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
    /// Exact data bytes (from ggml's type table, checked by the reader).
    pub bytes: u64,
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
    let mut t = Tensor {
        info,
        format: format.as_ref().ok().copied(),
        bytes: info.nbytes,
        plan: Plan::Refused(Status::Internal, String::new()),
    };
    // Every tensor's bytes must be in the file, whatever its type.
    let data = match file.data(info) {
        Ok(d) => d,
        Err(e) => {
            t.plan = Plan::Broken(None, format!("{e:#}"));
            return t;
        }
    };
    let decodable_type = format.is_ok() || ty == GGML_F16;
    t.plan = match format {
        Err(e) if ty != GGML_F16 => Plan::Refused(e.status(), e.to_string()),
        // A zero dimension: an empty tensor (valid GGUF), nothing to decode.
        _ if decodable_type && info.elements() == Some(0) => Plan::Decode(Rows::Empty {
            k: usize_of(info.k(), "K").unwrap_or(0),
        }),
        _ => match (
            info.rows()
                .map_or(Err("rows overflow".into()), |r| usize_of(r, "rows")),
            usize_of(info.k(), "K"),
        ) {
            (Err(e), _) | (_, Err(e)) => Plan::Broken(Some(Status::Overflow), e),
            (Ok(rows), Ok(k)) => match format {
                Ok(f) => view_plan(f, rows, k, data),
                // ggml F16: the reader checked its size (rows × K × 2 bytes).
                Err(_) => Plan::Decode(Rows::F16 {
                    bytes: data,
                    rows,
                    k,
                }),
            },
        },
    };
    t
}

/// The plan of a registered format: the library checks the view (its sizes are the
/// registry's, an independent check of ggml's table) and says whether it decodes.
fn view_plan(f: Format, rows: usize, k: usize, data: &[u8]) -> Plan<'_> {
    match WeightView::single(f, rows, k, data) {
        Err(e) => Plan::Broken(Some(e.status()), e.to_string()),
        Ok(view) if decode::is_decodable(&view) => Plan::Decode(Rows::View(view)),
        Ok(view) => {
            // Ask the library why, so the message is its own.
            let mut row = Vec::new();
            if row.try_reserve_exact(k).is_err() {
                return Plan::Broken(None, format!("out of memory for a row of {k} values"));
            }
            row.resize(k, 0f32);
            match decode::decode_row(&view, 0, &mut row) {
                Err(e) => Plan::Refused(e.status(), e.to_string()),
                Ok(()) => Plan::Decode(Rows::View(view)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gguf::testing::Image;

    fn plan_of(t: &Tensor<'_>) -> (&'static str, String) {
        match &t.plan {
            Plan::Decode(_) => ("decode", String::new()),
            Plan::Refused(s, m) => (s.name(), m.clone()),
            Plan::Broken(s, m) => (s.map_or("ERROR", |s| s.name()), m.clone()),
        }
    }

    #[test]
    fn classification_follows_the_registry() {
        let img = Image::default()
            .tensor("q8", &[64, 2], 8, 136) // gguf_q8_0: 2 rows × 2 blocks × 34 bytes
            .tensor("f16", &[4, 2], 1, 16) // F16 data
            .tensor("q41", &[32, 2], 3, 40) // Q4_1: unregistered
            .tensor("q10", &[128, 1], 41, 18) // Q1_0: unregistered
            .tensor("i32", &[4], 26, 16) // int32: registered, not decodable to f32
            .tensor("zero", &[0, 2], 0, 0) // empty
            .tensor("zq8", &[64, 0, 3], 8, 0) // empty, of a block type
            .tensor("zq41", &[0], 3, 0); // empty, unregistered type
        let f = GgufFile::from_static(img.leak()).unwrap();
        let ts = classify(&f);
        let by = |n: &str| ts.iter().find(|t| t.info.name == n).unwrap();
        assert_eq!(plan_of(by("q8")).0, "decode");
        assert_eq!(by("q8").bytes, 136);
        assert_eq!(by("q8").format, Some(Format::GgufQ8_0));
        assert_eq!(plan_of(by("f16")).0, "decode");
        assert_eq!(by("f16").format_text(), "F16 (no registered format)");
        let (s, m) = plan_of(by("q41"));
        assert_eq!(s, "UNREGISTERED_TYPE");
        assert!(m.contains("Q4_1"), "{m}");
        assert_eq!(by("q41").bytes, 40);
        assert_eq!(by("q41").format_text(), "Q4_1 (unregistered)");
        assert_eq!(plan_of(by("q10")).0, "UNREGISTERED_TYPE");
        assert_eq!(plan_of(by("i32")).0, "UNSUPPORTED");
        // Zero dimensions: empty tensors, decodable to nothing.
        for n in ["zero", "zq8"] {
            assert!(
                matches!(by(n).plan, Plan::Decode(Rows::Empty { .. })),
                "{n}: {:?}",
                plan_of(by(n))
            );
            assert_eq!(by(n).bytes, 0);
        }
        assert_eq!(plan_of(by("zq41")).0, "UNREGISTERED_TYPE");
    }

    /// The reader's type table agrees with the library's registry: the same names, and
    /// the same block sizes for every type with a registered format.
    #[test]
    fn the_readers_type_table_matches_the_registry() {
        let mut registered = 0;
        for id in 0..256u32 {
            let t = crate::gguf::ggml_type(id);
            assert_eq!(t.map(|t| t.name), ggml_type_name(id), "type {id}");
            if let (Some(t), Ok(f)) = (t, Format::from_ggml_type(id)) {
                let i = f.info();
                assert_eq!(
                    (t.block_values, t.block_bytes),
                    (u64::from(i.block_values), u64::from(i.block_bytes)),
                    "{f}"
                );
                registered += 1;
            }
        }
        assert_eq!(registered, 21);
    }

    #[test]
    fn truncated_data_is_a_failure_whatever_the_type() {
        // The last tensor of each image claims more bytes than the file has.
        for (ty, ne, len) in [
            (3u32, vec![32u64, 4], 80u64), // Q4_1 (unregistered)
            (24, vec![1 << 40], 1 << 40),  // I8 claiming 1 TiB in a small file
            (8, vec![64, 4], 272),         // Q8_0
            (1, vec![4, 4], 32),           // F16
        ] {
            let mut b = Image::default()
                .tensor("a", &[8], 0, 32)
                .tensor("last", &ne, ty, 0)
                .bytes();
            b.extend_from_slice(&[0u8; 10]);
            let f = GgufFile::from_static(Box::leak(b.into_boxed_slice())).unwrap();
            let ts = classify(&f);
            assert_eq!(plan_of(&ts[0]).0, "decode");
            assert_eq!(ts[1].bytes, len);
            let (s, m) = plan_of(&ts[1]);
            assert_eq!(s, "ERROR", "type {ty}: {m}");
            assert!(matches!(ts[1].plan, Plan::Broken(..)));
            assert!(m.contains("truncated"), "{m}");
        }
    }

    #[test]
    fn empty_rows_decode_to_nothing() {
        let rows = Rows::Empty { k: 64 };
        assert_eq!((rows.rows(), rows.k()), (0, 64));
        let bar = indicatif::ProgressBar::hidden();
        assert!(crate::rows::decode_all(&rows, &bar).unwrap().is_empty());
        let rows = Rows::Empty { k: 0 };
        assert!(crate::rows::decode_all(&rows, &bar).unwrap().is_empty());
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
