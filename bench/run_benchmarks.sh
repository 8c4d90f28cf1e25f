#!/usr/bin/env bash
# Builds the occam benchmarks (Release, -march=native unless the build folder says otherwise),
# runs them and the PyTorch peer one after the other, single-threaded, and prints the comparison.
#
#   bench/run_benchmarks.sh [RESULTS_DIR]          # default /tmp/occam-bench
#
# Environment:
#   OCCAM_BUILD_DIR   build folder (default build-bench)
#   BENCH_FAMILIES    occam benchmarks to run (default: all six), e.g. "ValueGradient ExactHessian"
#   BENCH_SKIP_TORCH  set to 1 to run occam only (the table then shows occam's times alone)
#   TORCH_ARGS        extra arguments for torch_peer.py, e.g. "--sizes small"
#   BENCH_MCMC        set to 1 to also run bench/mcmc_bench.sh (occam's NUTS + Gibbs against Stan)
# Each occam benchmark family runs in its own process, so a crash in one still leaves the others'
# results; a failure is recorded in RESULTS_DIR/occam_<family>.failed. Peers: bench/setup_peers.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/occam-bench}
build_dir=${OCCAM_BUILD_DIR:-build-bench}
families=${BENCH_FAMILIES:-ValueGradient GgnHessian ExactHessian Eigh ReestimationStep FitEvidence}
mkdir -p "$out"
rm -f "$out"/occam_*.json "$out"/occam_*.failed "$out"/torch.jsonl

# One thread everywhere: occam is single-threaded (Eigen's threading is off), and so is the peer.
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1

generator=()
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
  cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DOCCAM_NATIVE=ON >/dev/null
fi
cmake --build "$build_dir" --target evidence_bench
bin="$build_dir/bench/evidence_bench"

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "git: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(getconf _NPROCESSORS_ONLN) cores"
  echo "build: $(grep -E '^CMAKE_BUILD_TYPE|^OCCAM_NATIVE' "$build_dir/CMakeCache.txt" | tr '\n' ' ')"
  echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$out/machine.txt"
cat "$out/machine.txt"

for family in $families; do
  echo "== occam BM_$family"
  "$bin" --benchmark_filter="^BM_${family}/" --benchmark_out="$out/occam_${family}.json" \
    --benchmark_out_format=json || {
    rc=$?
    echo "BM_$family: evidence_bench exited with status $rc" | tee "$out/occam_${family}.failed"
  }
done

if [ "${BENCH_SKIP_TORCH:-0}" != 1 ]; then
  echo "== torch peer"
  # shellcheck disable=SC2086
  /usr/bin/python3 bench/torch_peer.py --out "$out/torch.jsonl" ${TORCH_ARGS:-}
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/machine.txt"

echo
python3 bench/compare.py "$out" | tee "$out/table.md"

# The GLM benchmarks against scikit-learn (docs/BENCHMARKS.md, "GLMs against scikit-learn"):
# BENCH_GLM=1 runs them too, into $out/glm.
if [ "${BENCH_GLM:-0}" = 1 ]; then
  echo "== GLMs against scikit-learn"
  OCCAM_BUILD_DIR="$build_dir" bench/glm_compare.sh "$out/glm"
fi
# MCMC against Stan (NUTS): minutes to compile the Stan model, then minutes per case; opt-in.
if [ "${BENCH_MCMC:-0}" = 1 ]; then
  cmake --build "$build_dir" --target occam_cli
  OCCAM="$build_dir/occam" bench/mcmc_bench.sh "$out/mcmc"
fi
# Variational inference against Stan's ADVI (minutes; Stan compiles its model once): BENCH_VI=1.
if [ "${BENCH_VI:-0}" = 1 ]; then
  echo "== VI against rstan ADVI"
  OCCAM_BIN="${OCCAM_VI_BIN:-build/occam}" bench/vi_bench.sh "$out/vi"
fi
