#!/usr/bin/env bash
# Configures and builds occam in build/ (Release, portable: no -march=native). Extra arguments go
# to CMake, e.g. `scripts/build.sh -DOCCAM_NATIVE=ON` for this machine's CPU (docs/library.md).
# OCCAM_BUILD_DIR picks another folder; OCCAM_TARGETS builds only those targets (scripts/demo.sh:
# occam_cli, the command-line tool). Uses ccache when it is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${OCCAM_BUILD_DIR:-build}
generator=()
if [ ! -f "$build_dir/CMakeCache.txt" ] && command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
# ccache, where installed, makes rebuilds of unchanged files free; it is optional. pcg_extras.hpp
# expands __TIME__ (in a seed occam never uses), which without time_macros would make every
# compile that includes it a cache miss; ccache caches compiles that use a precompiled header
# (OCCAM_PRECOMPILED_HEADERS) only with pch_defines and time_macros.
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros}
fi
cmake -S . -B "$build_dir" "${generator[@]}" "${launcher[@]}" "$@" >/dev/null
targets=()
for target in ${OCCAM_TARGETS:-}; do targets+=(--target "$target"); done
cmake --build "$build_dir" --parallel "$(nproc)" "${targets[@]}"
# The Python package, when it was built (OCCAM_PYTHON): importable by /usr/bin/python3 from this
# build through a .pth file in the user's site-packages (`python3 -c "import occam"`).
if compgen -G "$build_dir/python/occam/_occam*.so" >/dev/null && [ -x /usr/bin/python3 ]; then
  site=$(/usr/bin/python3 -m site --user-site)
  mkdir -p "$site"
  (cd "$build_dir/python" && pwd) > "$site/occam.pth"
fi
