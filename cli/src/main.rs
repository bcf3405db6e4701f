//! `ninfer`: inspect, decode, verify, quantize and import model files with the ninfer
//! library, and benchmark its kernels.
//!
//! This binary is a workspace member of its own (`ninfer-cli`): its dependencies (argument
//! parsing, progress bars, .npy writing, file mapping) are never linked into libninfer.so.

/// `println!` for command output: a failed write to stdout (a full disk) becomes the
/// command's error (`ninfer: writing to stdout: …`, exit 2) instead of a panic.
macro_rules! outln {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout(), $($t)*).map_err(crate::stdout_error)?
    }};
}

/// `print!` for command output: see [`outln!`].
macro_rules! out {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        write!(std::io::stdout(), $($t)*).map_err(crate::stdout_error)?
    }};
}

mod alloc;
mod check;
mod cmd;
mod gguf;
mod imatrix;
mod import;
mod input;
mod rows;
mod st;
mod table;
mod tensor;

use anyhow::Result;
use clap::{Parser, Subcommand};
use gguf::GgufFile;
use st::StFile;
use std::path::PathBuf;
use std::process::ExitCode;

/// The built-in sample's `general.name`: a file with this name is checked against the
/// sample's reference checksums.
const SAMPLE_NAME: &str = "ninfer built-in sample";

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
    /// Metadata and every tensor of a GGUF or safetensors file: format, shape, bytes,
    /// decodable. Shapes print outermost dimension first, `[rows, cols]` for a matrix
    /// (numpy order; GGUF's `ne` reversed).
    Inspect {
        /// The GGUF or safetensors file (default: the built-in sample).
        file: Option<PathBuf>,
    },
    /// Decode one tensor to a little-endian f32 .npy of its logical shape.
    Decode {
        /// The GGUF or safetensors file.
        file: PathBuf,
        /// Tensor name (see `ninfer inspect`).
        #[arg(long)]
        tensor: String,
        /// Output .npy path.
        #[arg(long)]
        out: PathBuf,
    },
    /// Self-test of the library on a file and this machine: validate and decode every
    /// tensor, compare the decoded values with reference checksums (the built-in sample's,
    /// recorded with gguf-py; `--checksums`), and check `linear` (y = x·Wᵀ) of every 2-D
    /// weight on every CPU instruction set and CUDA device against an f64 oracle from the
    /// decoded rows (criterion linear_f32acc_v1), the paths bit for bit against each other.
    /// Prints per-type counts, non-finite values, throughput and Σ(W·x) in f64. Exits
    /// non-zero when a check fails.
    Verify {
        /// The GGUF or safetensors file (default: the built-in sample).
        file: Option<PathBuf>,
        /// Only the per-type table, refusals, failures and the summary.
        #[arg(long)]
        brief: bool,
        /// Reference checksums to compare the decoded values with: one line per tensor,
        /// `name ggml-type values fnv1a64-hex oracle` (FNV-1a 64 of the values' f32
        /// little-endian words in row order; the type: the ggml type name, or in a safetensors
        /// file the ninfer format name or dtype). A given list must cover every decoded
        /// tensor with its type. Default for the built-in sample and files
        /// whose general.name is the sample's: tests/data/sample.checksums, recorded with
        /// gguf-py.
        #[arg(long, value_name = "LIST")]
        checksums: Option<PathBuf>,
    },
    /// Encode the 2-D F32/BF16/F16 tensors of a safetensors or GGUF file into a registered
    /// format's planes, written as a safetensors file (docs/safetensors.md), with a
    /// per-tensor error report. Other tensors, and tensors the encoder refuses, are copied
    /// through unchanged (GGUF blocks of a gguf_* format as that format); exits 1 when a
    /// tensor was refused or none was encoded.
    Quantize {
        /// The input safetensors or GGUF file (GGUF: the shape of a tensor is its `ne`
        /// reversed, `[rows, K]` for a matrix).
        input: PathBuf,
        /// Target format: q4_g64_fp16, q5_g64_fp16, q6_g64_fp16, q8_g32_fp16,
        /// fp8_e4m3fn_row_bf16, fp8_e4m3fn_row_fp16 or nvfp4.
        #[arg(long)]
        format: String,
        /// Output safetensors path.
        #[arg(long)]
        out: PathBuf,
        /// Encoder method (search: grouped_search, grouped formats only).
        #[arg(long, value_enum, default_value = "absmax")]
        method: cmd::quantize::MethodArg,
        /// Encode only tensors whose name contains this substring (others are copied).
        #[arg(long)]
        tensors: Option<String>,
        /// grouped_search only: let negative scales compete (a group whose
        /// largest-magnitude value is positive can then use the most negative code).
        /// Recorded in each tensor's provenance.
        #[arg(long)]
        negative_scales: bool,
        /// grouped_search only: a llama.cpp importance matrix (llama-imatrix's GGUF or
        /// legacy .dat file). A weight with an entry of the same name is searched with
        /// that entry's per-input-channel importance (sum / count); its length must be K
        /// (else nothing is written, exit 2). A file none of whose entries names a searched
        /// matrix writes nothing (exit 1); an entry whose counts are all 0 weighs nothing.
        /// Recorded in each tensor's provenance.
        #[arg(long, value_name = "FILE")]
        imatrix: Option<PathBuf>,
    },
    /// Copy the FP8 per-channel and NVFP4 (compressed-tensors, ModelOpt) layers of a
    /// safetensors checkpoint, or the ternary TQ1_0/TQ2_0 tensors of a GGUF file
    /// (into t2_g128_fp16), into ninfer planes without requantizing; refused layers are
    /// reported and copied through (exit 1; a refused GGUF tensor: nothing written).
    Import {
        /// The input checkpoint (.safetensors or .gguf).
        input: PathBuf,
        /// Output safetensors path.
        #[arg(long)]
        out: PathBuf,
        /// Target of FP8 per-channel layers.
        #[arg(long, value_enum, default_value = "auto")]
        fp8_format: cmd::import::Fp8Target,
        /// Treat 2-D F32/BF16/F16 `P.weight` tensors as ternary: codes −1/0/+1 with
        /// `P.weight_scale`, or values ±s per 128-value group without one.
        #[arg(long)]
        ternary_values: bool,
        /// With --ternary-values: only weights whose name contains this substring.
        #[arg(long)]
        tensors: Option<String>,
        /// How a ternary layer's `weight_scale` s applies: value = code / s (divide,
        /// transformers' BitLinear) or code × s (multiply, AutoBitLinear).
        #[arg(long, value_enum, default_value = "divide")]
        ternary_scale: cmd::import::TernaryScaleArg,
    },
    /// Measure the library's kernels on this machine (speed only; see docs/linear.md).
    Bench {
        #[command(subcommand)]
        what: Bench,
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

#[derive(Subcommand)]
enum Bench {
    /// Throughput of y = x · Wᵀ per format, threads, M and shape, against ggml's vec_dot.
    ///
    /// Per format: ms, GMAC/s, weight GB/s, the fraction of this machine's read bandwidth
    /// and ggml's own vec_dot (when its build is found), all measured in the same run,
    /// with a verdict line per format and shape against the performance targets of
    /// docs/linear.md ("Performance") and a summary.
    /// Progress on stderr, results on stdout.
    Linear(cmd::bench::LinearArgs),
}

/// The error of a failed write to stdout.
pub(crate) fn stdout_error(e: std::io::Error) -> anyhow::Error {
    anyhow::anyhow!("writing to stdout: {e}")
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

/// The path when it names a safetensors file (by extension or header).
fn safetensors_path(file: &Option<PathBuf>) -> Option<&std::path::Path> {
    file.as_deref().filter(|p| st::is_safetensors(p))
}

fn run(cli: Cli) -> Result<bool> {
    match cli.command {
        Command::Formats => {
            cmd::formats::run()?;
            Ok(true)
        }
        Command::Inspect { file } => match safetensors_path(&file) {
            Some(p) => cmd::st_files::inspect(&StFile::open(p)?, &p.display().to_string()),
            None => {
                let (f, label) = open(&file)?;
                cmd::inspect::run(&f, &label)
            }
        },
        Command::Decode { file, tensor, out } => {
            input::check_out(&file, &out)?;
            if st::is_safetensors(&file) {
                cmd::st_files::decode(&StFile::open(&file)?, &tensor, &out)?;
            } else {
                let f = GgufFile::open(&file)?;
                cmd::decode::run(&f, &tensor, &out)?;
            }
            Ok(true)
        }
        Command::Verify {
            file,
            brief,
            checksums,
        } => {
            let checksums = match &checksums {
                Some(p) => Some(check::Checksums::read(p)?),
                None => None,
            };
            match safetensors_path(&file) {
                Some(p) => cmd::st_files::verify(
                    &StFile::open(p)?,
                    &p.display().to_string(),
                    &cmd::verify::Options { brief, checksums },
                ),
                None => {
                    let (f, label) = open(&file)?;
                    // The built-in sample, or a copy of it (by its general.name): its own
                    // list unless one is given.
                    let named = matches!(f.meta("general.name"),
                        Some(gguf::Value::Str(s)) if s == SAMPLE_NAME);
                    let checksums = match checksums {
                        None if f.bytes() == SAMPLE || named => Some(check::Checksums::parse(
                            check::SAMPLE_CHECKSUMS,
                            if f.bytes() == SAMPLE {
                                "the built-in sample's reference list (tests/data/sample.checksums)"
                            } else {
                                "the built-in sample's reference list (tests/data/sample.checksums; \
                                 the file's general.name is the sample's)"
                            },
                        )?),
                        c => c,
                    };
                    cmd::verify::run(&f, &label, &cmd::verify::Options { brief, checksums })
                }
            }
        }
        Command::Quantize {
            input,
            format,
            out,
            method,
            tensors,
            negative_scales,
            imatrix,
        } => {
            let f = ninfer::Format::from_name(&format)
                .map_err(|e| anyhow::anyhow!("--format {format:?}: {e}"))?;
            let search = cmd::quantize::SearchArgs {
                negative_scales,
                imatrix: imatrix.as_deref().map(imatrix::Imatrix::open).transpose()?,
            };
            cmd::quantize::run(&input, f, method, &search, &out, tensors.as_deref())
        }
        Command::Import {
            input,
            out,
            fp8_format,
            ternary_values,
            tensors,
            ternary_scale,
        } => cmd::import::run(
            &input,
            &out,
            fp8_format,
            &cmd::import::TernaryArgs {
                values: ternary_values,
                filter: tensors,
                multiply: ternary_scale == cmd::import::TernaryScaleArg::Multiply,
            },
        ),
        Command::Bench {
            what: Bench::Linear(args),
        } => cmd::bench::linear(&args),
        Command::Dump { file, tensor } => {
            let f = GgufFile::open(&file)?;
            cmd::decode::dump(&f, &tensor)?;
            Ok(true)
        }
    }
}

fn main() -> ExitCode {
    // `ninfer inspect FILE | head`: when the reader goes away, end quietly as other Unix
    // tools do (killed by SIGPIPE) instead of panicking on the failed write. Rust ignores
    // SIGPIPE by default; restore the default action.
    #[cfg(unix)]
    // SAFETY: called first in main, before any thread exists; SIG_DFL is a valid action.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let result = run(Cli::parse()).and_then(|ok| {
        // What is still buffered (a line without its newline) fails here, not silently at exit.
        use std::io::Write as _;
        std::io::stdout().flush().map_err(stdout_error)?;
        Ok(ok)
    });
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("ninfer: {e:#}");
            ExitCode::from(2)
        }
    }
}
