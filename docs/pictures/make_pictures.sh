#!/usr/bin/env bash
# Remakes the pictures in docs/pictures (docs/plotting.md) from the built-in example's data:
#   bash docs/pictures/make_pictures.sh [build/occam]
# gnuplot's (occam plot) as *.png, matplotlib's (occam.plot_*) as python_*.png; the run takes
# about a minute on one core. PYTHON names a Python that imports occam and matplotlib.
set -euo pipefail
cd "$(dirname "$0")/../.."
occam=$(realpath "${1:-build/occam}")
out=$(pwd)/docs/pictures
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
"$occam" demo --out-dir demo > /dev/null
"$occam" fit --data demo/data.csv --target y --hidden 10 --out model.json --report report.json --quiet
"$occam" sample --data demo/data.csv --target y --hidden 3 --chains 4 --warmup 500 --draws 500 --seed 1 \
  --out run --quiet
"$occam" plot model.json --data demo/test.csv --out-dir pictures
"$occam" plot report.json --out-dir pictures
"$occam" plot run --out-dir pictures
cp pictures/*.png "$out/"
"${PYTHON:-python3}" - "$out" <<'PY'
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

import occam

out = sys.argv[1]
test = pd.read_csv("demo/test.csv")
model = occam.load_model("model.json")
for name, draw in [("calibration", lambda: occam.plot_calibration(model, test[["x"]], test["y"])),
                   ("evidence", lambda: occam.plot_evidence("report.json"))]:
    axes = draw()
    axes = axes if hasattr(axes, "__len__") else [axes]
    axes[0].figure.savefig(f"{out}/python_{name}.png", dpi=80)
    plt.close("all")
PY
