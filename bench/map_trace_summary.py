#!/usr/bin/env python3
"""Summarise an `occam fit --map-trace` file: where a fit's MAP iterations go.

For each MAP run (evidence step and member), or for the whole file with --whole, prints the
iterations, how many were taken and refused, how many steps followed negative curvature or ended
on the trust-region boundary, S's fall, and quantiles of the Newton decrement and of the taken and
refused steps' lengths (A-norm: posterior standard deviations). --from K drops each run's first K-1
iterations, to look at the end of a run alone.

    occam fit --data train.csv --target y --hidden 50 --map-trace trace.csv
    python3 bench/map_trace_summary.py trace.csv --from 100
"""
import argparse
import csv
import statistics
import sys


def quantiles(xs):
    if not xs:
        return "-"
    xs = sorted(xs)
    pick = lambda q: xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))]
    return f"{pick(0.1):.3g} / {pick(0.5):.3g} / {pick(0.9):.3g}"


def summarise(name, rows):
    taken = [r for r in rows if r["step_taken"] == "1"]
    refused = [r for r in rows if r["step_taken"] == "0"]
    num = lambda r, k: float(r[k]) if r[k] != "" else float("nan")
    first_S = num(rows[0], "objective") + (num(rows[0], "actual_decrease") if rows[0]["step_taken"] == "1" else 0.0)
    fall = first_S - num(rows[-1], "objective")
    rising = [num(r, "actual_decrease") for r in refused if r["actual_decrease"] != ""]
    span = f" ({rows[0]['iteration']}-{rows[-1]['iteration']})" if name != "all" else ""
    print(f"{name}: {len(rows)} iterations{span}, "
          f"{len(taken)} taken, {len(refused)} refused; "
          f"{sum(r['negative_curvature'] == '1' for r in rows)} negative curvature, "
          f"{sum(r['on_boundary'] == '1' for r in rows)} on the boundary" + (f"; S fell {fall:.6g}" if name != "all" else ""))
    print(f"    Newton decrement (10% / 50% / 90%): {quantiles([num(r, 'newton_decrement') for r in rows])}")
    print(f"    taken steps' length:   {quantiles([num(r, 'step_norm') for r in taken])}")
    print(f"    refused steps' length: {quantiles([num(r, 'step_norm') for r in refused])}, "
          f"S rose by {quantiles([-x for x in rising])}")
    cg = [int(r["cg_iterations"]) for r in rows if r["cg_iterations"] != ""]
    if cg:
        print(f"    CG iterations a step: mean {statistics.mean(cg):.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--from", dest="start", type=int, default=1, help="first iteration of each run to count")
    ap.add_argument("--whole", action="store_true", help="one summary for the whole file")
    args = ap.parse_args()
    with open(args.trace, newline="") as f:
        rows = [r for r in csv.DictReader(f) if int(r["iteration"]) >= args.start]
    if not rows:
        sys.exit("no rows")
    if rows[0]["trust_radius"] == "":
        sys.exit("these rows have no trust-region fields (an optimiser other than the trust-region MAP)")
    if args.whole:
        summarise("all", rows)
        return
    runs, key = [], None
    for r in rows:
        k = (r["member"], r["evidence_step"])
        if k != key or (runs and int(r["iteration"]) <= int(runs[-1][-1]["iteration"])):
            runs.append([])
            key = k
        runs[-1].append(r)
    for run in runs:
        summarise(f"member {run[0]['member']}, evidence step {run[0]['evidence_step']}", run)


if __name__ == "__main__":
    main()
