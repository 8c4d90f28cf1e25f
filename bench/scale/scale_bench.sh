#!/usr/bin/env bash
# The large-data benchmark of docs/scale.md: a synthetic regression of ROWS rows (default 10⁶) and
# 20 inputs (bench/scale/synthetic_regression.py), a 20-256-256-1 tanh network (W = 71,425), the MAP
# by L-BFGS for ITERATIONS iterations (default 10) at α = 1, β = 10, then a structured Laplace
# approximation (STRUCTURES, default "kron last-layer") and its log-evidence — on one process and
# under `mpirun -n 2`, each process on one thread.
#
#   bash scripts/setup.sh --mpi && bash scripts/build.sh
#   bash bench/scale/scale_bench.sh [OUT_DIR]          # default /tmp/occam-scale-bench
#
# Per run it prints the wall time, each process's CPU time and peak resident memory (GNU time),
# the MAP's seconds and iterations and the log-evidence from the report, and whether the 2-process
# model file equals the 1-process one byte for byte. A fit of ITERATIONS iterations is not
# converged: the figures are the cost per MAP iteration and of the structure's pass over the data,
# from which a full fit's time follows for any iteration count (docs/scale.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-/tmp/occam-scale-bench}
rows=${ROWS:-1000000}; iterations=${ITERATIONS:-10}; structures=${STRUCTURES:-"kron last-layer"}
occam=$(realpath "${OCCAM:-build/occam}")
mkdir -p "$out"
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ), git $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc --all) cores"
data="$out/synthetic_$rows.csv"
[ -s "$data" ] || /usr/bin/python3 bench/scale/synthetic_regression.py "$rows" "$data"
for structure in $structures; do
  for ranks in 1 2; do
    tag="${structure}_$ranks"
    echo "== $structure, $ranks process(es); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
    launch=()
    [ "$ranks" -gt 1 ] && launch=(mpirun -n "$ranks" --oversubscribe)
    start=$(date +%s.%N)
    "${launch[@]}" /usr/bin/time -f "  process: %e s wall, %U s user, %S s sys, peak RSS %M KB" \
      "$occam" fit --data "$data" --target y --hidden 256,256 --method laplace --hessian-structure "$structure" \
      --hyper fixed --alpha 1 --beta 10 --optimizer lbfgs --max-iterations "$iterations" --threads 1 \
      --out "$out/$tag.json" --report "$out/$tag.report.json" --quiet 2> "$out/$tag.err" || { cat "$out/$tag.err"; exit 1; }
    end=$(date +%s.%N)
    grep "process:" "$out/$tag.err"
    /usr/bin/python3 - "$out/$tag.report.json" "$start" "$end" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
wall = float(sys.argv[3]) - float(sys.argv[2])
print(f"  run: {wall:.1f} s wall; fit {r['seconds']:.1f} s; {r['map_iterations']} MAP iterations, termination "
      f"{r['termination']}; log-evidence {r['log_evidence']:.9g}; train RMSE {r['train_rmse']:.6g}")
PY
  done
  /usr/bin/python3 - "$out/${structure}_1.json" "$out/${structure}_2.json" <<'PY'
import json, sys
def strip(node):  # what differs between two runs of one fit: its seconds and command line
    if isinstance(node, dict):
        return {k: strip(v) for k, v in node.items() if k not in ("seconds", "command_line")}
    return [strip(v) for v in node] if isinstance(node, list) else node
one, two = (json.dumps(strip(json.load(open(p)))) for p in sys.argv[1:])
print("  model files of 1 and 2 processes:", "identical (but seconds, command line)" if one == two else "DIFFERENT")
PY
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
