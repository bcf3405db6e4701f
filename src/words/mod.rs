//! Scalar floating-point words of the block- and row-scaled formats (spec §3.3): exact
//! decoding of every word and round-to-nearest-even encoders from binary32 with an explicit
//! saturation policy.
//!
//! BF16 and binary16 words use the `half` crate (RNE, no flush-to-zero); this module holds
//! the two 8- and 4-bit words `half` does not have.

pub mod e2m1;
pub mod e4m3fn;
