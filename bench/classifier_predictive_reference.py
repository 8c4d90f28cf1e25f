#!/usr/bin/env python3
"""Which part of a Bayesian logistic / softmax regression's predictive is wrong, against an exact
reference: NUTS on the same posterior (the same data, standardisation, prior and α), many draws.

For each data set the script fits the Laplace approximation with α by the evidence, then compares
at that α the class probabilities of

  map          the plug-in p(y | x, w_MAP) (no posterior spread), fitted by method "map"
  plug-in      the same from the Laplace fit (predictive "plug-in")
  probit       the Laplace posterior through the probit / extended-probit approximation
  mc           the Laplace posterior N(w_MAP, A⁻¹) by Monte Carlo (the Gaussian itself, no
               approximation of the integral beyond sampling error; for a linear model the same
               as linearized-mc)
  bridge       the Laplace bridge (Hobbhahn, Kristiadi & Hennig 2022): a Dirichlet matched to
               the Gaussian belief about the logits
  nuts         NUTS draws of w at the same α: the exact posterior predictive up to Monte Carlo error

and, to see whether the α is at fault, NUTS with α sampled by Gibbs under its Gamma hyperprior
(the hierarchical posterior) and NUTS at α/10 and 10α. Per predictive it prints the test log-loss,
the expected calibration error (15 bins, top label), the accuracy, and the mean probability of the
true class on the training rows. Run (build/python on PYTHONPATH, one BLAS thread):

  OPENBLAS_NUM_THREADS=1 PYTHONPATH=build/python /usr/bin/python3 bench/classifier_predictive_reference.py \
      [--draws 2500] [--chains 4] [--data iris-setosa,digits,breast-cancer,wine,iris,overlap] \
      [--predictives linearized,mc,bridge,plug-in] [--samplers fixed,tenth,tenfold,gibbs]
"""

import argparse
import json
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

from occam import _occam  # noqa: E402


