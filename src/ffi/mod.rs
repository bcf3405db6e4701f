//! The C ABI: the only place with `extern "C"`. Each export checks its pointers and
//! lengths, builds safe Rust values, calls the library and maps the result to a
//! `ninfer_status` through [`boundary::call`]. No arithmetic lives here.
//!
//! Conventions (README, "The C API at a glance"): status 0 is success; on failure the
//! thread-local message is readable with `ninfer_last_error_message`; enums travel as
//! `uint32_t` and unknown numbers are refused; `(ptr, len)` pairs accept NULL only with
//! length 0; outputs are written only on success.

#![allow(non_camel_case_types)]

pub(crate) mod boundary;
mod cuda;
mod decode;
mod fp8;
mod import;
mod linear;
mod nvfp4;
mod quantize;
mod reference;
mod registry;
mod rows;
mod validate;
mod version;
mod view;
