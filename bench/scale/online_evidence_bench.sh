#!/usr/bin/env bash
# The online evidence fit of docs/scale.md ("Minibatch MAP and online evidence"): ROWS rows (default
# 20,000) of the smooth synthetic regression with noise s.d. 0.1 (bench/scale/smooth_regression.py),
# a 20-HIDDEN-1 tanh network (default 128,128), the KFAC (kron) online evidence loop by Adam on
# minibatches, one core (taskset -c 0, one thread). Prints the CPU time and peak memory (GNU time),
# the termination, the recovered noise s.d. in the target's units (the report's β is in standardised
# units: s.d.(y)/√β), and the test RMSE against the noise-free targets of 5,000 fresh rows.
#
#   bash scripts/build.sh && bash bench/scale/online_evidence_bench.sh [OUT_DIR]
#   EPOCHS=40 BATCH=128 RATE=1e-3 BURN_IN=5 EVERY=5 STEPS=50 bash bench/scale/online_evidence_bench.sh
#   CURVATURE_ROWS=2000 ...   # each round's curvature from a fresh sample of that many rows (0: all)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-/tmp/occam-online-bench}
rows=${ROWS:-20000}; hidden=${HIDDEN:-128,128}; structure=${STRUCTURE:-kron}
epochs=${EPOCHS:-40}; batch=${BATCH:-128}; rate=${RATE:-1e-3}; schedule=${SCHEDULE:-cosine}
burn_in=${BURN_IN:-5}; every=${EVERY:-5}; steps=${STEPS:-50}; curvature_rows=${CURVATURE_ROWS:-0}
occam=$(realpath "${OCCAM:-build/occam}")
mkdir -p "$out"
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ), git $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(lscpu | sed -n 's/^Model name: *//p' | head -1), load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
train="$out/smooth_$rows.csv"; test="$out/smooth_test.csv"
[ -s "$train" ] || /usr/bin/python3 bench/scale/smooth_regression.py "$rows" "$train" 1 0.1
[ -s "$test" ] || /usr/bin/python3 bench/scale/smooth_regression.py 5000 "$test" 2 0
tag="online_${structure}_${rows}_c${curvature_rows}"
set -x
taskset -c 0 /usr/bin/time -v "$occam" fit --data "$train" --target y --hidden "$hidden" --method laplace \
  --hessian-structure "$structure" --evidence-loop online --optimizer adam --epochs "$epochs" --batch-size "$batch" \
  --learning-rate "$rate" --lr-schedule "$schedule" --burn-in "$burn_in" --evidence-every "$every" \
  --hyper-steps "$steps" --curvature-rows "$curvature_rows" --threads 1 --out "$out/$tag.json" \
  --report "$out/$tag.report.json" --progress none \
  2> "$out/$tag.time" || { cat "$out/$tag.time"; exit 1; }
"$occam" predict --model "$out/$tag.json" --data "$test" --out "$out/$tag.pred.csv"
set +x
grep -E "User time|System time|Elapsed|Maximum resident" "$out/$tag.time"
/usr/bin/python3 - "$train" "$test" "$out/$tag.pred.csv" "$out/$tag.report.json" <<'PY'
import csv, json, sys
import numpy as np
train, test, pred, report = sys.argv[1:5]
y = np.loadtxt(train, delimiter=",", skiprows=1, usecols=20)
f = np.loadtxt(test, delimiter=",", skiprows=1, usecols=20)
with open(pred) as fh:
    rows = list(csv.DictReader(fh))
column = "mean" if "mean" in rows[0] else list(rows[0])[0]
mean = np.array([float(r[column]) for r in rows])
r = json.load(open(report))
o = r["optimality"]
print(f"termination {r['termination']}: {r['message']}")
print(f"noise s.d. recovered {y.std() / np.sqrt(r['beta']):.4f} (true 0.1; beta {r['beta']:.4g} in standardised units)")
print(f"test RMSE against the noise-free targets {np.sqrt(np.mean((mean - f) ** 2)):.4f} (prediction column '{column}')")
print(f"full-batch |grad S| {o['gradient_norm']:.3g} (tolerance {o['gradient_tolerance']:.3g}), "
      f"max |d log Z/d log theta| {o['hyper_gradient_norm']:.3g} (tolerance {o['hyper_gradient_tolerance']:.3g})")
print("alpha", {k: round(v, 4) for k, v in r["alpha"].items()}, "log-evidence", r["log_evidence"])
PY
