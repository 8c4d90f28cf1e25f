#!/usr/bin/python3
"""Writes a smooth synthetic regression with a known noise level, as CSV: ROWS rows of 20 standard
normal inputs x1..x20 and y = f(x) + NOISE * e, e ~ N(0, 1), where
    f(x) = sum_{k=1..4} sin(u_k . x) + 0.5 tanh(u_5 . x),
the u_k fixed unit vectors (drawn once from seed 12345), so f is the same function in every file.
NOISE = 0 writes the noise-free targets (a test set to score predictions against f).

    /usr/bin/python3 bench/scale/smooth_regression.py ROWS OUT.csv SEED NOISE
"""
import sys

import numpy as np


def main():
    rows, out, seed, noise = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    U = np.random.default_rng(12345).standard_normal((5, 20))
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows, 20))
    P = X @ U.T
    f = np.sin(P[:, :4]).sum(axis=1) + 0.5 * np.tanh(P[:, 4])
    y = f + noise * rng.standard_normal(rows)
    header = ",".join([f"x{k}" for k in range(1, 21)] + ["y"])
    np.savetxt(out, np.column_stack([X, y]), delimiter=",", header=header, comments="", fmt="%.8f")


if __name__ == "__main__":
    main()
