//! llama.cpp importance matrices (`llama-imatrix` output) as grouped_search importance
//! vectors (spec §7.3: one weight per input channel).
//!
//! Two file forms are read, as llama.cpp's `llama-quantize` reads them:
//!
//! - **GGUF** (`general.type` = `imatrix`): per weight `NAME`, an F32 tensor
//!   `NAME.in_sum2` with `ne = [K, n_mat]` (the sums of squared activations of each input
//!   channel, one row per matrix of an expert bank) and an F32 tensor `NAME.counts` with
//!   `ne = [1, n_mat]` (how many activation rows were summed). The importance of channel k
//!   of matrix j is `in_sum2[j·K + k] / counts[j]` (binary32 division); a matrix whose count
//!   is 0 (never exercised) weighs every channel 1, as llama.cpp does. Other tensors
//!   (`.in_sum`, `.in_sum4`, ...) are ignored.
//! - **legacy `.dat`**: little-endian `int32 n_entries`; per entry `int32 name_len`, the
//!   name bytes, `int32 ncall`, `int32 nval`, `nval` f32 values (each `sum / count · ncall`);
//!   then optionally `int32 last_call`, `int32 dataset_len` and the dataset name. The
//!   importance is `value / ncall` (binary32 division; unchanged when `ncall` ≤ 0).
//!
//! A weight is matched by its exact tensor name (llama.cpp's, e.g. `blk.0.attn_q.weight`:
//! a GGUF input's names). The vector of a `[N, K]` weight must hold exactly K values of
//! one matrix; anything else is refused for that weight.

use crate::gguf::GgufFile;
use anyhow::{Context, Result, bail, ensure};
use std::collections::BTreeMap;
use std::path::Path;

/// One entry: the importance of every channel of `n_mat` stacked matrices.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// `n_mat × K` importance values (matrix-major).
    pub values: Vec<f32>,
    /// Matrices in the entry (1 for an ordinary weight; the experts of an expert bank).
    pub n_mat: usize,
    /// Every count of the entry is 0 (GGUF form: never exercised), so every channel
    /// weighs 1: no importance was measured.
    pub uniform: bool,
}

/// A parsed importance matrix file.
#[derive(Debug)]
pub struct Imatrix {
    /// The path as given (recorded in provenance).
    pub path: String,
    /// `"gguf"` or `"dat"`.
    pub form: &'static str,
    /// Entries by weight name.
    pub entries: BTreeMap<String, Entry>,
}

/// A vector sized by the file, allocated fallibly.
fn try_vec<T>(n: usize, what: &str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n)
        .map_err(|_| anyhow::anyhow!("out of memory for {what} ({n} values)"))?;
    Ok(v)
}

impl Imatrix {
    /// Reads a GGUF or legacy `.dat` importance matrix (by the GGUF magic).
    pub fn open(path: &Path) -> Result<Imatrix> {
        let shown = path.display().to_string();
        crate::gguf::regular_file(path).with_context(|| format!("importance matrix {shown}"))?;
        let mut magic = [0u8; 4];
        let gguf = {
            use std::io::Read;
            let mut f = std::fs::File::open(path)
                .with_context(|| format!("importance matrix {shown}: opening"))?;
            f.read_exact(&mut magic).is_ok() && &magic == b"GGUF"
        };
        let m = if gguf {
            GgufFile::open(path).and_then(|f| Self::from_gguf(&f, shown.clone()))
        } else {
            std::fs::read(path)
                .with_context(|| format!("reading {shown}"))
                .and_then(|b| Self::from_dat(&b, shown.clone()))
        };
        m.with_context(|| format!("importance matrix {shown}"))
    }

