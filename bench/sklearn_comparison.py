#!/usr/bin/env python3
"""occam's estimators beside scikit-learn's on small data sets, one fixed train/test split each
(train_test_split, 30% test, random_state 0, stratified for classes), one BLAS thread:

  diabetes (regression)       BayesianLinearRegression ~ BayesianRidge, BayesianLinearRegression(prior="ard")
                              ~ ARDRegression, BayesianMLPRegressor ~ MLPRegressor, GaussianProcessRegressor
  breast cancer, iris, wine,  BayesianLogisticRegression ~ LogisticRegressionCV,
  digits (classification)     BayesianMLPClassifier ~ MLPClassifier
  simulated Poisson GLM       BayesianPoissonRegressor ~ PoissonRegressor (α by 5-fold grid search)

Columns: fit time (seconds, the median of --repeats fits), and on the test rows: for regression the
RMSE, the mean log predictive density (occam: log_predictive_density; BayesianRidge, ARDRegression, GPR: the
Gaussian of their predict(return_std=True); MLPRegressor, which has none: a Gaussian with its
training RMSE as σ) and the coverage of the central 95% interval; for classification the log-loss,
the accuracy and the expected calibration error (15 bins, top class); for counts the mean Poisson
log-likelihood (occam: its predictive; PoissonRegressor: at its mean) and the RMSE. Inputs are
standardised for scikit-learn's estimators (a StandardScaler in a pipeline) as occam does itself.
Networks have 20 tanh units on both sides. Run:

  OPENBLAS_NUM_THREADS=1 PYTHONPATH=build/python /usr/bin/python3 bench/sklearn_comparison.py [--repeats 3] \\
      [--network-repeats 1] [--only diabetes,breast-cancer,iris,wine,digits,poisson] [--skip-networks]

The network classifiers' fit times depend on the evidence engine: rerun this after it changes.
"""

import argparse
import os
import statistics
import warnings

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from scipy.special import gammaln  # noqa: E402
from scipy.stats import norm  # noqa: E402
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits, load_iris, load_wine  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.gaussian_process import GaussianProcessRegressor  # noqa: E402
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel  # noqa: E402
from sklearn.linear_model import ARDRegression, BayesianRidge, LogisticRegressionCV, PoissonRegressor  # noqa: E402
from sklearn.model_selection import GridSearchCV, train_test_split  # noqa: E402
from sklearn.neural_network import MLPClassifier, MLPRegressor  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

import occam  # noqa: E402
from python_vs_sklearn import timed  # noqa: E402  (bench/ is the script's folder)

HIDDEN = (20,)
Z95 = norm.ppf(0.975)


def scaled(estimator):
    return make_pipeline(StandardScaler(), estimator)


def timed_fit(make, X, y, repeats):
    model, times = timed(make, X, y, repeats)
    return model, statistics.median(times)


def regression_row(name, model, seconds, X, y, y_train_rmse=None):
    if isinstance(model, occam._base.OccamEstimator):
        mean, std = model.predict(X, return_std=True)
        log_density = model.log_predictive_density(X, y)
    else:
        try:
            mean, std = model.predict(X, return_std=True)
        except TypeError:  # a point predictor: σ from its training residuals
            mean = model.predict(X)
            std = np.full(len(y), y_train_rmse)
        log_density = norm.logpdf(y, mean, std)
    rmse = float(np.sqrt(np.mean((y - mean) ** 2)))
    coverage = float(np.mean(np.abs(y - mean) <= Z95 * std))
    return f"| {name} | {seconds:.3f} | {rmse:.2f} | {np.mean(log_density):.3f} | {coverage:.3f} |"


def ece(p, y):
    confidence, correct = p.max(axis=1), (p.argmax(axis=1) == y)
    which = np.clip(np.digitize(confidence, np.linspace(0, 1, 16)[1:-1]), 0, 14)
    return sum(np.mean(which == b) * abs(correct[which == b].mean() - confidence[which == b].mean())
               for b in range(15) if np.any(which == b))


def classification_row(name, model, seconds, X, y):
    p = model.predict_proba(X)
    log_loss = -np.mean(np.log(np.clip(p[np.arange(len(y)), y], 1e-300, None)))
    accuracy = np.mean(p.argmax(axis=1) == y)
    return f"| {name} | {seconds:.3f} | {log_loss:.4f} | {accuracy:.4f} | {ece(p, y):.4f} |"


def repeats(name, args):
    return args.network_repeats if ("MLP" in name or "GaussianProcess" in name) else args.repeats


def split(X, y, stratify):
    return train_test_split(X, y, test_size=0.3, random_state=0, stratify=y if stratify else None)


