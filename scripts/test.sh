#!/usr/bin/env bash
# Fresh machine to a passing test suite: installs what is missing, builds, runs ctest.
# OCCAM_SANITIZE=1 builds and tests the ASan + UBSan configuration in build-sanitize/ instead
# (the library in unity batches, as the default build: the sanitizers check at run time, and the
# batches take the library's compiles from ~90 to ~12).
# The `pip install .` test (label packaging) builds occam once more from a fresh clone, minutes
# that the default suite leaves out; OCCAM_TEST_PACKAGING=1 runs it too (or `ctest -L packaging`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --mpi
if [ "${OCCAM_SANITIZE:-0}" = 1 ]; then
  export OCCAM_BUILD_DIR=build-sanitize
  bash scripts/build.sh -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOCCAM_SANITIZE=ON -DOCCAM_BUILD_BENCH=OFF -DOCCAM_UNITY_BUILD=ON
else
  bash scripts/build.sh -DOCCAM_UNITY_BUILD=ON
fi
cd "${OCCAM_BUILD_DIR:-build}"
exclude=(-LE packaging)
[ "${OCCAM_TEST_PACKAGING:-0}" = 1 ] && exclude=()
ctest --output-on-failure --timeout 900 -j "$(nproc)" "${exclude[@]}"
