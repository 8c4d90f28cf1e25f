#!/usr/bin/env bash
# The whole evidence job, occam against PyTorch, in one run: `occam fit --method laplace --hyper
# evidence` (default options) on a UCI split, H = 50, then both variants of bench/evidence_job_peer.py
# (MacKay's loop in torch, capped in wall time, and laplace-torch's recipe) on the same standardised
# data. Prints one table: times, their ratios to occam's, log-evidence (occam's formula, checked
# at occam's own fit), the largest log-evidence gradient in log(alpha, beta), test RMSE and test
# log-likelihood (linearised predictive, original units), and the load average before and after.
#
#   bench/evidence_job_compare.sh [OUT_DIR] [-- extra evidence_job_peer.py options]
#   OCCAM=path/to/occam (default build/occam; use a portable build for published figures)
#   DATASET=bostonHousing SPLIT=0 (the UCI folder under OCCAM_UCI_DIR or ../shared/data/uci)
set -euo pipefail
cd "$(dirname "$0")/.."
out=/tmp/occam-evidence-job
if [ $# -gt 0 ] && [ "$1" != "--" ]; then out=$1; shift; fi
if [ "${1:-}" = "--" ]; then shift; fi
occam=${OCCAM:-build/occam}
dataset=${DATASET:-bostonHousing}
split=${SPLIT:-0}
hidden=50
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
[ -x "$occam" ] || { echo "no occam binary at $occam (build it, or set OCCAM)" >&2; exit 1; }
mkdir -p "$out"
rm -f "$out/results.jsonl"
peer=(/usr/bin/python3 bench/evidence_job_peer.py --dataset "$dataset" --split "$split" --hidden "$hidden")

"${peer[@]}" --write-csv "$out"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
# Wall and CPU (user + system) seconds of occam fit, from bash's own timer.
TIMEFORMAT='%R %U %S'
{ time "$occam" fit --data "$out/train.csv" --target y --hidden "$hidden" --method laplace --hyper evidence \
    --out "$out/model.json" --report "$out/report.json" >"$out/occam_fit.txt" 2>&1; } 2>"$out/occam_time.txt" ||
  { cat "$out/occam_fit.txt" >&2; exit 1; }
read -r occam_wall occam_user occam_sys <"$out/occam_time.txt"
occam_cpu=$(awk -v u="$occam_user" -v s="$occam_sys" 'BEGIN { print u + s }')
"$occam" predict --model "$out/model.json" --data "$out/test.csv" --out "$out/occam_predictions.csv" >/dev/null
"${peer[@]}" --occam-model "$out/model.json" --occam-predictions "$out/occam_predictions.csv" \
  --occam-seconds "$occam_wall" "$occam_cpu" --out "$out/results.jsonl" "$@" >/dev/null
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

echo "$dataset split $split, H = $hidden; occam: $occam; results in $out/results.jsonl"
/usr/bin/python3 bench/evidence_job_peer.py --table "$out/results.jsonl"
echo "load average before: $load_before; after: $load_after ($(getconf _NPROCESSORS_ONLN) cores)"
