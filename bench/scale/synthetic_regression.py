#!/usr/bin/python3
"""Writes the synthetic regression of docs/scale.md: ROWS rows of 20 standard normal inputs x1..x20
and y = sum_j sin(j x_j)/j + 0.1 noise, seeded, as CSV.

    /usr/bin/python3 bench/scale/synthetic_regression.py ROWS OUT.csv [SEED]
"""
import sys

import numpy as np


def main():
    rows, out = int(sys.argv[1]), sys.argv[2]
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows, 20))
    j = np.arange(1, 21)
    y = (np.sin(X * j) / j).sum(axis=1) + 0.1 * rng.standard_normal(rows)
    header = ",".join([f"x{k}" for k in j] + ["y"])
    np.savetxt(out, np.column_stack([X, y]), delimiter=",", header=header, comments="", fmt="%.6f")


if __name__ == "__main__":
    main()
