//! Codecs, one module per format family of the spec. Codecs are pure functions over bytes:
//! no I/O, no global state, no allocation in per-element loops.

pub mod direct;
pub mod float_source;
pub mod fp8_row;
pub mod gguf;
pub mod grouped;
pub mod import;
pub mod nvfp4;
