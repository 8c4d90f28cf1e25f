#!/bin/bash
# fit_variants.sh OCCAM OUTDIR — a refactor's check: 19 `occam fit` variants (each evidence loop and
# strategy, the exact Hessian, the Woodbury form, the GLM likelihoods, every Hessian structure, the
# online loop, VI, a committee, a noise network) on the test fixtures, each model predicted
# linearised and by Monte Carlo. Run it with the build before and after a change, then
#   python3 scripts/compare_fit_outputs.py BEFORE AFTER
# says which files differ (times and command lines aside).
set -euo pipefail
occam=$1
out=$2
here=$(cd "$(dirname "$0")/.." && pwd)
data=$here/tests/data
mkdir -p "$out"
R=$data/regression_train.csv
T=$data/regression_inputs.csv
C=$data/counts.csv
# 60 rows of 0/1 targets from a fixed seed, at the same path for every run (the report names it).
bernoulli=${TMPDIR:-/tmp}/occam-fit-variants/bernoulli.csv
mkdir -p "$(dirname "$bernoulli")"
python3 - > "$bernoulli" <<'PY'
import random
random.seed(3)
print("x1,x2,y")
for _ in range(60):
    a, b = random.gauss(0, 1), random.gauss(0, 1)
    print(f"{a:.4f},{b:.4f},{int(a + 0.5 * b + random.gauss(0, 0.7) > 0)}")
PY
run() {
  local name=$1
  shift
  "$occam" fit --quiet --out "$out/$name.model.json" --report "$out/$name.report.json" "$@" || echo "$name: fit failed"
  [ -f "$out/$name.model.json" ] || return 0
  for how in linearized mc; do
    # A noise network predicts linearised only, a Poisson model needs its offset column: refused, said.
    "$occam" predict --model "$out/$name.model.json" --data "$T" --out "$out/$name.$how.csv" --predictive "$how" \
      --samples 200 > /dev/null 2>&1 || echo "$name: predict $how refused"
  done
}
run joint --data "$R" --target y --hidden 5
run outer --data "$R" --target y --hidden 5 --evidence-loop outer
run periodic --data "$R" --target y --hidden 5 --hyper periodic
run quick --data "$R" --target y --hidden 5 --hyper quick
run fixed --data "$R" --target y --hidden 5 --hyper fixed --alpha 0.5 --beta 20
run exact --data "$R" --target y --hidden 5 --hessian exact
run woodbury --data "$R" --target y --hidden 30
run ard --data "$R" --target y --hidden 5 --prior ard
run linear --data "$R" --target y --model linear
run bernoulli --data "$bernoulli" --target y --likelihood bernoulli --hidden 4
run poisson --data "$C" --target count --likelihood poisson --offset log_exposure --hidden 3
run diag --data "$R" --target y --hidden 5 --hessian-structure diag
run last-layer --data "$R" --target y --hidden 5 --hessian-structure last-layer
run kron --data "$R" --target y --hidden 5 --hessian-structure kron
run lowrank --data "$R" --target y --hidden 5 --hessian-structure lowrank:6
run online --data "$R" --target y --hidden 5 --hessian-structure kron --evidence-loop online --epochs 20 --batch-size 16
run vi --data "$R" --target y --hidden 5 --method vi --vi-iterations 500
run committee --data "$R" --target y --hidden 5 --committee 3
run noise --data "$R" --target y --hidden 5 --noise-model network
