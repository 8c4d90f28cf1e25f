#!/usr/bin/env python3
"""occam's estimators against scikit-learn's, timed in the same run on Boston housing (split 0 of
the UCI splits in /work/shared/data/uci), single-threaded BLAS:

  BayesianLinearRegression.fit   vs  BayesianRidge.fit (hyperpriors 0, run to its fixed point)
  BayesianMLPRegressor(method="laplace", hidden=(50,)).fit  vs  MLPRegressor(hidden_layer_sizes=(50,)).fit

Each fit is repeated; the table gives the fastest and the median time of each, the ratio of the
medians (sklearn / occam: above 1 means occam is faster), and the test RMSE and test
log-likelihood where the model has a predictive distribution (MLPRegressor has none). Run:

  OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/python_vs_sklearn.py [--repeats 5] [--mlp-repeats 1] [--data DIR]

with build/python on PYTHONPATH (scripts/build.sh makes it importable).
"""

import argparse
import os
import statistics
import sys
import time
import warnings

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.linear_model import BayesianRidge  # noqa: E402
from sklearn.neural_network import MLPRegressor  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

import occam  # noqa: E402


def load_boston(folder, split):
    data = np.loadtxt(os.path.join(folder, "data.txt"))
    features = np.loadtxt(os.path.join(folder, "index_features.txt"), dtype=int)
    target = int(np.loadtxt(os.path.join(folder, "index_target.txt")))
    train = np.loadtxt(os.path.join(folder, f"index_train_{split}.txt"), dtype=int)
    test = np.loadtxt(os.path.join(folder, f"index_test_{split}.txt"), dtype=int)
    X, y = data[:, features], data[:, target]
    return X[train], y[train], X[test], y[test]


def timed(make, X, y, repeats):
    times, model = [], None
    for _ in range(repeats):
        model = make()
        start = time.perf_counter()
        model.fit(X, y)
        times.append(time.perf_counter() - start)
    return model, times


def gaussian_log_likelihood(y, mean, std):
    return float(np.mean(-0.5 * np.log(2 * np.pi * std ** 2) - 0.5 * ((y - mean) / std) ** 2))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="/work/shared/data/uci/bostonHousing")
    parser.add_argument("--split", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=5, help="fits of each linear model")
    parser.add_argument("--mlp-repeats", type=int, default=1, help="fits of each network (each takes minutes)")
    args = parser.parse_args()
    X, y, X_test, y_test = load_boston(args.data, args.split)
    warnings.simplefilter("ignore", ConvergenceWarning)

    pairs = [
        ("linear, evidence", args.repeats,
         lambda: occam.BayesianLinearRegression(tol=1e-9),
         lambda: BayesianRidge(n_iter=100000, tol=1e-10, alpha_1=0.0, alpha_2=0.0, lambda_1=0.0, lambda_2=0.0)),
        ("MLP 50 tanh", args.mlp_repeats,
         lambda: occam.BayesianMLPRegressor(hidden=(50,), method="laplace", random_state=1),
         lambda: make_pipeline(StandardScaler(), MLPRegressor(hidden_layer_sizes=(50,), activation="tanh",
                                                              max_iter=2000, random_state=1))),
    ]
    print(f"Boston housing split {args.split}: {len(X)} train, {len(X_test)} test rows; "
          f"OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}; {args.repeats} (linear) and "
          f"{args.mlp_repeats} (MLP) repeats; "
          f"load {open('/proc/loadavg').read().split()[0]}")
    print("| model | occam fit (min / median) | scikit-learn fit (min / median) | ratio of medians "
          "| test RMSE occam / sklearn | test log-lik. occam / sklearn |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, repeats, ours_make, theirs_make in pairs:
        ours, ours_t = timed(ours_make, X, y, repeats)
        theirs, theirs_t = timed(theirs_make, X, y, repeats)
        mean, std = ours.predict(X_test, return_std=True)
        rmse_ours = float(np.sqrt(np.mean((mean - y_test) ** 2)))
        ll_ours = gaussian_log_likelihood(y_test, mean, std)
        if isinstance(theirs, BayesianRidge):
            t_mean, t_std = theirs.predict(X_test, return_std=True)
            ll_theirs = f"{gaussian_log_likelihood(y_test, t_mean, t_std):.3f}"
        else:
            t_mean, ll_theirs = theirs.predict(X_test), "—"
        rmse_theirs = float(np.sqrt(np.mean((t_mean - y_test) ** 2)))
        ratio = statistics.median(theirs_t) / statistics.median(ours_t)
        print(f"| {name} | {min(ours_t) * 1e3:.2f} / {statistics.median(ours_t) * 1e3:.2f} ms "
              f"| {min(theirs_t) * 1e3:.2f} / {statistics.median(theirs_t) * 1e3:.2f} ms | {ratio:.3g} "
              f"| {rmse_ours:.3f} / {rmse_theirs:.3f} | {ll_ours:.3f} / {ll_theirs} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
