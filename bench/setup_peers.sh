#!/usr/bin/env bash
# Installs the peers that bench/run_benchmarks.sh compares occam with (Debian 12 packages),
# idempotently: packages already present are left alone.
#   python3-torch         PyTorch 1.13 (with functorch's jacrev/vmap) for bench/torch_peer.py
#   libopenblas0-pthread  an optimised BLAS/LAPACK for it: without one, Debian's torch runs on the
#                         reference BLAS (libblas3), which would make the peer look slower than it is
#   python3-sklearn       scikit-learn (LogisticRegression, BayesianRidge, ARDRegression) for the GLM benchmark
#   r-cran-rstan          Stan 2.21 (NUTS, ADVI) for the MCMC and VI benchmarks
#   r-cran-posterior      R's posterior package: reference R-hat and ESS values
# The benchmarks then run them single-threaded (OPENBLAS_NUM_THREADS=1, torch.set_num_threads(1)).
# rstan on Debian needs boost_lib = "/usr/include" and no -march=native: its prebuilt libraries
# crash otherwise; bench scripts that call Stan set this themselves.
set -euo pipefail
packages=(python3-torch libopenblas0-pthread python3-sklearn r-cran-rstan r-cran-posterior)
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then missing+=("$p"); fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "peers already installed: ${packages[*]}"
  exit 0
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then sudo=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update
"${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
/usr/bin/python3 -c 'import torch; print("torch", torch.__version__)'
