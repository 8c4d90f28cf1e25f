#!/usr/bin/env bash
# Effective draws per CPU second of occam's microcanonical samplers (mclmc, mams) against its NUTS
# on the same network posterior: Boston housing split 0 (455 training rows, 13 inputs), one tanh
# hidden layer of 10 or 50 units, α and β fixed (--hyper fixed, α = 1, β = 10 on the standardised
# data) or drawn by Gibbs (--hyper gibbs, the default Gamma(0.01, 0.01) priors). For each case the
# three samplers run in turn (the order rotates between cases, so that no sampler always meets the
# same load), each with its chains one after another on one thread.
#
#   bench/microcanonical_bench.sh [OUT_DIR]        # default /tmp/occam-microcanonical-bench
#
# Environment: HIDDEN ("10 50"), HYPER ("fixed gibbs"), METHODS ("nuts mclmc mams"), CHAINS (4),
# WARMUP (1000), DRAWS (1000), SEED (1), MONITOR (10: the first test inputs whose prediction f is
# monitored), OCCAM (the occam binary, default build/occam), UCI_DIR (../shared/data/uci).
# Output: OUT_DIR/<hidden>_<hyper>/<method>/ (the run folder and time.txt: wall, user and system
# seconds of the whole process, MAP starts included), and OUT_DIR/results.csv with one row per
# run, made by bench/microcanonical_report.py: CPU seconds, gradients, gradients per draw, bulk
# ESS of lp__ and the minimum over the monitored f.k, each per CPU second, and their ratios to
# NUTS of the same case.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/occam-microcanonical-bench}
hidden=${HIDDEN:-10 50}; hypers=${HYPER:-fixed gibbs}; methods=(${METHODS:-nuts mclmc mams})
chains=${CHAINS:-4}; warmup=${WARMUP:-1000}; draws=${DRAWS:-1000}; seed=${SEED:-1}; monitor=${MONITOR:-10}
occam=${OCCAM:-build/occam}
mkdir -p "$out"
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1

# The data, standardised with the training mean and sd (bench/mcmc_prepare.py's Boston case).
if [ ! -f "$out/boston/train.csv" ]; then
  "$occam" demo --out-dir "$out/toy-source" >/dev/null
  /usr/bin/python3 bench/mcmc_prepare.py "$out" "$out/toy-source" "${UCI_DIR:-../shared/data/uci}"
fi
head -n $((monitor + 1)) "$out/boston/test_inputs.csv" > "$out/boston/monitor.csv"

{
  echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ) git $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(getconf _NPROCESSORS_ONLN) cores"
  echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "runs: $chains chains x ($warmup warm-up + $draws draws), seed $seed, hidden: $hidden, hyper: $hypers"
} | tee -a "$out/machine.txt"

turn=0
for h in $hidden; do
  for hyper in $hypers; do
    case_dir="$out/${h}_${hyper}"
    n=${#methods[@]}
    for ((k = 0; k < n; ++k)); do
      method=${methods[$(((k + turn) % n))]}
      dir="$case_dir/$method"
      mkdir -p "$dir"
      echo "== hidden $h, hyper $hyper: $method"
      /usr/bin/time -f "%e %U %S" -o "$dir/time.txt" \
        "$occam" sample --data "$out/boston/train.csv" --target y --hidden "$h" --standardize none --method "$method" \
        --hyper "$hyper" --chains "$chains" --threads 1 --warmup "$warmup" --draws "$draws" --seed "$seed" \
        --monitor "$out/boston/monitor.csv" --log-lik off --checkpoint-every 0 --out "$dir/run" --quiet
    done
    turn=$((turn + 1))
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/machine.txt"
/usr/bin/python3 bench/microcanonical_report.py "$out" | tee "$out/results.txt"
