//! # ninfer: the persistent numeric tensor formats of `.ninfer` artifacts
//!
//! Codecs, reference encoders and matrix products for every format of the closed registry
//! of the NInfer reference *Persistent numeric tensor formats* (the spec, restated with its
//! section numbers in docs/formats.md), with a stable C ABI (`include/ninfer.h`).
//!
//! | spec | module |
//! |---|---|
//! | §1–§2 registry, layouts, legal pairs | [`registry`], [`layouts`] |
//! | structural checks of a payload | [`view`] |
//! | §3.1 bf16 / fp32 / int32 | [`formats::direct`] |
//! | §3.2, §4–§6 grouped signed-integer codes and scales, validator | [`formats::grouped`] |
//! | §7.2 grouped_absmax, §7.3 grouped_search | [`formats::grouped::absmax`], [`formats::grouped::search`] |
//! | row_split_k128_v1 layout (docs/layouts.md) | [`layouts::row_split`] |
//! | §3.3 E4M3FN and E2M1 words | [`words`] |
//! | §3.3 nvfp4, its quantizer | [`formats::nvfp4`], [`layouts::block_scale`] |
//! | §3.4 fp8_e4m3fn_row_*, fp8_row_maxabs | [`formats::fp8_row`], [`layouts::fp8_row`] |
//! | GGUF block formats (after §3.4) | [`formats::gguf`] |
//! | row decoding to f32/bf16/f16 | [`decode`] |
//! | §2 compute profile, §8: y = x · Wᵀ | [`linear`] |
//! | checking a product: q8_1 and q8_K activations, dense conversions | [`reference`](mod@reference) |
//! | encoding validation of a payload | [`validate`] |
//! | row slices and gathers (whole rows copied) | [`rows`] |
//! | C ABI | `ffi` (C names `ninfer_*`) |
//!
//! Every operation takes a [`WeightView`]: format, layout, logical shape [N, K] and the
//! byte planes that layout defines, checked once when the view is built.

pub mod cuda;
pub mod decode;
pub mod dtype;
pub mod error;
pub mod formats;
pub mod fpenv;
/// cbindgen:ignore
pub(crate) mod isa;
pub mod layouts;
pub mod linear;
pub mod reference;
pub mod registry;
pub mod rows;
mod threads;
pub mod validate;
pub mod view;
/// cbindgen:ignore
pub mod words;

mod ffi;

pub use dtype::Dtype;
pub use error::{Error, Location, Result, Status};
pub use isa::Isa;
pub use registry::{Category, Format, FormatInfo, Layout, ScaleType};
pub use view::WeightView;

/// The library version (the Cargo package version), e.g. `"0.1.0"`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