    /// The GGUF form.
    pub fn from_gguf(f: &GgufFile, path: String) -> Result<Imatrix> {
        let mut pairs: BTreeMap<&str, (Option<usize>, Option<usize>)> = BTreeMap::new();
        for (i, t) in f.tensors.iter().enumerate() {
            if let Some(n) = t.name.strip_suffix(".in_sum2") {
                pairs.entry(n).or_default().0 = Some(i);
            } else if let Some(n) = t.name.strip_suffix(".counts") {
                pairs.entry(n).or_default().1 = Some(i);
            }
        }
        ensure!(
            !pairs.is_empty(),
            "no `NAME.in_sum2` / `NAME.counts` tensors: not a llama.cpp importance matrix"
        );
        let f32s = |i: usize| -> Result<Vec<f32>> {
            let t = &f.tensors[i];
            ensure!(
                t.ggml_type == 0,
                "{}: type {} (F32 expected)",
                t.name,
                t.ggml_type
            );
            let d = f.data(t).with_context(|| t.name.clone())?;
            let mut v = try_vec(d.len() / 4, &t.name)?;
            v.extend(
                d.chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            );
            Ok(v)
        };
        let mut entries = BTreeMap::new();
        for (name, (s, c)) in pairs {
            let (Some(s), Some(c)) = (s, c) else {
                bail!("{name}: `{name}.in_sum2` and `{name}.counts` must both be present");
            };
            let st = &f.tensors[s];
            let (k, n_mat) = (st.k() as usize, st.rows().unwrap_or(0) as usize);
            ensure!(
                st.dims.len() <= 2 && k > 0 && n_mat > 0,
                "{}: shape {} (expected [n_mat, K])",
                st.name,
                st.shape_text()
            );
            let sums = f32s(s)?;
            let counts = f32s(c)?;
            ensure!(
                counts.len() == n_mat,
                "{name}: {} counts for {n_mat} matrices",
                counts.len()
            );
            let mut values = try_vec(sums.len(), name)?;
            for (row, &count) in sums.chunks_exact(k).zip(&counts) {
                if count > 0.0 {
                    values.extend(row.iter().map(|&x| x / count));
                } else {
                    values.extend(std::iter::repeat_n(1.0f32, k));
                }
            }
            let uniform = counts.iter().all(|&c| c <= 0.0);
            entries.insert(
                name.to_owned(),
                Entry {
                    values,
                    n_mat,
                    uniform,
                },
            );
        }
        Ok(Imatrix {
            path,
            form: "gguf",
            entries,
        })
    }

