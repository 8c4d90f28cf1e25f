#!/usr/bin/env bash
# The UCI benchmark runs behind docs/RESULTS.md, as phases that each append to their own results
# CSV in DIR. Every phase is resumable: run it again with the same DIR and it goes on where it
# stopped (occam_uci skips the rows already in its file). Phases are independent, so on a machine
# with more cores several can run at once, each in its own shell. Usage:
#   bench/uci_run.sh [DIR] [PHASE ...]     # default DIR /tmp/occam-uci, default every phase in turn
#   UCI=build/occam_uci NICE=19 bench/uci_run.sh DIR small-laplace
# then: python3 bench/uci_report.py DIR/*.csv
#
# Phases (names as given on the command line):
#   small-map-vi   map-cv and vi-meanfield on yacht, Boston housing, concrete, energy
#   small-laplace  laplace on the same four
#   wine           map-cv and vi-meanfield on red wine
#   nuts           nuts on Boston housing, concrete and red wine
#   large-laplace  laplace on naval, kin8nm and power plant (L-BFGS: more than 5 000 rows)
#   protein        laplace on protein, with a smaller budget (1 000 iterations per MAP run, 5 rounds)
#   integrate      laplace-integrate on splits 0-4 of the five small data sets
#
# Every row uses the same budget (BUDGET below): at most 2000 iterations per MAP run and 10
# evidence re-estimation rounds, so that the larger data sets finish on a small machine;
# `build/occam_uci` without these flags runs the library's defaults (5000 and 200). (A tighter
# budget, 500 and 5, cut the evidence loop short: it then ends on an unconverged MAP, e.g. Boston
# split 0 laplace gave test LL -3.04 against -2.64.)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-/tmp/occam-uci}
shift || true
phases=("$@")
if [ ${#phases[@]} -eq 0 ]; then
  phases=(small-map-vi small-laplace wine nuts large-laplace protein integrate)
fi
uci=${UCI:-build/occam_uci}
mkdir -p "$dir"
BUDGET=(--max-map-iterations 2000 --max-rounds 10)
run() {  # run OUT ARGS...: one occam_uci call writing DIR/OUT.csv, its progress appended to DIR/OUT.log
  local out=$1
  shift
  nice -n "${NICE:-19}" "$uci" "${budget[@]}" --out "$dir/$out.csv" "$@" 2>>"$dir/$out.log"
}
small=yacht,bostonHousing,concrete,energy
for phase in "${phases[@]}"; do
  budget=("${BUDGET[@]}")
  case $phase in
    small-map-vi) run small-map-vi --datasets "$small" --methods map-cv,vi-meanfield ;;
    small-laplace) run small-laplace --datasets yacht,bostonHousing,energy,concrete --methods laplace ;;
    wine) run wine --datasets wine-quality-red --methods map-cv,vi-meanfield ;;
    nuts) run nuts --datasets bostonHousing,concrete,wine-quality-red --methods nuts ;;
    large-laplace) run large-laplace --datasets naval-propulsion-plant,kin8nm,power-plant --methods laplace ;;
    protein) budget=(--max-map-iterations 1000 --max-rounds 5)
             run protein --datasets protein-tertiary-structure --methods laplace ;;
    integrate) run integrate --datasets "$small",wine-quality-red --methods laplace-integrate --splits 0-4 ;;
    *) echo "uci_run.sh: unknown phase '$phase' (see the comment at the top)" >&2; exit 2 ;;
  esac
done
