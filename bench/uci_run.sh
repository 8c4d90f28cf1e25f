#!/usr/bin/env bash
# The full UCI benchmark behind docs/RESULTS.md: every method on all nine data sets and every split
# (20; 5 for protein) at occam_uci's default budget (5000 iterations per MAP run, 200 evidence
# rounds, nuts 4 chains x (150 + 100)), one phase per method, each appending to DIR/<method>.csv
# and its progress to DIR/<method>.log. Every phase is resumable: run it again with the same DIR
# and it goes on where it stopped (occam_uci skips the rows already in its file). Usage:
#   bench/uci_run.sh [DIR] [PHASE ...]     # default DIR /tmp/occam-uci, default every phase in turn
#   UCI=build/occam_uci NICE=19 bench/uci_run.sh DIR laplace
#   LAUNCH="mpirun --hostfile hosts -n 65" bench/uci_run.sh DIR laplace   # rows dealt over 64 workers
# then: python3 bench/uci_report.py DIR/*.csv
#
# Phases: laplace, laplace-hetero, committees, nuts, mile (the declared methods, docs/RESULTS.md), then
# map-cv, vi-meanfield, laplace-integrate and laplace-hetero-refit (shown for reference).
# `committees` is laplace-committee and laplace-ensemble in one run (DIR/committees.csv), so that in
# one process each split's members are fitted once for both rows; laplace-committee and
# laplace-ensemble are also phases of their own (under mpirun the rows are dealt one by one and each
# fits its own members either way). On one 2-core machine this is days of CPU (laplace alone: 15-60
# s a split on the small data sets, minutes on kin8nm and naval, hours on protein; the committees
# five times that); with MPI the time divides by the workers.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-/tmp/occam-uci}
shift || true
phases=("$@")
if [ ${#phases[@]} -eq 0 ]; then
  phases=(laplace laplace-hetero committees nuts mile map-cv vi-meanfield laplace-integrate laplace-hetero-refit)
fi
uci=${UCI:-build/occam_uci}
read -r -a launch <<<"${LAUNCH:-}"
mkdir -p "$dir"
for phase in "${phases[@]}"; do
  case $phase in
    committees) methods=laplace-committee,laplace-ensemble ;;
    laplace | laplace-hetero | laplace-committee | laplace-ensemble | nuts | mile | map-cv | vi-meanfield | laplace-integrate | laplace-hetero-refit)
      methods=$phase ;;
    *) echo "uci_run.sh: unknown phase '$phase' (see the comment at the top)" >&2; exit 2 ;;
  esac
  nice -n "${NICE:-19}" "${launch[@]}" "$uci" --methods "$methods" --out "$dir/$phase.csv" 2>>"$dir/$phase.log"
done
