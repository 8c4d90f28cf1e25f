#!/usr/bin/env python3
"""Where a method's 95% intervals miss: the test predictions occam_uci writes with --predictions DIR
(DIR/<dataset>_<split>_<method>.csv, columns test_row,y,mean,std), pooled over the splits found, per
data set and method: coverage of the central 95% interval and the mean of z^2 = ((y - mean)/std)^2
(1 for a calibrated Gaussian predictive), overall and in four bins of the predicted mean (its
quartiles over the pooled test rows). A noise model that is right on average but wrong in places
shows as coverage and z^2 that change across the bins.

    build/occam_uci --datasets yacht --methods laplace --predictions preds --out yacht.csv
    python3 bench/uci/calibration.py preds

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
    pooled = defaultdict(list)  # (dataset, method) -> [(mean, z)], splits pooled
    splits = defaultdict(set)
    pattern = re.compile(r"^(?P<dataset>.+)_(?P<split>\d+)_(?P<method>[a-z][a-z0-9-]*)\.csv$")
    for path in sorted(glob.glob(os.path.join(folder, "*.csv"))):
        m = pattern.match(os.path.basename(path))
        if not m:
            continue
        key = (m["dataset"], m["method"])
        splits[key].add(int(m["split"]))
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                y, mu, sd = float(row["y"]), float(row["mean"]), float(row["std"])
                pooled[key].append((mu, (y - mu) / sd))
    return pooled, splits


def summary(rows):
    n = len(rows)
    covered = sum(1 for _, z in rows if abs(z) <= Z95)
    return n, covered / n, sum(z * z for _, z in rows) / n


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", help="the --predictions folder of occam_uci")
    args = parser.parse_args()
    pooled, splits = read(args.folder)
    if not pooled:
        raise SystemExit(f"calibration.py: no <dataset>_<split>_<method>.csv files in {args.folder}")
    print("| dataset | method | splits | test rows | 95% coverage | mean z^2 | coverage by quartile of the "
          "predicted mean (low to high) | mean z^2 by quartile |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for (dataset, method), rows in sorted(pooled.items()):
        n, coverage, z2 = summary(rows)
        ordered = sorted(rows)
        bins = [ordered[i * n // 4:(i + 1) * n // 4] for i in range(4)]
        by_bin = [summary(b) for b in bins if b]
        print(f"| {dataset} | {method} | {len(splits[(dataset, method)])} | {n} | {coverage:.3f} | {z2:.2f} | "
              + " / ".join(f"{c:.3f}" for _, c, _ in by_bin) + " | "
              + " / ".join(f"{q:.2f}" for _, _, q in by_bin) + " |")


if __name__ == "__main__":
    main()
