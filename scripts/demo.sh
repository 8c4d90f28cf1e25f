#!/usr/bin/env bash
# Fresh machine to `occam demo`: installs what is missing, builds, runs the built-in example.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
./build/occam demo --out-dir demo-output
