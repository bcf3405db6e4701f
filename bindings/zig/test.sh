#!/usr/bin/env bash
# zig build test of the Zig binding against an installed libninfer (PKG_CONFIG_PATH must
# name its pkgconfig directory). Zig comes from PyPI `ziglang` (installed when missing).
# The first translate-c takes minutes; the cache (bindings/zig/.zig-cache, ~/.cache/zig)
# makes later runs fast.
set -euo pipefail
cd "$(dirname "$0")"
if ! python3 -m ziglang version >/dev/null 2>&1; then
  python3 -m pip install -q --disable-pip-version-check "ziglang>=0.17,<0.18"
fi
pkg-config --exists ninfer || { echo "pkg-config cannot find ninfer (PKG_CONFIG_PATH?)" >&2; exit 1; }
echo "zig $(python3 -m ziglang version)"
python3 -m ziglang fmt --check build.zig build.zig.zon src
python3 -m ziglang build test --summary all
