//! `ninfer`: inspect, decode and verify model files with the ninfer library.
//!
//! This binary is a workspace member of its own (`ninfer-cli`): its dependencies (argument
//! parsing, progress bars, .npy writing, file mapping) are never linked into libninfer.so.

mod cmd;
mod gguf;
mod rows;
mod table;
mod tensor;

use anyhow::Result;
use clap::{Parser, Subcommand};
use gguf::GgufFile;
use std::path::PathBuf;
use std::process::ExitCode;

/// The built-in sample: real Apache-2.0 weights (SmolLM2 Q8_0 embedding rows,
/// all-MiniLM-L6-v2 rows quantized by PyPI libgguf) made by scripts/fixtures/sample_gguf.py.
static SAMPLE: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/data/sample.gguf"
));

#[derive(Parser)]
#[command(
    name = "ninfer",
    version = ninfer::VERSION,
    about = "Inspect, decode and verify model files with the ninfer numeric formats library"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The closed format registry as a table.
    Formats,
    /// Metadata and every tensor of a GGUF file: format, shape, bytes, decodable.
    Inspect {
        /// The GGUF file (default: the built-in sample).
        file: Option<PathBuf>,
    },
    /// Decode one tensor to a little-endian f32 .npy of its logical shape.
    Decode {
        /// The GGUF file.
        file: PathBuf,
        /// Tensor name (see `ninfer inspect`).
        #[arg(long)]
        tensor: String,
        /// Output .npy path.
        #[arg(long)]
        out: PathBuf,
    },
    /// Validate and decode every tensor; per-type counts, non-finite values, throughput,
    /// and Σ(W·x) in f64 for every 2-D weight. Exits non-zero when a decodable tensor
    /// fails.
    Verify {
        /// The GGUF file (default: the built-in sample).
        file: Option<PathBuf>,
        /// Only the per-type table, refusals and failures.
        #[arg(long)]
        brief: bool,
    },
    /// Stream decoded tensors to stdout for test harnesses: per tensor a header line
    /// `name\tggml_type\tSTATUS\tn_values\tmessage`, then n_values f32 LE words if OK.
    #[command(hide = true)]
    Dump {
        /// The GGUF file.
        file: PathBuf,
        /// Only these tensors (repeatable; default: all).
        #[arg(long)]
        tensor: Vec<String>,
    },
}

fn open(file: &Option<PathBuf>) -> Result<(GgufFile, String)> {
    Ok(match file {
        Some(p) => (GgufFile::open(p)?, p.display().to_string()),
        None => (
            GgufFile::from_static(SAMPLE)?,
            "built-in sample (tests/data/sample.gguf)".to_owned(),
        ),
    })
}

fn run(cli: Cli) -> Result<bool> {
    match cli.command {
        Command::Formats => {
            cmd::formats::run();
            Ok(true)
        }
        Command::Inspect { file } => {
            let (f, label) = open(&file)?;
            cmd::inspect::run(&f, &label)
        }
        Command::Decode { file, tensor, out } => {
            let f = GgufFile::open(&file)?;
            cmd::decode::run(&f, &tensor, &out)?;
            Ok(true)
        }
        Command::Verify { file, brief } => {
            let (f, label) = open(&file)?;
            cmd::verify::run(&f, &label, &cmd::verify::Options { brief })
        }
        Command::Dump { file, tensor } => {
            let f = GgufFile::open(&file)?;
            cmd::decode::dump(&f, &tensor)?;
            Ok(true)
        }
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("ninfer: {e:#}");
            ExitCode::from(2)
        }
    }
}
