#!/usr/bin/env bash
# SGHMC per epoch: occam against a one-thread float64 PyTorch loop doing the same minibatch
# gradients and updates (bench/sgmcmc_torch_peer.py), on a synthetic regression of ROWS rows
# (default 10⁵) and 20 inputs with a 2 × 256 tanh network (W = 71,425 weights), batches of 128.
#
#   bench/sgmcmc_bench.sh [OUT_DIR]            # default /tmp/occam-sgmcmc-bench
#
# The data: x ~ N(0, 1)²⁰, y = tanh(x1 + x2) + tanh(x3 − 2x4)/2 + Σ_{j>4} x_j/20 + 0.1 ε (numpy,
# seed 1). occam runs one chain of EPOCHS epochs (--warmup 0, one draw kept per epoch) and its
# time per epoch is chains.csv's sampling_seconds / EPOCHS; the peer's is the median of its
# epochs. Both single-threaded; run them on an idle machine (the load average is printed). GNU time
# gives each one's wall time in all and peak resident memory.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/occam-sgmcmc-bench}
rows=${ROWS:-100000}; epochs=${EPOCHS:-2}; batch=128
# The minibatch gradient is m/b times a sum over b rows: a step size of 10⁻⁴ at 10⁵ rows, scaled by
# 10⁵/m so that h·m stays the same (10⁻⁴ at 10⁶ rows diverges within the first epoch).
step=${STEP_SIZE:-$(/usr/bin/python3 -c "print(1e-4 * 1e5 / $rows)")}
occam=${OCCAM:-build/occam}
mkdir -p "$out"
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ), git $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(lscpu | sed -n 's/^Model name: *//p' | head -1)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 - "$out/data.csv" "$rows" <<'PY'
import sys
import numpy as np
rng = np.random.default_rng(1)
m = int(sys.argv[2])
X = rng.standard_normal((m, 20))
y = np.tanh(X[:, 0] + X[:, 1]) + np.tanh(X[:, 2] - 2 * X[:, 3]) / 2 + X[:, 4:].sum(1) / 20 + 0.1 * rng.standard_normal(m)
header = ",".join([f"x{j + 1}" for j in range(20)] + ["y"])
np.savetxt(sys.argv[1], np.column_stack([X, y]), delimiter=",", header=header, comments="", fmt="%.6f")
PY
per_epoch=$((rows / batch))
/usr/bin/time -o "$out/occam.time" -f "occam: %e s wall in all (reading the data included), peak RSS %M KB" \
  "$occam" sample --data "$out/data.csv" --target y --hidden 256,256 --method sghmc --step-size "$step" --friction 100 \
  --batch-size "$batch" --chains 1 --warmup 0 --draws $((epochs * per_epoch)) --thin "$per_epoch" --init prior \
  --hyper fixed --alpha 1 --beta 10 --log-lik off --checkpoint-every 0 --seed 1 --quiet --out "$out/run"
occam_epoch=$(/usr/bin/python3 -c "
import csv, sys
row = next(csv.DictReader(open('$out/run/chains.csv')))
print(float(row['sampling_seconds']) / $epochs)")
peer=$(/usr/bin/time -o "$out/torch.time" -f "torch: %e s wall in all (reading the data included), peak RSS %M KB" \
  /usr/bin/python3 bench/sgmcmc_torch_peer.py "$out/data.csv" --epochs "$epochs" --batch-size "$batch" \
  --step-size "$step")
echo "$peer"
cat "$out/occam.time" "$out/torch.time"
/usr/bin/python3 - "$occam_epoch" "$peer" <<'PY'
import json, statistics, sys
occam = float(sys.argv[1])
peer = json.loads(sys.argv[2])
torch_epoch = statistics.median(peer["epoch_seconds"])
print(f"SGHMC epoch ({peer['rows']} rows, batches of {peer['batch_size']}, {peer['steps_per_epoch']} steps, "
      f"20-256-256-1 tanh): occam {occam:.2f} s, torch {torch_epoch:.2f} s, occam/torch {occam / torch_epoch:.2f}")
PY
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
