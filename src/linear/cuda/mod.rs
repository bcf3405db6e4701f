//! `linear` on NVIDIA GPUs: the kernels' sources (`kernels/`, CUDA C++ whose arithmetic is
//! `__host__ __device__`), the weight descriptor they read ([`abi`]), and the host build of
//! their arithmetic that the tests compare with the CPU path bit for bit (`host/`).

#[cfg(any(test, feature = "cuda"))]
pub(crate) mod abi;
#[cfg(test)]
mod host;
