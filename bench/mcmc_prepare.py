#!/usr/bin/python3
"""Writes the two data sets of bench/mcmc_bench.sh, standardised with the training mean and
standard deviation (numpy's, ddof = 0), so that occam (--standardize none) and Stan see the same
numbers:

  OUT/toy/    the occam demo's 1-D toy regression (from `occam demo`'s data.csv and test.csv)
  OUT/boston/ Boston housing, split 0 of the UCI splits (0-based indices)

Each folder gets train.csv (x..., y), test_inputs.csv (the first N_TEST test inputs) and test.csv.
"""
import csv
import os
import sys

import numpy as np


def write(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for r in rows:
            w.writerow([repr(float(v)) for v in r])


def save(folder, X, y, X_test, y_test, n_test):
    os.makedirs(folder, exist_ok=True)
    mx, sx = X.mean(0), X.std(0)
    sx[sx == 0] = 1.0
    my, sy = y.mean(), y.std()
    Xs, Xt = (X - mx) / sx, (X_test - mx) / sx
    names = [f"x{i + 1}" for i in range(X.shape[1])]
    write(os.path.join(folder, "train.csv"), names + ["y"], np.column_stack([Xs, (y - my) / sy]))
    write(os.path.join(folder, "test_inputs.csv"), names, Xt[:n_test])
    write(os.path.join(folder, "test.csv"), names + ["y"], np.column_stack([Xt, (y_test - my) / sy]))


def main():
    out, toy_dir, uci_dir = sys.argv[1], sys.argv[2], sys.argv[3]
    train = np.loadtxt(os.path.join(toy_dir, "data.csv"), delimiter=",", skiprows=1)
    test = np.loadtxt(os.path.join(toy_dir, "test.csv"), delimiter=",", skiprows=1)
    save(os.path.join(out, "toy"), train[:, :1], train[:, 1], test[:, :1], test[:, 1], n_test=10)

    d = os.path.join(uci_dir, "bostonHousing")
    data = np.loadtxt(os.path.join(d, "data.txt"))
    features = np.loadtxt(os.path.join(d, "index_features.txt"), dtype=int)
    target = int(np.loadtxt(os.path.join(d, "index_target.txt")))
    tr = np.loadtxt(os.path.join(d, "index_train_0.txt"), dtype=int)
    te = np.loadtxt(os.path.join(d, "index_test_0.txt"), dtype=int)
    X, y = data[:, features], data[:, target]
    save(os.path.join(out, "boston"), X[tr], y[tr], X[te], y[te], n_test=len(te))


if __name__ == "__main__":
    main()
