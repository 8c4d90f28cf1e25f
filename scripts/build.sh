#!/usr/bin/env bash
# Configures and builds occam in build/ (Release, portable: no -march=native). Extra arguments go
# to CMake, e.g. `scripts/build.sh -DOCCAM_NATIVE=ON` for this machine's CPU (docs/library.md).
# OCCAM_BUILD_DIR picks another folder. Uses ccache when it is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${OCCAM_BUILD_DIR:-build}
generator=()
if [ ! -f "$build_dir/CMakeCache.txt" ] && command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
# ccache, where installed, makes rebuilds of unchanged files free; it is optional.
launcher=()
if command -v ccache >/dev/null 2>&1; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B "$build_dir" "${generator[@]}" "${launcher[@]}" "$@" >/dev/null
cmake --build "$build_dir" --parallel "$(nproc)"
