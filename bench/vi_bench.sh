#!/usr/bin/env bash
# VI on Boston housing split 0 (455 training rows, 13 inputs, 50 tanh hidden units, W = 751):
# occam's full-rank, mean-field and low-rank families against Stan's ADVI (rstan::vb meanfield
# and fullrank) on the same model, data and hyperparameters, in the same run, with test RMSE and
# test log-likelihood of each. Stan gets the α, β occam's mean-field ELBO chose.
#
#   bench/vi_bench.sh [RESULTS_DIR] [REPEATS]      # default /tmp/occam-vi-bench, 1
#
# Needs build/occam (scripts/build.sh), Rscript with rstan, /usr/bin/python3 with numpy.
# Stan's model is compiled once into RESULTS_DIR/stan-cache (minutes) and reused.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/occam-vi-bench}
repeats=${2:-1}
occam=${OCCAM_BIN:-build/occam}
uci=${UCI_DIR:-/work/shared/data/uci}/bostonHousing
mkdir -p "$out/stan-cache"
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
python=/usr/bin/python3

# Split 0 as CSV (0-based index files; the last column is the target).
"$python" - "$uci" "$out" <<'PY'
import sys, numpy as np
uci, out = sys.argv[1:3]
d = np.loadtxt(f"{uci}/data.txt")
for part in ("train", "test"):
    idx = np.loadtxt(f"{uci}/index_{part}_0.txt", dtype=int)
    header = ",".join([f"x{i}" for i in range(d.shape[1] - 1)] + ["y"])
    np.savetxt(f"{out}/{part}.csv", d[idx], delimiter=",", header=header, comments="", fmt="%.10g")
PY

# Stan's ADVI needs its own compiler flags on Debian (no -march=native; Boost from /usr/include).
makevars="$out/Makevars"
printf 'CXXFLAGS = -O2 -fPIC\nCXX14FLAGS = -O2 -fPIC\n' > "$makevars"
R_MAKEVARS_USER="$makevars" Rscript bench/vi_stan_compile.R "$out/stan-cache" >/dev/null

results="$out/results.jsonl"
: > "$results"
metrics() {  # metrics PREDICTIONS.csv -> "rmse ll" in y's units, Gaussian predictive (mean, std)
  "$python" - "$out/test.csv" "$1" <<'PY'
import sys, numpy as np
y = np.loadtxt(sys.argv[1], delimiter=",", skiprows=1)[:, -1]
p = np.loadtxt(sys.argv[2], delimiter=",", skiprows=1)
mu, sd = p[:, 0], p[:, 1]
print(np.sqrt(np.mean((y - mu) ** 2)), np.mean(-0.5 * np.log(2 * np.pi * sd ** 2) - (y - mu) ** 2 / (2 * sd ** 2)))
PY
}
for repeat in $(seq 1 "$repeats"); do
  for family in meanfield lowrank:10 fullrank; do
    name=${family/:/}
    start=$(date +%s.%N)
    "$occam" fit --data "$out/train.csv" --target y --method vi --family "$family" --seed "$repeat" \
      --out "$out/$name.json" --report "$out/${name}_report.json" --quiet
    wall=$(echo "$(date +%s.%N) - $start" | bc)
    "$occam" predict --model "$out/$name.json" --data "$out/test.csv" --out "$out/${name}_pred.csv"
    read -r rmse ll < <(metrics "$out/${name}_pred.csv")
    "$python" - "$out/${name}_report.json" "$family" "$wall" "$rmse" "$ll" >> "$results" <<'PY'
import sys, json
r = json.load(open(sys.argv[1])); v = r["vi"]
print(json.dumps({"tool": "occam-" + sys.argv[2], "seconds": v["seconds"], "fit_wall_seconds": float(sys.argv[3]),
                  "ms_per_step": 1e3 * v["seconds_per_iteration"], "iterations": v["iterations"],
                  "converged": v["termination"] == "converged", "elbo": r["elbo"],
                  "laplace_log_evidence": r["log_evidence"], "test_rmse": float(sys.argv[4]),
                  "test_ll": float(sys.argv[5])}))
PY
  done
  hypers=$("$python" -c 'import sys, json; r = json.load(open(sys.argv[1])); a = r["alpha"]
print(r["options"]["hidden"][0], a["input_weights"], a["hidden_biases"], a["output_weights"], a["output_biases"], r["beta"])' \
    "$out/meanfield_report.json")
  for algorithm in meanfield fullrank; do
    # shellcheck disable=SC2086  # hypers is a list of numbers
    Rscript bench/vi_stan.R "$out/train.csv" "$out/test.csv" "$out/stan-cache" "$algorithm" "$repeat" $hypers \
      >> "$results"
  done
done
"$python" - "$results" <<'PY'
import sys, json
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(f"{'tool':24} {'VI s':>8} {'ms/step':>8} {'iters':>6} {'conv':>5} {'test RMSE':>10} {'test LL':>8}")
for r in rows:
    if "failed" in r:
        print(f"{r['tool']:24} {r['seconds']:8.2f} failed: {r['failed']}")
        continue
    ms = r.get("ms_per_step")
    if ms is None and r.get("iterations"):
        ms = 1e3 * r["seconds"] / r["iterations"]  # Stan: whole run per iteration, ELBO evaluations included
    print(f"{r['tool']:24} {r['seconds']:8.2f} {ms if ms is not None else float('nan'):8.3f} {r['iterations'] or 0:6d} "
          f"{str(r['converged']):>5} {r['test_rmse']:10.3f} {r['test_ll']:8.3f}")
PY
