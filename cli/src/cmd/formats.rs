//! `ninfer formats`: the closed registry as a table.

use crate::table;
use ninfer::registry::{FORMATS, ggml_type_name};
use ninfer::{Category, ScaleType};

/// Lower-case name of a category.
pub fn category_name(c: Category) -> &'static str {
    match c {
        Category::DirectFloat => "direct_float",
        Category::DirectInt => "direct_int",
        Category::GroupedInt => "grouped_int",
        Category::BlockScaledFloat => "block_scaled_float",
        Category::RowScaledFloat => "row_scaled_float",
        Category::GgufBlock => "gguf_block",
    }
}

/// Lower-case name of a scale type.
pub fn scale_name(s: ScaleType) -> &'static str {
    match s {
        ScaleType::None => "-",
        ScaleType::F16 => "f16",
        ScaleType::Bf16 => "bf16",
        ScaleType::E4m3fn => "e4m3fn",
        ScaleType::GgmlBlock => "ggml block",
    }
}

pub fn run() -> anyhow::Result<()> {
    let rows: Vec<Vec<String>> = FORMATS
        .iter()
        .map(|f| {
            let interval = if f.code_min == 0 && f.code_max == 0 {
                "-".to_owned()
            } else {
                format!("[{}, {}]", f.code_min, f.code_max)
            };
            let dash0 = |v: i64| {
                if v == 0 {
                    "-".to_owned()
                } else {
                    v.to_string()
                }
            };
            let ggml = match f.ggml_type {
                Some(t) => format!("{t} ({})", ggml_type_name(t).unwrap_or("?")),
                None => "-".into(),
            };
            vec![
                f.name().to_owned(),
                category_name(f.category).to_owned(),
                dash0(f.code_bits.into()),
                f.block_values.to_string(),
                f.block_bytes.to_string(),
                scale_name(f.scale).to_owned(),
                interval,
                dash0(f.qmax.into()),
                f.bits_per_weight.to_string(),
                ggml,
                f.layout.name().to_owned(),
            ]
        })
        .collect();
    table::print(
        &[
            "format",
            "category",
            "bits",
            "block values",
            "block bytes",
            "scale",
            "code interval",
            "qmax",
            "bits/weight",
            "ggml type",
            "layout",
        ],
        &[
            false, false, true, true, true, false, false, true, true, false, false,
        ],
        &rows,
    )?;
    outln!(
        "\n{} formats. bits = code width (GGUF blocks mix widths); block = values sharing one scale and their bytes.",
        rows.len()
    );
    Ok(())
}
