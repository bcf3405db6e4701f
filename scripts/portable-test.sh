#!/usr/bin/env bash
# The portable (non-x86) build: clippy for aarch64-unknown-linux-gnu, then the library's
# unit and integration tests cross-compiled for it and run under qemu-user. On aarch64
# every kernel takes its scalar reference path, so this runs that path end to end
# against the same oracles, in a debug build (integer overflow checks on).
# Installs what it needs: the Rust target, the cross linker and qemu (Debian packages).
set -euo pipefail
cd "$(dirname "$0")/.."

target=aarch64-unknown-linux-gnu
if ! rustup target list --installed | grep -qx "$target"; then
  rustup target add "$target"
fi
if ! command -v aarch64-linux-gnu-gcc >/dev/null || ! command -v qemu-aarch64 >/dev/null; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq gcc-aarch64-linux-gnu qemu-user >/dev/null
fi
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L /usr/aarch64-linux-gnu"

cargo clippy -q -p ninfer --target "$target" --all-targets -- -D warnings

# Every integration test but c_api, which links C programs with the host's compiler and
# reads the library with the host's readelf (it runs in the native suite).
tests=()
for f in tests/*.rs; do
  name=$(basename "$f" .rs)
  [ "$name" = c_api ] || tests+=(--test "$name")
done
cargo test -q -p ninfer --target "$target" --lib "${tests[@]}"
