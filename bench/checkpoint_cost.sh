#!/usr/bin/env bash
# What the checkpoints of `occam sample` cost: the same run (NUTS + Gibbs, one tanh layer of 10
# units, 2 chains one after another on one core) with --checkpoint-every 0 (none), 1, 10, 100 (the
# default) and 1000, the settings interleaved so that a change in the machine's load falls on all
# of them alike. Each checkpoint makes the chain file durable (fsync), writes the chain's state to
# a temporary file, fsyncs it and renames it over checkpoint_<k>.json.
#
#   bench/checkpoint_cost.sh [OUT_DIR]       # default /tmp/occam-checkpoint-cost
#
# Environment: CASES (default "toy boston": the data of bench/mcmc_bench.sh), REPEATS (3),
# WARMUP (1000), DRAWS (1000), EVERY ("0 1 10 100 1000"), OCCAM (default build/occam).
# Prints, per case and setting, the median wall, user and system seconds over the repeats and
# the ratio of the median wall and CPU (user + system) time to the run without checkpoints; the
# draws of every setting are checked to be the same bytes (checkpoints must not change them).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/occam-checkpoint-cost}
cases=${CASES:-toy boston}
repeats=${REPEATS:-3}; warmup=${WARMUP:-1000}; draws=${DRAWS:-1000}
every=${EVERY:-0 1 10 100 1000}
occam=${OCCAM:-build/occam}
mkdir -p "$out"
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1

echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ), git $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(lscpu | sed -n 's/^Model name: *//p' | head -1)"
echo "file system of $out: $(df -T "$out" | awk 'NR == 2 {print $2}')"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$occam" demo --out-dir "$out/toy-source" >/dev/null
/usr/bin/python3 bench/mcmc_prepare.py "$out" "$out/toy-source" "${UCI_DIR:-../shared/data/uci}" >/dev/null

for case in $cases; do
  dir="$out/$case"
  for r in $(seq 1 "$repeats"); do
    for k in $every; do
      rm -rf "$dir/run_$k"
      /usr/bin/time -f "%e %U %S" -a -o "$dir/times_$k.txt" \
        "$occam" sample --data "$dir/train.csv" --target y --hidden 10 --standardize none --chains 2 --threads 1 \
        --warmup "$warmup" --draws "$draws" --seed 1 --checkpoint-every "$k" --out "$dir/run_$k" --quiet
    done
  done
  for k in $every; do
    for c in 1 2; do
      cmp -s "$dir/run_0/chain_$c.csv" "$dir/run_$k/chain_$c.csv" ||
        { echo "$case: chain $c with --checkpoint-every $k differs from the run without checkpoints" >&2; exit 1; }
    done
  done
  /usr/bin/python3 - "$dir" "$every" "$case" <<'EOF'
import statistics
import sys

folder, every, case = sys.argv[1], sys.argv[2].split(), sys.argv[3]
median = {}
for k in every:
    rows = [list(map(float, line.split())) for line in open(f"{folder}/times_{k}.txt") if line.strip()]
    median[k] = [statistics.median(column) for column in zip(*rows)]
wall0, cpu0 = median["0"][0], median["0"][1] + median["0"][2]
print(f"{case}: --checkpoint-every, wall s, user s, system s, wall / none, CPU / none")
for k in every:
    wall, user, system = median[k]
    print(f"{case}: {k}, {wall:.2f}, {user:.2f}, {system:.2f}, {wall / wall0:.3f}, {(user + system) / cpu0:.3f}")
EOF
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
