#!/usr/bin/env python3
"""Where a method's 95% intervals miss: the test predictions occam_uci writes with --predictions DIR
(DIR/<dataset>_<split>_<method>.csv, columns test_row,y,mean,std), pooled over the splits found, per
data set and method: coverage of the central 95% interval and the mean of z^2 = ((y - mean)/std)^2
(1 for a calibrated Gaussian predictive), overall and in four bins of the predicted mean (its
quartiles over the pooled test rows). A noise model that is right on average but wrong in places
shows as coverage and z^2 that change across the bins.

    build/occam_uci --datasets yacht --methods laplace --predictions preds --out yacht.csv
    python3 bench/uci/calibration.py preds

With --results FILE... (occam_uci results files), a second table pools the splits by how each
split's fit ended: `converged` (the optimality conditions hold) or stopped otherwise (the
iteration budget, no progress, a failure): whether the intervals are worse where the fit reached
its optimum.

    python3 bench/uci/calibration.py preds --results yacht.csv

Standard library only.
"""
import argparse
import csv
import glob
import os
import re
from collections import defaultdict

Z95 = 1.959963984540054  # the central 95% interval of a Gaussian


def read(folder):
    """(dataset, split, method) -> [(mean, z)] over the test rows of each prediction file."""
    by_split = defaultdict(list)
    pattern = re.compile(r"^(?P<dataset>.+)_(?P<split>\d+)_(?P<method>[a-z][a-z0-9-]*)\.csv$")
    for path in sorted(glob.glob(os.path.join(folder, "*.csv"))):
        m = pattern.match(os.path.basename(path))
        if not m:
            continue
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                y, mu, sd = float(row["y"]), float(row["mean"]), float(row["std"])
                by_split[(m["dataset"], int(m["split"]), m["method"])].append((mu, (y - mu) / sd))
    return by_split


def pool(by_split, group_of):
    """group -> (splits, rows): the splits' rows pooled by group_of(dataset, split, method); a split
    whose group is None is left out."""
    pooled = defaultdict(lambda: (set(), []))
    for key, rows in sorted(by_split.items()):
        group = group_of(*key)
        if group is not None:
            pooled[group][0].add(key[1])
            pooled[group][1].extend(rows)
    return pooled


def read_terminations(paths):
    """(dataset, split, method) -> termination, from occam_uci results files (later files win)."""
    out = {}
    for path in paths:
        with open(path, newline="") as f:
            for row in csv.DictReader(line for line in f if not line.startswith("#")):
                out[(row["dataset"], int(row["split"]), row["method"])] = row["termination"]
    return out


def summary(rows):
    n = len(rows)
    covered = sum(1 for _, z in rows if abs(z) <= Z95)
    return n, covered / n, sum(z * z for _, z in rows) / n


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", help="the --predictions folder of occam_uci")
    parser.add_argument("--results", nargs="+", default=[],
                        help="occam_uci results files: also pool the splits by whether their fit converged")
    args = parser.parse_args()
    by_split = read(args.folder)
    if not by_split:
        raise SystemExit(f"calibration.py: no <dataset>_<split>_<method>.csv files in {args.folder}")
    print("| dataset | method | splits | test rows | 95% coverage | mean z^2 | coverage by quartile of the "
          "predicted mean (low to high) | mean z^2 by quartile |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for (dataset, method), (splits, rows) in sorted(pool(by_split, lambda d, _, m: (d, m)).items()):
        n, coverage, z2 = summary(rows)
        ordered = sorted(rows)
        bins = [ordered[i * n // 4:(i + 1) * n // 4] for i in range(4)]
        by_bin = [summary(b) for b in bins if b]
        print(f"| {dataset} | {method} | {len(splits)} | {n} | {coverage:.3f} | {z2:.2f} | "
              + " / ".join(f"{c:.3f}" for _, c, _ in by_bin) + " | "
              + " / ".join(f"{q:.2f}" for _, _, q in by_bin) + " |")
    if not args.results:
        return
    terminations = read_terminations(args.results)
    missing = [f"{d} split {k} {m}" for (d, k, m) in sorted(by_split) if (d, k, m) not in terminations]

    def ended(dataset, split, method):
        termination = terminations.get((dataset, split, method))
        if termination is None:
            return None
        return (dataset, method, "converged" if termination == "converged" else "stopped otherwise")

    print()
    print("| dataset | method | fits | splits | test rows | 95% coverage | mean z^2 |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    order = {"converged": 0, "stopped otherwise": 1}
    for (dataset, method, end), (splits, rows) in sorted(pool(by_split, ended).items(),
                                                         key=lambda item: (item[0][:2], order[item[0][2]])):
        n, coverage, z2 = summary(rows)
        print(f"| {dataset} | {method} | {end} | {len(splits)} | {n} | {coverage:.3f} | {z2:.2f} |")
    if missing:
        print(f"\nNo results row for {len(missing)} prediction file(s), left out: " + ", ".join(missing[:5])
              + (" ..." if len(missing) > 5 else ""))


if __name__ == "__main__":
    main()
