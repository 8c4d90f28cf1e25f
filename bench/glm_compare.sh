#!/usr/bin/env bash
# GLM benchmarks: occam (bench/glm_bench.cc) against scikit-learn (bench/glm_peer.py) on the same
# data, one thread each, in one run.  Usage: bench/glm_compare.sh [OUT_DIR] [REPEATS]
# LOGISTIC_TOL sets scikit-learn's tol for the logistic fit (default 1e-8).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/occam-glm-bench}
repeats=${2:-3}
build_dir=${OCCAM_BUILD_DIR:-build}
mkdir -p "$out"
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
cmake --build "$build_dir" --target glm_bench >/dev/null
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$out/machine.txt"
"$build_dir/bench/glm_bench" "$out" "$repeats" | tee "$out/occam.jsonl"
/usr/bin/python3 bench/glm_peer.py "$out" "$repeats" 1.0 | tee "$out/sklearn.jsonl"
/usr/bin/python3 - "$out" <<'PY'
import json, sys
d = sys.argv[1]
o = {j["bench"]: j for j in map(json.loads, open(f"{d}/occam.jsonl"))}
s = {j["bench"]: j for j in map(json.loads, open(f"{d}/sklearn.jsonl"))}
r, p = o["ridge"], s["ridge"]
print(f"BayesianRidge m=100000 D=50: occam {min(r['seconds']):.4f}-{max(r['seconds']):.4f} s, "
      f"sklearn {min(p['seconds']):.4f}-{max(p['seconds']):.4f} s, speed-up {min(p['seconds'])/min(r['seconds']):.1f}x; "
      f"alpha rel. diff {abs(r['alpha']/p['alpha']-1):.1e}, beta rel. diff {abs(r['beta']/p['beta']-1):.1e}")
l, q = o["logistic"], s["logistic"]
print(f"Logistic MAP (same penalty) m=100000 D=50: occam Newton/IRLS {min(l['map_seconds']):.3f}-{max(l['map_seconds']):.3f} s "
      f"({l['map_iterations']} iterations, |grad S| {l['map_gradient_norm']:.1e}, {l['map_termination']}), "
      f"sklearn {min(q['seconds']):.3f}-{max(q['seconds']):.3f} s (tol {q['tol']:g}), speed-up {min(q['seconds'])/min(l['map_seconds']):.2f}x; "
      f"CPU: occam {min(l['map_cpu_seconds']):.3f} s, sklearn {min(q['cpu_seconds']):.3f} s, "
      f"speed-up {min(q['cpu_seconds'])/min(l['map_cpu_seconds']):.2f}x; "
      f"weights max rel. diff {q['max_relative_difference_to_occam']:.1e}; occam with Levenberg-Marquardt "
      f"{min(l['map_lm_seconds']):.3f}-{max(l['map_lm_seconds']):.3f} s ({l['map_lm_iterations']} iterations), with L-BFGS "
      f"{min(l['map_lbfgs_seconds']):.3f}-{max(l['map_lbfgs_seconds']):.3f} s; occam MAP+Laplace+evidence "
      f"{min(l['evidence_seconds']):.3f} s ({l['evidence_rounds']} rounds)")
pp, ps = o["poisson_laplacian"], s["poisson_ridge"]
print(f"Poisson 20x20: occam MAP+Laplace+evidence with the smoothing prior {min(pp['seconds']):.3f}-{max(pp['seconds']):.3f} s "
      f"({pp['rounds']} rounds, filter error {pp['filter_error']}); sklearn PoissonRegressor (ridge, one fit) "
      f"{min(ps['seconds']):.3f}-{max(ps['seconds']):.3f} s")
PY
