#!/usr/bin/env python3
"""Two methods compared split by split: for each data set where both have rows for the same splits,
the mean over those splits of (test log-likelihood of A - that of B), its standard error (the
splits' standard deviation over sqrt(n)), and on how many splits A is higher. Pairing removes the
spread between splits that both methods share, which the tables' separate standard errors keep.

    python3 bench/uci/paired.py laplace-hetero laplace docs/uci-results/a0ddd5f/*.csv docs/uci-results/9174e4e/*.csv

One method at two commits: A's rows from the files, B's from --b-files.

    python3 bench/uci/paired.py laplace laplace docs/uci-results/7fc4f80/*.csv --b-files docs/uci-results/9174e4e/*.csv

Reads occam_uci results files (lines starting with '#' are the build header). A row that two
files hold is read once. Standard library only.
"""
import argparse
import csv
import math
from collections import defaultdict


def read(paths):
    ll = {}  # (method, dataset, split) -> test log-likelihood
    for path in paths:
        with open(path, newline="") as f:
            for row in csv.DictReader(line for line in f if not line.startswith("#")):
                ll.setdefault((row["method"], row["dataset"], int(row["split"])), float(row["test_ll"]))
    return ll


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", help="method A")
    parser.add_argument("b", help="method B")
    parser.add_argument("files", nargs="+", help="occam_uci results files")
    parser.add_argument("--b-files", nargs="+", help="read B's rows from these files instead (A's from FILES): "
                        "one method at two commits")
    args = parser.parse_args()
    ll = read(args.files)
    ll_b = read(args.b_files) if args.b_files else ll
    diffs = defaultdict(list)
    for (method, dataset, split), value in sorted(ll.items()):
        if method == args.a and (args.b, dataset, split) in ll_b:
            diffs[dataset].append(value - ll_b[(args.b, dataset, split)])
    if not diffs:
        raise SystemExit(f"paired.py: no split has rows of both {args.a} and {args.b}")
    print(f"| data set | splits | {args.a} - {args.b} (test LL, mean ± s.e.) | {args.a} higher on |")
    print("| --- | --- | --- | --- |")
    for dataset, d in sorted(diffs.items()):
        n = len(d)
        mean = sum(d) / n
        se = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1) / n) if n > 1 else float("nan")
        print(f"| {dataset} | {n} | {mean:+.3f} ± {se:.3f} | {sum(x > 0 for x in d)} of {n} |")


if __name__ == "__main__":
    main()
