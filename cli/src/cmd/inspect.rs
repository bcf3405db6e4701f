//! `ninfer inspect FILE.gguf`: metadata and every tensor with its format, shape, bytes and
//! whether this library decodes it.

use crate::gguf::GgufFile;
use crate::table;
use crate::tensor::{self, Plan, Rows, type_name};

pub fn run(file: &GgufFile, label: &str) -> anyhow::Result<bool> {
    outln!("{label}");
    outln!(
        "GGUF v{}, {} bytes, {} metadata entries, {} tensors, alignment {}, data at byte {}",
        file.version,
        table::count(file.bytes().len() as u64),
        file.metadata.len(),
        file.tensors.len(),
        file.alignment,
        file.data_start
    );
    outln!("\nmetadata");
    let meta: Vec<Vec<String>> = file
        .metadata
        .iter()
        .map(|(k, v)| vec![k.clone(), v.to_string()])
        .collect();
    table::print(&["key", "value"], &[false, false], &meta)?;

    let tensors = tensor::classify(file);
    let rows: Vec<Vec<String>> = tensors
        .iter()
        .map(|t| {
            let bytes = table::count(t.bytes);
            let decodable = match &t.plan {
                Plan::Decode(Rows::Empty { .. }) => "yes (empty)".to_owned(),
                Plan::Decode(_) if t.format.is_some() => "yes".to_owned(),
                Plan::Decode(_) => "yes (as data)".to_owned(),
                Plan::Refused(s, _) => format!("no ({})", s.name()),
                Plan::Broken(_, m) => format!("no: {m}"),
            };
            vec![
                t.info.name.clone(),
                format!("{} ({})", type_name(t.info.ggml_type), t.info.ggml_type),
                t.format_text(),
                t.info.shape_text(),
                bytes,
                decodable,
            ]
        })
        .collect();
    outln!("\ntensors");
    table::print(
        &[
            "tensor",
            "ggml type",
            "format",
            "shape",
            "bytes",
            "decodable",
        ],
        &[false, false, false, false, true, false],
        &rows,
    )?;
    let decodable = tensors
        .iter()
        .filter(|t| matches!(t.plan, Plan::Decode(_)))
        .count();
    let broken = tensors
        .iter()
        .filter(|t| matches!(t.plan, Plan::Broken(..)))
        .count();
    outln!(
        "\n{} tensors: {decodable} decodable, {} refused, {broken} malformed",
        tensors.len(),
        tensors.len() - decodable - broken
    );
    Ok(broken == 0)
}
