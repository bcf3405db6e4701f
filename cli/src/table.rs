//! Plain-text tables: columns padded to their widest cell, numbers right-aligned.

/// Prints `rows` under `headers`; columns whose `right[i]` is true are right-aligned.
pub fn print(headers: &[&str], right: &[bool], rows: &[Vec<String>]) -> anyhow::Result<()> {
    out!("{}", render(headers, right, rows));
    Ok(())
}

/// The table as text (one line per row, a rule under the header).
pub fn render(headers: &[&str], right: &[bool], rows: &[Vec<String>]) -> String {
    let n = headers.len();
    let mut width: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| -> String {
        let mut s = String::new();
        for (i, c) in cells.enumerate().take(n) {
            let pad = width[i].saturating_sub(c.chars().count());
            if i > 0 {
                s.push_str("  ");
            }
            if right.get(i).copied().unwrap_or(false) {
                s.extend(std::iter::repeat_n(' ', pad));
                s.push_str(c);
            } else {
                s.push_str(c);
                if i + 1 < n {
                    s.extend(std::iter::repeat_n(' ', pad));
                }
            }
        }
        s.truncate(s.trim_end().len());
        s.push('\n');
        s
    };
    let mut out = line(&mut headers.iter().copied());
    let total: usize = width.iter().sum::<usize>() + 2 * n.saturating_sub(1);
    out.push_str(&"-".repeat(total));
    out.push('\n');
    for r in rows {
        out.push_str(&line(&mut r.iter().map(String::as_str)));
    }
    out
}

/// `noun` or its plural ("tensors", "entries") for `n` of them.
pub fn plural(n: u64, noun: &str) -> String {
    if n == 1 {
        noun.to_owned()
    } else if let Some(stem) = noun.strip_suffix('y') {
        format!("{stem}ies")
    } else {
        format!("{noun}s")
    }
}

/// `n` with its noun: "1 tensor", "2 tensors".
pub fn counted(n: u64, noun: &str) -> String {
    format!("{} {}", count(n), plural(n, noun))
}

/// A count with thousands separators: 167772160 → "167,772,160".
pub fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_and_alignment() {
        assert_eq!(super::count(167772160), "167,772,160");
        assert_eq!(super::count(999), "999");
        let t = super::render(
            &["a", "n"],
            &[false, true],
            &[
                vec!["xyz".into(), "1".into()],
                vec!["b".into(), "100".into()],
            ],
        );
        assert_eq!(t, "a      n\n--------\nxyz    1\nb    100\n");
    }
}
