#!/usr/bin/env bash
# Fresh machine to `occam demo`: installs what is missing, builds the command-line tool alone (all
# cores; scripts/test.sh builds the rest), runs the built-in example.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
OCCAM_TARGETS=occam_cli bash scripts/build.sh -DOCCAM_UNITY_BUILD=ON
./build/occam demo --out-dir demo-output
