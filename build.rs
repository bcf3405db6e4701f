//! Sets the SONAME of the shared library: plain cargo sets none, and C users link against
//! `libninfer.so.0` so that an ABI-compatible update replaces the file in place.
fn main() {
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os == "linux" {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libninfer.so.0");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
