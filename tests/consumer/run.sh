#!/usr/bin/env bash
# Installs a built occam into a temporary prefix with `cmake --install`, then builds the example
# of docs/library.md against that prefix as a separate project: through find_package(occam) (the
# shared and the static library, with and without -march=native) and through pkg-config; runs
# every build. Usage: run.sh BUILD_DIR SOURCE_DIR CXX
set -euo pipefail
build_dir=$1
source_dir=$2
cxx=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
# The example: the first ```cpp block of docs/library.md.
awk '/^```cpp$/ { inside = 1; next } /^```$/ { if (inside) exit } inside' "$source_dir/docs/library.md" >"$work/example.cc"
test -s "$work/example.cc"

generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
launcher=()
if command -v ccache >/dev/null 2>&1; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S "$source_dir/tests/consumer" -B "$work/build" "${generator[@]}" "${launcher[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$work/prefix" -DEXAMPLE_SOURCE="$work/example.cc" >/dev/null
cmake --build "$work/build" --parallel 2 >/dev/null

# pkg-config, the way a Makefile would use it.
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig:$work/prefix/lib/$(gcc -print-multiarch 2>/dev/null)/pkgconfig"
libdir=$(pkg-config --variable=libdir occam)
# shellcheck disable=SC2046
"$cxx" -std=c++20 -O2 "$work/example.cc" -o "$work/example_pkgconfig" $(pkg-config --cflags --libs occam) \
  -Wl,-rpath,"$libdir"

for program in "$work/build/example_shared" "$work/build/example_native" "$work/build/example_static_native" \
               "$work/example_pkgconfig"; do
  output=$("$program")
  echo "$(basename "$program"):"
  echo "$output"
  grep -q "log-evidence" <<<"$output"
done
