#!/usr/bin/env bash
# occam's NUTS + Gibbs against Stan's NUTS (Debian's r-cran-rstan) on the same network posterior:
# a 1-hidden-layer tanh network, 10 hidden units, Gamma(a, b) priors on MacKay's four α and on β
# (bench/mcmc_network.stan). occam samples the weights by NUTS and α, β by Gibbs; Stan samples
# everything by NUTS. Both run their chains one after another on one core.
#
#   bench/mcmc_bench.sh [OUT_DIR]        # default /tmp/occam-mcmc-bench
#
# Environment: CASES (default "toy boston"), CHAINS (4), WARMUP (1000), DRAWS (1000), SEED (1),
# HYPER_A / HYPER_B (0.01 / 0.01), OCCAM (path of the occam binary, default build/occam).
# The compiled Stan model is cached in OUT_DIR (compiling it takes minutes). Output per case:
# OUT_DIR/<case>/comparison.csv — seconds, gradients, µs per gradient, median/min bulk ESS of the
# predictive mean f at the test inputs, ESS per second, max R̂ over those f, divergences; and in
# OUT_DIR/machine.txt the wall, user and system seconds of each sampler's whole process (CPU time
# is the steadier measure on a shared machine).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/occam-mcmc-bench}
cases=${CASES:-toy boston}
chains=${CHAINS:-4}; warmup=${WARMUP:-1000}; draws=${DRAWS:-1000}; seed=${SEED:-1}
a=${HYPER_A:-0.01}; b=${HYPER_B:-0.01}
occam=${OCCAM:-build/occam}
mkdir -p "$out"
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
# rstan on Debian: its own compiler flags (no -march=native, which its prebuilt libraries do not
# survive), used only here.
printf 'CXX14FLAGS = -O3 -fPIC -Wno-ignored-attributes -Wno-deprecated-declarations\n' > "$out/Makevars"
export R_MAKEVARS_USER="$out/Makevars"

# machine.txt accumulates one block per run of this script.
{
  echo "== cases: $cases"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "git: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(getconf _NPROCESSORS_ONLN) cores"
  echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "runs: $chains chains x ($warmup warm-up + $draws draws), seed $seed, Gamma($a, $b) hyperpriors"
} | tee -a "$out/machine.txt"

"$occam" demo --out-dir "$out/toy-source" >/dev/null
/usr/bin/python3 bench/mcmc_prepare.py "$out" "$out/toy-source" "${UCI_DIR:-../shared/data/uci}"
Rscript bench/mcmc_rstan.R compile "$out"

for case in $cases; do
  dir="$out/$case"
  echo "== $case: occam"
  /usr/bin/time -f "%e %U %S" -o "$dir/occam_time.txt" \
    "$occam" sample --data "$dir/train.csv" --target y --hidden 10 --standardize none --method nuts --hyper gibbs \
    --hyper-shape "$a" --hyper-rate "$b" --chains "$chains" --threads 1 --warmup "$warmup" --draws "$draws" \
    --seed "$seed" --monitor "$dir/test_inputs.csv" --out "$dir/occam_run" --quiet
  echo "== $case: stan"
  /usr/bin/time -f "%e %U %S" -o "$dir/stan_time.txt" \
    Rscript bench/mcmc_rstan.R sample "$out" "$case" "$chains" "$warmup" "$draws" "$seed" "$a" "$b"
  echo "$case: process seconds (wall user system): occam $(cat "$dir/occam_time.txt"), stan $(cat "$dir/stan_time.txt")" |
    tee -a "$out/machine.txt"
  Rscript bench/mcmc_rstan.R compare "$out" "$case"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/machine.txt"
