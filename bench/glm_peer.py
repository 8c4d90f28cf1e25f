#!/usr/bin/env python3
"""scikit-learn's side of the GLM benchmarks (bench/glm_compare.sh): reads the data glm_bench
wrote and times BayesianRidge, LogisticRegression and PoissonRegressor single-threaded.

Usage: OPENBLAS_NUM_THREADS=1 python3 glm_peer.py DIR REPEATS ALPHA_FIXED
Prints one JSON object per line."""
import json
import os
import sys
import time

import numpy as np
import sklearn
from sklearn.linear_model import BayesianRidge, LogisticRegression, PoissonRegressor

d, repeats, alpha_fixed = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
m, D = 100000, 50
X = np.fromfile(f"{d}/X.f64").reshape(m, D)
y_gauss = np.fromfile(f"{d}/y_gauss.f64")
y_bern = np.fromfile(f"{d}/y_bern.f64")


def timed(f, cpu=None):
    """Wall-clock seconds of each repeat; the process CPU seconds go to the list cpu if given."""
    out, times = None, []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        out = f()
        times.append(time.perf_counter() - t)
        if cpu is not None:
            cpu.append(time.process_time() - c)
    return out, times


# BayesianRidge without its Gamma hyperpriors (lambda_1 = ... = 0, so the same fixed point as
# MacKay's) and with a tolerance tight enough for 1e-6 agreement. sklearn's names: alpha_ is the
# noise precision (occam's beta), lambda_ the weight precision (occam's alpha).
iter_name = "n_iter" if sklearn.__version__ < "1.3" else "max_iter"
br_args = dict(tol=1e-10, alpha_1=0.0, alpha_2=0.0, lambda_1=0.0, lambda_2=0.0, fit_intercept=False,
               **{iter_name: 10000})
br, t = timed(lambda: BayesianRidge(**br_args).fit(X, y_gauss))
print(json.dumps({"bench": "ridge", "seconds": t, "alpha": br.lambda_, "beta": br.alpha_,
                  "sklearn": sklearn.__version__}))

# The same penalty ½α‖w‖² (C = 1/α), intercept unpenalised. lbfgs stops when the largest entry of
# its objective's gradient is below tol; LOGISTIC_TOL sets tol (default 1e-8), and the weights'
# largest relative difference from occam's is printed beside the time.
logistic_tol = float(os.environ.get("LOGISTIC_TOL", "1e-8"))
cpu = []
lr, t = timed(lambda: LogisticRegression(C=1.0 / alpha_fixed, tol=logistic_tol, max_iter=10000).fit(X, y_bern), cpu)
w_occam = np.fromfile(f"{d}/w_logistic.f64")
w_sk = np.concatenate([lr.coef_.ravel(), lr.intercept_])
print(json.dumps({"bench": "logistic", "seconds": t, "cpu_seconds": cpu, "tol": logistic_tol,
                  "max_relative_difference_to_occam": float(np.max(np.abs(w_sk - w_occam)) / np.max(np.abs(w_occam)))}))

X_rf = np.fromfile(f"{d}/X_rf.f64").reshape(4000, 400)
y_rf = np.fromfile(f"{d}/y_rf.f64")
# PoissonRegressor minimises mean deviance/2 + (alpha/2)‖w‖²: alpha = α/m for a ridge α = 100.
pr, t = timed(lambda: PoissonRegressor(alpha=100.0 / 4000, tol=1e-8, max_iter=10000).fit(X_rf, y_rf))
print(json.dumps({"bench": "poisson_ridge", "seconds": t}))
