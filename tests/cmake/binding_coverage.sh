#!/usr/bin/env bash
# Prints which ninfer_* exports of include/ninfer.h each binding calls (informational: a
# new export shows up as "-" until its wrappers are written).
set -euo pipefail
cd "$(dirname "$0")/../.."
fns=$(grep -oE '^[a-z0-9_ ]+[ *]ninfer_[a-z0-9_]+\(' include/ninfer.h | sed -E 's/.*(ninfer_[a-z0-9_]+)\($/\1/' | sort -u)
printf '%-34s %5s %5s %5s %6s\n' export c++ go zig python
missing=0
for f in $fns; do
  row=""
  for src in include/ninfer.hpp "bindings/go/*.go" bindings/zig/src/ninfer.zig bindings/python/ninfer/__init__.py; do
    # shellcheck disable=SC2086
    if grep -q -- "$f\b" $src 2>/dev/null || grep -q -- "\"$f\"" $src 2>/dev/null; then row+="    x "; else row+="    - "; missing=$((missing + 1)); fi
  done
  printf '%-34s%s\n' "$f" "$row"
done
echo "($(echo "$fns" | wc -w) exports; $missing export/binding pairs not wrapped)"
