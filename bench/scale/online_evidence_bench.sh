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
#   PEER=torch ...            # and beside it, on the other core (taskset -c 1), PyTorch's plain Adam
#                             # training of the same network for the same epochs (adam_torch_peer.py)
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
if [ "${PEER:-}" = torch ]; then
  width=${hidden%%,*}
  [ "$hidden" = "$width,$width" ] || { echo "PEER=torch needs two equal hidden layers, not $hidden" >&2; exit 2; }
  taskset -c 1 /usr/bin/time -v /usr/bin/python3 bench/scale/adam_torch_peer.py "$train" --test "$test" \
    --epochs "$epochs" --batch-size "$batch" --hidden "$width" --learning-rate "$rate" --lr-schedule "$schedule" \
    > "$out/$tag.torch.json" 2> "$out/$tag.torch.time" &
  peer=$!
fi
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
if [ -n "${peer:-}" ]; then
  wait "$peer" || { cat "$out/$tag.torch.time"; exit 1; }
  /usr/bin/python3 - "$out/$tag.time" "$out/$tag.torch.time" "$out/$tag.torch.json" <<'PY'
import json, re, sys
def cpu(path):
    text = open(path).read()
    return sum(float(re.search(label + r": ([0-9.]+)", text).group(1)) for label in ("User time \\(seconds\\)", "System time \\(seconds\\)"))
def rss(path):
    return int(re.search(r"Maximum resident set size \(kbytes\): ([0-9]+)", open(path).read()).group(1)) / 1024
occam, torch = cpu(sys.argv[1]), cpu(sys.argv[2])
peer = json.load(open(sys.argv[3]))
print(f"torch {peer['peer']}: CPU {torch:.1f} s in all (training {peer['train_cpu_seconds']:.1f} s, "
      f"{peer['steps']} steps), peak RSS {rss(sys.argv[2]):.0f} MiB, test RMSE {peer['test_rmse_vs_f']:.4f}")
print(f"occam CPU {occam:.1f} s, peak RSS {rss(sys.argv[1]):.0f} MiB: occam / torch {occam / torch:.2f} "
      f"(against torch's training alone {occam / peer['train_cpu_seconds']:.2f})")
PY
fi
