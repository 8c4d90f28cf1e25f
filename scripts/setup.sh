#!/usr/bin/env bash
# Installs what occam needs from Debian 12's packages. Idempotent and non-interactive:
# when everything is already installed it only checks and returns. `setup.sh --fuzz` also
# installs clang and its sanitizer and libFuzzer runtimes, which only the fuzz targets need
# (scripts/fuzz.sh); the ordinary build and tests do not. `setup.sh --mpi` also installs Open MPI,
# with which the UCI benchmark (build/occam_uci) deals its rows over processes or machines; the
# test command asks for it, so that the suite tests that too. clang-format is there for
# scripts/format.sh, whose --check the suite runs (Format.TrackedSourcesAsClangFormatWritesThem).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libeigen3-dev libcli11-dev nlohmann-json3-dev liblbfgspp-dev libpcg-cpp-dev libboost-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  gnuplot-nox
  liblapacke-dev libopenblas-dev
  python3 python3-dev python3-venv python3-pip python3-setuptools python3-wheel
  pybind11-dev python3-numpy python3-pandas python3-sklearn python3-joblib python3-pytest
  python3-matplotlib git
  clang-format
)
for option in "$@"; do
  case $option in
    --fuzz) packages+=(clang libclang-rt-14-dev) ;;
    --mpi) packages+=(libopenmpi-dev openmpi-bin openssh-client) ;;  # mpirun needs an rsh agent even on one machine
    *) echo "setup.sh: unknown option '$option' (--fuzz, --mpi)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "occam setup: installing ${missing[*]}" >&2
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