    /// The legacy `.dat` form.
    pub fn from_dat(b: &[u8], path: String) -> Result<Imatrix> {
        let mut entries = BTreeMap::new();
        let mut at = 0usize;
        let take = |at: &mut usize, len: usize, what: &str| -> Result<&[u8]> {
            let s = b.get(*at..at.saturating_add(len)).with_context(|| {
                format!(
                    "{what}: {len} bytes at byte {at} run past the end of the {}-byte file (a \
                     truncated file, or not a llama.cpp importance matrix)",
                    b.len(),
                    at = *at
                )
            })?;
            *at += len;
            Ok(s)
        };
        let int = |at: &mut usize, what: &str| -> Result<i32> {
            let w = take(at, 4, what)?;
            Ok(i32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        };
        let n = int(&mut at, "the entry count")?;
        ensure!(
            n >= 1,
            "entry count {n}: no data (not a llama.cpp importance matrix?)"
        );
        for e in 0..n {
            let len = int(&mut at, "a name length")?;
            ensure!(len >= 0, "entry {e}: name length {len}");
            // The first entry's name running past the file: not a truncated matrix but
            // some other file (text, …).
            ensure!(
                e > 0 || at.saturating_add(len as usize) <= b.len(),
                "not an importance matrix (neither GGUF nor llama.cpp's legacy .dat: its \
                 first entry's name would be {len} bytes long, past the end of the {}-byte file)",
                b.len()
            );
            let name = std::str::from_utf8(take(&mut at, len as usize, "a name")?)
                .with_context(|| format!("entry {e}: name is not UTF-8"))?
                .to_owned();
            let ncall = int(&mut at, "ncall")?;
            let nval = int(&mut at, "nval")?;
            ensure!(nval >= 1, "entry {e} ({name}): {nval} values");
            let raw = take(&mut at, nval as usize * 4, "the values")?;
            let mut values = try_vec(nval as usize, &name)?;
            values.extend(raw.chunks_exact(4).map(|w| {
                let v = f32::from_le_bytes([w[0], w[1], w[2], w[3]]);
                if ncall > 0 { v / ncall as f32 } else { v }
            }));
            ensure!(
                entries
                    .insert(
                        name.clone(),
                        Entry {
                            values,
                            n_mat: 1,
                            uniform: false,
                        }
                    )
                    .is_none(),
                "entry {e}: {name} appears twice"
            );
        }
        // Trailing `last_call` and dataset name (newer files): not needed here.
        Ok(Imatrix {
            path,
            form: "dat",
            entries,
        })
    }

    /// The importance vector of the `[N, cols]` weight `name`: `Ok(None)` when the file has
    /// no entry for it or its entry's counts are all 0 ([`Entry::uniform`]), `Err` (the reason) when the entry does not fit one `cols`-channel
    /// matrix.
    pub fn importance(&self, name: &str, cols: usize) -> Result<Option<&[f32]>, String> {
        let Some(e) = self.entries.get(name) else {
            return Ok(None);
        };
        if e.n_mat != 1 {
            return Err(format!(
                "imatrix entry {name} holds {} matrices (an expert bank), not one",
                e.n_mat
            ));
        }
        if e.values.len() != cols {
            return Err(format!(
                "imatrix entry {name} has {} values; the weight has K = {cols} input channels",
                e.values.len()
            ));
        }
        if e.uniform {
            // Counts all 0: no importance was measured (every channel 1).
            return Ok(None);
        }
        Ok(Some(&e.values))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dat(entries: &[(&str, i32, &[f32])], trailer: bool) -> Vec<u8> {
        let mut b = (entries.len() as i32).to_le_bytes().to_vec();
        for (name, ncall, v) in entries {
            b.extend((name.len() as i32).to_le_bytes());
            b.extend(name.as_bytes());
            b.extend(ncall.to_le_bytes());
            b.extend((v.len() as i32).to_le_bytes());
            for x in *v {
                b.extend(x.to_le_bytes());
            }
        }
        if trailer {
            b.extend(7i32.to_le_bytes());
            b.extend(4i32.to_le_bytes());
            b.extend(b"wiki");
        }
        b
    }

    #[test]
    fn legacy_values_are_divided_by_ncall() {
        for trailer in [false, true] {
            let b = dat(
                &[("a.weight", 4, &[2.0, 6.0, 1.0]), ("b", 0, &[3.0])],
                trailer,
            );
            let m = Imatrix::from_dat(&b, "x.dat".into()).unwrap();
            assert_eq!(
                m.importance("a.weight", 3),
                Ok(Some(&[0.5f32, 1.5, 0.25][..]))
            );
            assert_eq!(m.importance("b", 1), Ok(Some(&[3.0f32][..])));
            assert_eq!(m.importance("c", 1), Ok(None));
            assert!(m.importance("a.weight", 4).unwrap_err().contains("K = 4"));
        }
    }

    #[test]
    fn legacy_refusals_never_panic() {
        let good = dat(&[("a", 1, &[1.0, 2.0])], true);
        for cut in 0..good.len() - 12 {
            let _ = Imatrix::from_dat(&good[..cut], "x".into());
        }
        assert!(Imatrix::from_dat(&good[..20], "x".into()).is_err());
        assert!(Imatrix::from_dat(&0i32.to_le_bytes(), "x".into()).is_err());
        let mut bad = good.clone();
        bad[4..8].copy_from_slice(&(-1i32).to_le_bytes());
        assert!(Imatrix::from_dat(&bad, "x".into()).is_err());
        let mut huge = good.clone();
        huge[13..17].copy_from_slice(&i32::MAX.to_le_bytes()); // nval
        let e = Imatrix::from_dat(&huge, "x".into()).unwrap_err();
        assert!(e.to_string().contains("truncated"), "{e}");
        let twice = dat(&[("a", 1, &[1.0]), ("a", 1, &[1.0])], false);
        assert!(Imatrix::from_dat(&twice, "x".into()).is_err());
    }
}
