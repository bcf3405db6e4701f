//! `linear` on NVIDIA GPUs: the kernels' sources (`kernels/`, CUDA C++ whose arithmetic is
//! `__host__ __device__`), the weight descriptor they read ([`abi`]), and the host build of
//! their arithmetic that the tests compare with the CPU path bit for bit (`host/`).

#[cfg(any(all(test, target_arch = "x86_64"), feature = "cuda"))]
pub(crate) mod abi;
// The host harness is built with the host's `c++` and loaded into the test process, so it
// runs where the tests run natively (not in the cross-built aarch64 job under qemu).
#[cfg(all(test, feature = "cuda"))]
mod device_tests;
#[cfg(all(test, target_arch = "x86_64"))]
mod host;
#[cfg(all(test, any(target_arch = "x86_64", feature = "cuda")))]
mod testdata;
#[cfg(feature = "cuda")]
pub(crate) mod weight;
