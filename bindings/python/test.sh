#!/usr/bin/env bash
# Tests of the Python ctypes binding (unittest; needs numpy and gguf from
# scripts/requirements.txt). The library: $NINFER_LIBRARY, else the system loader path.
set -euo pipefail
cd "$(dirname "$0")"
PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" python3 -m unittest discover -s tests -v
