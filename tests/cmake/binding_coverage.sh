#!/usr/bin/env bash
# Checks that every ninfer_* export of include/ninfer.h is called by each wrapper: the C++
# header, the Go, Zig and Python bindings. Exits 1 when a pair is missing (run by
# scripts/packaging-test.sh, so a new export without its wrappers fails CI).
#
#   tests/cmake/binding_coverage.sh           # the missing pairs and a summary line
#   tests/cmake/binding_coverage.sh --table   # the whole export × binding table
#
# The export list is the header's declarations, cross-checked against the Rust
# `extern "C" fn ninfer_*` items of src/ (a declaration the header parse misses fails too).
# A wrapper counts only as a call in the binding's library code, not a mention in a comment
# or a call from its tests:
#   C++     `::ninfer_x` in include/ninfer.hpp (a call, or the deleter of ninfer::handle)
#   Go      `ninfer_x(` in bindings/go/*.go except *_test.go (C.ninfer_x( or a cgo shim)
#   Zig     `c.ninfer_x(` in bindings/zig/src/ninfer.zig before its first `test "` block
#   Python  `_y = _declare("ninfer_x", ...)` and a call `_y(` in bindings/python/ninfer/
set -euo pipefail
cd "$(dirname "$0")/../.."
table=0
case "${1:-}" in
  --table) table=1 ;;
  "") ;;
  *) echo "usage: $0 [--table]" >&2; exit 2 ;;
esac

fns=$(grep -oE '^[a-z0-9_ ]+[ *]ninfer_[a-z0-9_]+\(' include/ninfer.h |
  sed -E 's/.*(ninfer_[a-z0-9_]+)\($/\1/' | sort -u)
rust=$(grep -rhoE 'extern "C" fn ninfer_[a-z0-9_]+' src | sed 's/.* //' | sort -u)
if [ -z "$fns" ] || [ "$fns" != "$rust" ]; then
  echo "binding_coverage: the header's declarations and src/'s extern \"C\" exports differ:" >&2
  diff <(echo "$fns") <(echo "$rust") >&2 || true
  exit 1
fi

go_src=$(ls bindings/go/*.go | grep -v '_test\.go$' | xargs cat)
zig_src=$(sed '/^test "/,$d' bindings/zig/src/ninfer.zig)
py_src=$(cat bindings/python/ninfer/*.py)
cpp_src=$(cat include/ninfer.hpp)

wrapped() { # binding export
  case "$1" in
    c++) grep -qE "::$2\\b" <<<"$cpp_src" ;;
    go) grep -qE "\\b$2\\(" <<<"$go_src" ;;
    zig) grep -qF "c.$2(" <<<"$zig_src" ;;
    python)
      local var
      var=$(sed -nE "s/^(_[A-Za-z0-9_]+) = _declare\\(\"$2\".*/\\1/p" <<<"$py_src" | head -1)
      [ -n "$var" ] && grep -qE "(^|[^A-Za-z0-9_])$var\\(" <<<"$py_src"
      ;;
  esac
}

bindings="c++ go zig python"
[ $table = 1 ] && printf '%-34s %5s %5s %5s %6s\n' export c++ go zig python
missing=0
for f in $fns; do
  row=""
  for b in $bindings; do
    if wrapped "$b" "$f"; then row+="    x "; else
      row+="    - "
      missing=$((missing + 1))
      [ $table = 1 ] || echo "missing: $f in $b"
    fi
  done
  [ $table = 1 ] && printf '%-34s%s\n' "$f" "$row"
done
echo "($(echo "$fns" | wc -w) exports × 4 wrappers; $missing export/binding pairs not wrapped)"
[ $missing = 0 ]