def data_set(name):
    """(X_train, y_train, X_test, y_test) as float64, classes 0..K−1."""
    if name == "iris-setosa":  # the separable case: every row is a training row, as in the report
        X, y = load_iris(return_X_y=True)
        y = (y == 0).astype(float)
        return X, y, X, y
    if name == "digits":  # the first 900 rows, 630 to train
        X, y = load_digits(return_X_y=True)
        X, y = X[:900], y[:900]
        X_train, X_test, y_train, y_test = train_test_split(X, y, train_size=630, random_state=0, stratify=y)
        return X_train, y_train.astype(float), X_test, y_test.astype(float)
    if name == "overlap":  # two inputs, classes that overlap, few training rows: no separation
        rng = np.random.default_rng(0)
        X = rng.normal(size=(1040, 2))
        y = (rng.uniform(size=1040) < 1 / (1 + np.exp(-(1.5 * X[:, 0] - X[:, 1])))).astype(float)
        return X[:40], y[:40], X[40:], y[40:]
    if name == "iris":
        X, y = load_iris(return_X_y=True)
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
        return X_train, y_train.astype(float), X_test, y_test.astype(float)
    loader = {"breast-cancer": load_breast_cancer, "wine": load_wine}[name]
    X, y = loader(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    return X_train, y_train.astype(float), X_test, y_test.astype(float)


def spec(num_classes, alpha):
    likelihood = "bernoulli" if num_classes == 2 else "categorical"
    return json.dumps({"network": {"kind": "linear", "intercept": True}, "likelihood": {"kind": likelihood},
                       "prior": {"kind": "ridge", "alpha": float(alpha)}, "standardize": "inputs"})


def fit(X, y, alpha, method):
    classes = int(y.max()) + 1
    labels = [] if classes == 2 else [str(c) for c in range(classes)]
    return _occam.fit(spec(classes, alpha), X, y.reshape(-1, 1), [f"x{d}" for d in range(X.shape[1])], "y", labels,
                      None, json.dumps(method))


def probabilities(model, X, **options):
    P = model.predict(X, **options)["probabilities"]
    return np.hstack([1.0 - P, P]) if P.shape[1] == 1 else P


def log_loss(P, y):
    return float(-np.mean(np.log(np.clip(P[np.arange(len(y)), y.astype(int)], 1e-300, None))))


def expected_calibration_error(P, y, bins=15):
    confidence = P.max(axis=1)
    correct = (P.argmax(axis=1) == y.astype(int)).astype(float)
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.clip(np.digitize(confidence, edges[1:-1]), 0, bins - 1)
    total = 0.0
    for b in range(bins):
        inside = which == b
        if inside.any():
            total += inside.mean() * abs(correct[inside].mean() - confidence[inside].mean())
    return float(total)


def row(name, P_test, y_test, P_train, y_train, note=""):
    true_train = P_train[np.arange(len(y_train)), y_train.astype(int)].mean()
    accuracy = (P_test.argmax(axis=1) == y_test.astype(int)).mean()
    print(f"| {name} | {log_loss(P_test, y_test):.4f} | {expected_calibration_error(P_test, y_test):.4f} | "
          f"{accuracy:.4f} | {true_train:.4f} | {note} |", flush=True)


def study(name, args):
    X, y, X_test, y_test = data_set(name)
    start = time.perf_counter()
    laplace = fit(X, y, 1.0, {"method": "laplace", "seed": 1})
    report = json.loads(laplace.report)
    alpha = float(laplace.alpha[0])
    print(f"\n### {name}: {len(X)} train, {len(X_test)} test rows, {laplace.num_params} weights; evidence α = "
          f"{alpha:.4g}, γ = {report['gamma_total']:.1f}, termination {report['termination']} "
          f"({time.perf_counter() - start:.2f} s)\n")
    print("| predictive | test log-loss | ECE | accuracy | mean P(true class), train | note |")
    print("| --- | --- | --- | --- | --- | --- |")
    both = (X_test, X)
    point = fit(X, y, alpha, {"method": "map", "hyper": "fixed", "seed": 1})
    row("map (plug-in w_MAP)", probabilities(point, X_test), y_test, probabilities(point, X), y)
    for predictive in args.predictives:
        try:
            P = [probabilities(laplace, Z, method=predictive, samples=args.mc_samples, seed=2) for Z in both]
        except ValueError as e:  # a predictive this build does not have
            print(f"| laplace, {predictive} | — | — | — | — | {e} |")
            continue
        row(f"laplace, {predictive}", P[0], y_test, P[1], y)
    sampler = {"method": "nuts", "chains": args.chains, "warmup": args.warmup, "draws": args.draws, "seed": 3}
    runs = {"fixed": (f"nuts at α = {alpha:.3g}", alpha, "fixed"), "tenth": ("nuts at α/10", alpha / 10, "fixed"),
            "tenfold": ("nuts at 10α", alpha * 10, "fixed"), "gibbs": ("nuts, α by Gibbs", alpha, "gibbs")}
    for label, a, hyper in (runs[k] for k in args.samplers):
        start = time.perf_counter()
        model = fit(X, y, a, dict(sampler, hyper=hyper))
        seconds = time.perf_counter() - start
        out = model.sampler_output()
        names = out["diagnostic_names"]
        rhat = max(v[names.index("rhat")] for k, v in out["diagnostics"].items() if k.startswith("w."))
        ess = min(v[names.index("ess_bulk")] for k, v in out["diagnostics"].items() if k.startswith("w."))
        note = f"max R̂ {rhat:.3f}, min bulk ESS {ess:.0f}, {seconds:.0f} s"
        if hyper == "gibbs":
            a_draws = out["draws"]["alpha.1"].ravel()
            note += f"; α posterior median {np.median(a_draws):.3g} (5–95%: {np.quantile(a_draws, 0.05):.3g}–" \
                    f"{np.quantile(a_draws, 0.95):.3g})"
        row(label, probabilities(model, X_test), y_test, probabilities(model, X), y, note)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="iris-setosa,digits")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=2500)
    parser.add_argument("--mc-samples", type=int, default=20000)
    parser.add_argument("--predictives", default="linearized,mc,bridge,plug-in")
    parser.add_argument("--samplers", default="fixed,tenth,tenfold,gibbs")
    args = parser.parse_args()
    args.predictives = args.predictives.split(",")
    args.samplers = args.samplers.split(",")
    for name in args.data.split(","):
        study(name, args)


if __name__ == "__main__":
    main()
