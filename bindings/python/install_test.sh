#!/usr/bin/env bash
# `pip install ./bindings/python` into a fresh virtual environment gives an importable
# package that carries its own libninfer (no NINFER_LIBRARY, no LD_LIBRARY_PATH), whose
# decode, forward (1-D and 2-D x) and reprs work. Run by scripts/packaging-test.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=$(mktemp -d "${TMPDIR:-/tmp}/ninfer-venv.XXXXXX")
trap 'rm -rf "$venv"' EXIT
# The venv sees the system's numpy (no download) but installs ninfer itself.
python3 -m venv --system-site-packages "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check ./bindings/python
cd "$venv"
env -u NINFER_LIBRARY -u LD_LIBRARY_PATH "$venv/bin/python" - <<'PY'
import numpy as np, ninfer, os
path = ninfer.library_path()
assert os.path.dirname(path) == os.path.dirname(ninfer.__file__), path
assert "site-packages" in path, path
w = np.array([[1.0, 2.0], [3.0, -4.0]], np.float32)
v = ninfer.WeightView("fp32", 2, 2, [w])
r = repr(v)
assert r == "WeightView('fp32', 'contiguous_le_v1', shape=[2, 2], planes=[16] bytes)", r
assert "bits_per_weight=" in repr(ninfer.format_info("q4_g64_fp16"))
with ninfer.Linear(v) as lin:
    y1 = lin.forward(np.array([1.0, 0.5], np.float32))
    y2 = lin.forward(np.array([[1.0, 0.5]], np.float32))
assert y1.shape == (2,) and y2.shape == (1, 2), (y1.shape, y2.shape)
np.testing.assert_array_equal(y1, [2.0, 1.0])
np.testing.assert_array_equal(y2[0], y1)
print("pip install: ok,", path)
PY