def diabetes(args):
    X, y = load_diabetes(return_X_y=True)
    X_train, X_test, y_train, y_test = split(X, y, False)
    print(f"\n### diabetes: {len(y_train)} train, {len(y_test)} test rows, {X.shape[1]} inputs\n")
    print("| estimator | fit (s) | test RMSE | test log-likelihood | 95% coverage |")
    print("| --- | --- | --- | --- | --- |")
    pairs = [("occam BayesianLinearRegression", lambda: occam.BayesianLinearRegression()),
             ("sklearn BayesianRidge", lambda: BayesianRidge()),
             ("occam BayesianLinearRegression(prior=\"ard\")", lambda: occam.BayesianLinearRegression(prior="ard")),
             ("sklearn ARDRegression", lambda: ARDRegression())]
    if not args.skip_networks:
        pairs += [("occam BayesianMLPRegressor(20 tanh)", lambda: occam.BayesianMLPRegressor(hidden=HIDDEN,
                                                                                             random_state=0)),
                  ("sklearn MLPRegressor(20 tanh)", lambda: make_pipeline(
                      StandardScaler(), MLPRegressor(hidden_layer_sizes=HIDDEN, activation="tanh", max_iter=5000,
                                                     random_state=0))),
                  ("sklearn GaussianProcessRegressor(RBF + white)", lambda: make_pipeline(
                      StandardScaler(), GaussianProcessRegressor(
                          ConstantKernel() * RBF(np.ones(X.shape[1])) + WhiteKernel(), normalize_y=True,
                          random_state=0)))]
    for name, make in pairs:
        model, seconds = timed_fit(make, X_train, y_train, repeats(name, args))
        train_rmse = float(np.sqrt(np.mean((y_train - model.predict(X_train)) ** 2)))
        if "GaussianProcess" in name:
            # The pipeline's predict passes return_std through to the regressor.
            mean, std = model.predict(X_test, return_std=True)
            log_density = norm.logpdf(y_test, mean, std)
            print(f"| {name} | {seconds:.3f} | {np.sqrt(np.mean((y_test - mean) ** 2)):.2f} | "
                  f"{np.mean(log_density):.3f} | {np.mean(np.abs(y_test - mean) <= Z95 * std):.3f} |")
            continue
        print(regression_row(name, model, seconds, X_test, y_test, train_rmse), flush=True)


def classification(name, loader, args):
    X, y = loader(return_X_y=True)
    X_train, X_test, y_train, y_test = split(X, y, True)
    print(f"\n### {name}: {len(y_train)} train, {len(y_test)} test rows, {X.shape[1]} inputs, "
          f"{len(np.unique(y))} classes\n")
    print("| estimator | fit (s) | test log-loss | accuracy | ECE |")
    print("| --- | --- | --- | --- | --- |")
    pairs = [("occam BayesianLogisticRegression", lambda: occam.BayesianLogisticRegression(random_state=0)),
             ("sklearn LogisticRegressionCV", lambda: scaled(LogisticRegressionCV(max_iter=5000)))]
    if not args.skip_networks:
        pairs += [("occam BayesianMLPClassifier(20 tanh)", lambda: occam.BayesianMLPClassifier(hidden=HIDDEN,
                                                                                               random_state=0)),
                  ("sklearn MLPClassifier(20 tanh)", lambda: scaled(MLPClassifier(
                      hidden_layer_sizes=HIDDEN, activation="tanh", max_iter=5000, random_state=0)))]
    for label, make in pairs:
        model, seconds = timed_fit(make, X_train, y_train, repeats(label, args))
        print(classification_row(label, model, seconds, X_test, y_test), flush=True)


def poisson(args):
    # log λ = 0.3 + xᵀw with 10 inputs, half of them irrelevant, 600 rows.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 10))
    w = np.array([0.4, -0.3, 0.2, 0.1, -0.2, 0, 0, 0, 0, 0])
    y = rng.poisson(np.exp(0.3 + X @ w)).astype(float)
    X_train, X_test, y_train, y_test = split(X, y, False)
    print(f"\n### simulated Poisson GLM: {len(y_train)} train, {len(y_test)} test rows, 10 inputs (5 relevant)\n")
    print("| estimator | fit (s) | test Poisson log-likelihood | test RMSE |")
    print("| --- | --- | --- | --- |")
    grid = {"poissonregressor__alpha": np.logspace(-4, 1, 16)}
    for name, make in [("occam BayesianPoissonRegressor", lambda: occam.BayesianPoissonRegressor()),
                       ("occam BayesianPoissonRegressor(prior=\"ard\")",
                        lambda: occam.BayesianPoissonRegressor(prior="ard")),
                       ("sklearn PoissonRegressor, α by 5-fold grid search (16 values)",
                        lambda: GridSearchCV(scaled(PoissonRegressor(max_iter=1000)), grid, cv=5))]:
        model, seconds = timed_fit(make, X_train, y_train, args.repeats)
        mean = model.predict(X_test)
        if isinstance(model, occam._base.OccamEstimator):
            log_lik = np.mean(model.log_predictive_density(X_test, y_test))
        else:
            log_lik = np.mean(y_test * np.log(mean) - mean - gammaln(y_test + 1))
        print(f"| {name} | {seconds:.3f} | {log_lik:.4f} | {np.sqrt(np.mean((y_test - mean) ** 2)):.3f} |",
              flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3, help="fits of each linear model and GLM (the median is shown)")
    parser.add_argument("--network-repeats", type=int, default=1, help="fits of each network and Gaussian process")
    parser.add_argument("--only", default="diabetes,breast-cancer,iris,wine,digits,poisson")
    parser.add_argument("--skip-networks", action="store_true")
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    print(f"occam {occam.__version__}; OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}; "
          f"fit times are the median of {args.repeats} fits ({args.network_repeats} for networks and the GP)")
    loaders = {"breast-cancer": load_breast_cancer, "iris": load_iris, "wine": load_wine, "digits": load_digits}
    for name in args.only.split(","):
        if name == "diabetes":
            diabetes(args)
        elif name == "poisson":
            poisson(args)
        else:
            classification(name, loaders[name], args)


if __name__ == "__main__":
    main()
