"""The extension module for pip: the same source and flags as python/CMakeLists.txt (the build
that CI runs). Installed with `python3 -m pip install --no-build-isolation ./python` after
scripts/setup.sh (docs/python.md)."""

import platform
from pathlib import Path

from pybind11.setup_helpers import Pybind11Extension, build_ext
from setuptools import setup

here = Path(__file__).resolve().parent
include = here.parent / "include"
if not (include / "ccf" / "ccf.hpp").exists():
    raise SystemExit(f"ccf: the library's headers are not at {include}; build from a ccf checkout")

# The project's target (CMakeLists.txt, CCF_MARCH): x86-64-v3 on x86-64, the default elsewhere.
march = ["-march=x86-64-v3"] if platform.machine() in ("x86_64", "AMD64") else []

setup(
    ext_modules=[
        Pybind11Extension(
            "ccf._ccf",
            ["src/ccf_module.cpp"],
            include_dirs=[str(include)],
            cxx_std=20,
            extra_compile_args=["-O3", *march],
        )
    ],
    cmdclass={"build_ext": build_ext},
)
