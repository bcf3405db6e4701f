//! Parallel row decoding (rayon) shared by `decode`, `dump` and `verify`.

use crate::tensor::Rows;
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;

/// Rows decoded per parallel chunk: enough values per task to amortize scheduling.
fn min_rows_per_task(k: usize) -> usize {
    (16384 / k.max(1)).max(1)
}

/// Decodes rows `first..first + out.len() / K` of `rows` into `out` in parallel.
/// On failure returns the lowest failing row and the library's error.
pub fn decode_range(
    rows: &Rows<'_>,
    first: usize,
    out: &mut [f32],
) -> Result<(), (usize, ninfer::Error)> {
    let k = rows.k();
    let res: Vec<(usize, ninfer::Error)> = out
        .par_chunks_mut(k)
        .with_min_len(min_rows_per_task(k))
        .enumerate()
        .filter_map(|(i, o)| rows.decode(first + i, o).err().map(|e| (first + i, e)))
        .collect();
    match res.into_iter().min_by_key(|(r, _)| *r) {
        None => Ok(()),
        Some(e) => Err(e),
    }
}

/// Rows per chunk so that a chunk holds about `target` values.
pub fn chunk_rows(k: usize, target: usize) -> usize {
    (target / k.max(1)).max(1)
}

/// Decodes every row of `rows` into one vector, advancing `bar` by values.
/// On failure returns the library's error and the failing row (none when the values could
/// not be allocated).
pub fn decode_all(
    rows: &Rows<'_>,
    bar: &ProgressBar,
) -> Result<Vec<f32>, (Option<usize>, ninfer::Error)> {
    let k = rows.k();
    let mut out =
        crate::alloc::zeroed(rows.rows() * k, "the decoded values").map_err(|e| (None, e))?;
    if out.is_empty() {
        // An empty tensor (a zero dimension): nothing to decode.
        return Ok(out);
    }
    let step = chunk_rows(k, 1 << 22) * k;
    for (c, chunk) in out.chunks_mut(step).enumerate() {
        decode_range(rows, c * (step / k), chunk).map_err(|(r, e)| (Some(r), e))?;
        bar.inc(chunk.len() as u64);
    }
    Ok(out)
}

/// A progress bar over `total` values on stderr (hidden when stderr is not a terminal).
pub fn value_bar(total: u64) -> ProgressBar {
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} {wide_msg} [{bar:24}] {percent:>3}% {mvps} ETA {eta}",
        )
        .expect("valid template")
        .with_key(
            "mvps",
            |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{:.0} Mvalues/s", s.per_sec() / 1e6);
            },
        )
        .progress_chars("=> "),
    );
    bar
}
