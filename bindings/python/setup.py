"""Builds libninfer with cargo and bundles it into the package, so that
``pip install ./bindings/python`` gives an importable ``ninfer`` with no NINFER_LIBRARY.

The Rust sources are the repository two levels up (or ``$NINFER_SOURCE_DIR``); cargo
builds ``target/release/libninfer.so`` there (``$CARGO_TARGET_DIR`` is honoured), and the
wheel carries it as ``ninfer/libninfer.so.0``. ``NINFER_CARGO_FEATURES=cuda`` builds the
CUDA-enabled library (NVRTC needed at build time, see the repository's README).
"""

import os
import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        src = Path(os.environ.get("NINFER_SOURCE_DIR", Path(__file__).resolve().parents[2]))
        if not (src / "Cargo.toml").exists():
            raise SystemExit(f"ninfer: no Rust sources at {src} (set NINFER_SOURCE_DIR)")
        cmd = ["cargo", "build", "--release", "-p", "ninfer", "--lib"]
        features = os.environ.get("NINFER_CARGO_FEATURES")
        if features:
            cmd += ["--features", features]
        subprocess.run(cmd, cwd=src, check=True)
        target = Path(os.environ.get("CARGO_TARGET_DIR", src / "target"))
        if not target.is_absolute():
            target = src / target
        out = Path(self.build_lib) / "ninfer"
        out.mkdir(parents=True, exist_ok=True)
        shutil.copy2(target / "release" / "libninfer.so", out / "libninfer.so.0")


class BinaryDistribution(Distribution):
    """The wheel holds a native library: platform-specific, not pure Python."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildWithLibrary}, distclass=BinaryDistribution)
