"""Builds occam's Python extension (occam._occam) and its command-line tool through CMake for
`pip install .` (pyproject.toml). The CMake build lives in OCCAM_PIP_BUILD_DIR (default build-pip/
in the source tree, apart from scripts/build.sh's build/); ccache is used when installed. Only the
two targets the package needs are built, without the tests and benchmarks, the library in unity
batches (docs/library.md, "Build time")."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def version():
    match = re.search(r"project\(occam VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text())
    return match.group(1)


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = Path(os.environ.get("OCCAM_PIP_BUILD_DIR", ROOT / "build-pip")).resolve()
        configure = ["cmake", "-S", str(ROOT), "-B", str(build_dir), "-DCMAKE_BUILD_TYPE=Release",
                     "-DOCCAM_BUILD_TESTS=OFF", "-DOCCAM_BUILD_BENCH=OFF", "-DOCCAM_PYTHON=ON",
                     "-DOCCAM_UNITY_BUILD=ON",
                     f"-DOCCAM_PYTHON_EXECUTABLE={sys.executable}"]
        if shutil.which("ninja") and not (build_dir / "CMakeCache.txt").exists():
            configure += ["-G", "Ninja"]
        if shutil.which("ccache"):
            configure.append("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
        env = dict(os.environ)
        env.setdefault("CCACHE_SLOPPINESS", "pch_defines,time_macros")  # as scripts/build.sh
        subprocess.run(configure, check=True, env=env)
        subprocess.run(["cmake", "--build", str(build_dir), "--target", "occam_python", "occam_cli",
                        "--parallel", str(os.cpu_count() or 1)], check=True, env=env)
        # The module beside the Python files, and the tool inside the package (occam._command runs it).
        module = next((build_dir / "python" / "occam").glob("_occam*.so"))
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(module, target)
        tool = target.parent / "bin" / "occam"
        tool.parent.mkdir(exist_ok=True)
        shutil.copy2(build_dir / "occam", tool)


setup(version=version(), ext_modules=[CMakeExtension("occam._occam")], cmdclass={"build_ext": CMakeBuild},
      options={"build": {"build_base": "build-pip/setuptools"}})
