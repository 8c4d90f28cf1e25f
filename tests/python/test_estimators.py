"""The estimators as a scikit-learn user meets them: calibrated probabilities, fits that stop,
warnings for fits that did not converge, no state kept from an earlier fit, predictive draws that
agree with predict, every method on every estimator, scikit-learn's conventions, and parameters and
data refused with the estimator's own names."""

import os
import signal
import threading
import time
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_diabetes, load_iris
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV

import occam
from occam import (BayesianLinearRegression, BayesianLogisticRegression, BayesianMLPClassifier, BayesianMLPRegressor,
                   BayesianPoissonRegressor, SamplerWarning)


def sine_data(n=60, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, 1))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=n)
    return X, y


def walkthrough_data():
    rng = np.random.default_rng(1)
    x = np.where(np.arange(60) % 2 == 0, -1.0, 0.3) + 0.7 * rng.uniform(size=60)
    return x.reshape(-1, 1), np.sin(np.pi * x) + 0.1 * rng.normal(size=60)


# --- 1. calibrated probabilities ---------------------------------------------------------------


def test_separable_classes_get_the_confidence_of_the_exact_posterior():
    # Setosa is linearly separable from the other irises. NUTS on the same posterior (α by the
    # evidence) gives P(setosa) = 0.999 on the training setosa rows (docs/python.md); the Laplace
    # Gaussian through the probit gave 0.81, the default predictive must not.
    X, y = load_iris(return_X_y=True)
    est = BayesianLogisticRegression().fit(X, y == 0)
    p = est.predict_proba(X[y == 0])[:, 1]
    assert p.mean() > 0.99
    probit = est.predict_proba(X[y == 0], predictive="probit")[:, 1]
    assert probit.mean() < 0.9  # what the Laplace posterior's Gaussian says: the reason for the default
    assert np.array_equal(probit, est.model_.predict(X[y == 0], method="linearized")["probabilities"][:, 1])


def test_every_predictive_is_reachable_and_gives_probabilities():
    X, y = load_iris(return_X_y=True)
    est = BayesianLogisticRegression().fit(X, y)
    for predictive in ("auto", "bridge", "probit", "linearized", "linearized-mc", "mc", "plug-in"):
        p = est.predict_proba(X[:5], predictive=predictive)
        assert p.shape == (5, 3) and np.allclose(p.sum(axis=1), 1.0), predictive
    chosen = BayesianLogisticRegression(predictive="probit").fit(X, y)
    assert np.array_equal(chosen.predict_proba(X), est.predict_proba(X, predictive="probit"))
    with pytest.raises(ValueError, match="predictive"):
        est.predict_proba(X, predictive="softmax")


def test_the_default_predictive_is_better_calibrated_than_the_probit_on_digits():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X[:900], y[:900], train_size=630, random_state=0, stratify=y[:900])
    est = BayesianLogisticRegression().fit(X_train, y_train)

    def log_loss(p):
        return -np.mean(np.log(p[np.arange(len(y_test)), y_test]))

    default, probit = log_loss(est.predict_proba(X_test)), log_loss(est.predict_proba(X_test, predictive="probit"))
    # Measured (docs/python.md): 0.432 with the probit, 0.167 from NUTS on the same posterior.
    assert probit > 0.35 and default < 0.25


# --- 2. fits that stop -------------------------------------------------------------------------


def test_a_regression_target_given_to_a_classifier_is_refused():
    X, y = load_diabetes(return_X_y=True)
    start = time.monotonic()
    with pytest.raises(ValueError, match="214 distinct float values"):
        BayesianLogisticRegression().fit(X, y)
    assert time.monotonic() - start < 5.0


SOFTMAX_OVER_214_CLASSES = """
import os, signal, sys, threading
from sklearn.datasets import load_diabetes
from occam import BayesianLogisticRegression
X, y = load_diabetes(return_X_y=True)
threading.Timer(3.0, os.kill, (os.getpid(), signal.SIGINT)).start()
try:
    BayesianLogisticRegression().fit(X, y.astype(int))  # integer labels: 214 classes, taken as asked
except KeyboardInterrupt:
    sys.exit(7)
"""


@pytest.mark.xfail(strict=True, reason="the Gauss-Newton matrix of a 214-class softmax (W = 2354) is formed in "
                                       "src/inference/curvature/curvature.cc's accumulate_gauss_newton_upper, "
                                       "which polls no stop yet; "
                                       "the evidence's gradient (src/inference/evidence/total_gradient.cc) does")
def test_ctrl_c_stops_a_softmax_over_hundreds_of_classes():
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", SOFTMAX_OVER_214_CLASSES])
    try:
        assert child.wait(timeout=30) == 7
    finally:
        child.kill()
        child.wait()


# --- 3. warnings -------------------------------------------------------------------------------


def test_a_fit_stopped_by_its_iteration_limit_warns():
    X, y = sine_data()
    with pytest.warns(ConvergenceWarning, match="maximum_iterations|no_progress"):
        est = BayesianMLPRegressor(hidden=(5,), max_iter=2, random_state=0).fit(X, y)
    assert est.termination_ in ("maximum_iterations", "no_progress")


def test_unmixed_chains_warn_and_hyperparameters_are_posterior_means():
    X, y = sine_data(40)
    with pytest.warns(SamplerWarning, match="R-hat|ESS"):
        est = BayesianMLPRegressor(hidden=(2,), method="nuts", chains=2, warmup=20, draws=20, random_state=3).fit(X, y)
    draws = est.posterior_draws_
    assert est.beta_ == pytest.approx(draws["beta"].mean(), rel=1e-12)
    assert list(est.alpha_.values())[0] == pytest.approx(draws["alpha.1"].mean(), rel=1e-12)
    assert est.beta_ != est.report_["beta"]  # the report keeps the chains' starting value


def test_constant_columns_have_no_rhat():
    X, y = sine_data(40)
    est = BayesianMLPRegressor(hidden=(2,), method="nuts", hyper="fixed", chains=2, warmup=50, draws=50,
                               random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)
        est.fit(X, y)
    d = est.diagnostics_
    draws = est.posterior_draws_
    # The step size is constant in each chain after warm-up (another in each chain).
    steps = draws["stepsize__"]
    assert np.allclose(steps, steps[:, :1], rtol=1e-14, atol=0) and steps[0, 0] != steps[1, 0]
    # Every column that is constant within each chain has no R-hat or ESS: the step size, and the
    # divergences where there are none (whether a transition diverges here moves with the last bits
    # of the CPU's BLAS kernels: none with one machine's, 7 of 100 with OpenBLAS's Haswell kernels).
    constant = [c for c in draws if np.all(np.asarray(draws[c]) == np.asarray(draws[c])[:, :1])]
    assert "stepsize__" in constant
    for column in constant:
        assert np.isnan(d.loc[column, "rhat"]) and np.isnan(d.loc[column, "ess_bulk"]), d.loc[column]
    finite = d["rhat"].dropna()
    assert (finite < 100).all(), finite[finite >= 100]


# --- 4. every fit starts clean -----------------------------------------------------------------


def test_a_laplace_fit_after_an_mcmc_fit_keeps_nothing_of_it():
    X, y = sine_data(40)
    est = BayesianMLPRegressor(hidden=(2,), method="nuts", chains=1, warmup=30, draws=17, random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)
        est.fit(X, y)
    assert est.posterior_draws_["lp__"].shape == (1, 17)
    est.set_params(method="laplace").fit(X, y)
    for name in ("posterior_draws_", "diagnostics_", "chains_"):
        assert not hasattr(est, name), name
    assert est.sample_posterior_predictive(X, n_samples=20).shape == (20, len(X))


# --- 5. predictive draws that agree with predict -----------------------------------------------


def test_posterior_predictive_draws_have_the_spread_predict_reports():
    X, y = walkthrough_data()
    est = BayesianMLPRegressor(hidden=(50,), random_state=1).fit(X, y)
    grid = np.linspace(-1.0, 1.0, 5).reshape(-1, 1)
    mean, std = est.predict(grid, return_std=True)
    n = 4000
    draws = est.sample_posterior_predictive(grid, n_samples=n, random_state=2)
    assert np.all(np.abs(draws.mean(axis=0) - mean) < 5 * std / np.sqrt(n))
    assert np.all(np.abs(draws.std(axis=0, ddof=1) - std) < 5 * std / np.sqrt(2 * n))
    # The weights pushed through the network itself are still there, by name.
    network = est.sample_posterior_predictive(grid, n_samples=200, random_state=2, predictive="mc")
    assert network.shape == (200, 5)


# --- 6. every method on every estimator --------------------------------------------------------


@pytest.mark.parametrize("make, data", [
    (lambda m: BayesianMLPClassifier(hidden=(2,), method=m, random_state=0), "binary"),
    (lambda m: BayesianLogisticRegression(method=m, random_state=0), "binary"),
    (lambda m: BayesianPoissonRegressor(method=m, random_state=0), "counts"),
    (lambda m: BayesianLinearRegression(method=m, random_state=0), "real"),
    (lambda m: BayesianMLPRegressor(hidden=(2,), method=m, random_state=0), "real"),
])
@pytest.mark.parametrize("method", ["nuts", "hmc", "metropolis", "vi", "map"])
def test_every_estimator_takes_every_method(make, data, method):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = {"binary": (X[:, 0] + 0.5 * rng.normal(size=60) > 0).astype(int),
         "counts": rng.poisson(np.exp(0.3 * X[:, 0])).astype(float),
         "real": X[:, 0] - X[:, 1] + 0.3 * rng.normal(size=60)}[data]
    est = make(method)
    params = {"chains": 1, "warmup": 60, "draws": 40} if method in ("nuts", "hmc", "metropolis") else {}
    if method == "map":
        params["hyper"] = "fixed"
    if method == "vi":
        params["method_options"] = {"vi_iterations": 200}
    est.set_params(**params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, y)
    out = est.predict_proba(X) if data == "binary" else est.predict(X)
    assert np.all(np.isfinite(out))


# --- 7. scikit-learn's conventions -------------------------------------------------------------


def test_logistic_coefficients_are_in_the_units_of_x():
    X, y = load_iris(return_X_y=True)
    binary = BayesianLogisticRegression().fit(X, y == 2)
    assert binary.coef_.shape == (1, 4) and binary.intercept_.shape == (1,)
    logit = X @ binary.coef_[0] + binary.intercept_[0]
    plug_in = binary.predict_proba(X, predictive="plug-in")[:, 1]
    np.testing.assert_allclose(1 / (1 + np.exp(-logit)), plug_in, rtol=1e-10, atol=1e-14)
    # Against scikit-learn's at the same penalty, ½α‖w‖² = ½‖w‖²/C, without an intercept (which
    # scikit-learn leaves unpenalised and occam's ridge prior does not).
    fixed = BayesianLogisticRegression(method="map", hyper="fixed", alpha=0.5, standardize="none",
                                       fit_intercept=False).fit(X, y == 2)
    sk = LogisticRegression(C=2.0, tol=1e-12, max_iter=100000, fit_intercept=False).fit(X, y == 2)
    np.testing.assert_allclose(fixed.coef_, sk.coef_, rtol=1e-4)
    assert np.array_equal(fixed.intercept_, [0.0])
    multi = BayesianLogisticRegression().fit(X, y)
    assert multi.coef_.shape == (3, 4) and multi.intercept_.shape == (3,)


def test_poisson_coefficients_are_in_the_units_of_x():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 3)) * [1.0, 10.0, 0.1] + [0.0, 5.0, 1.0]
    y = rng.poisson(np.exp(0.3 + X @ [0.5, -0.03, 2.0])).astype(float)
    est = BayesianPoissonRegressor().fit(X, y)
    np.testing.assert_allclose(est.coef_, [0.5, -0.03, 2.0], rtol=0.2)
    np.testing.assert_allclose(X @ est.coef_ + est.intercept_, np.log(est.predict(X)), atol=0.05)


def test_decision_function_log_predictive_density_and_a_log_likelihood_scorer():
    X, y = load_iris(return_X_y=True)
    est = BayesianLogisticRegression().fit(X, y)
    assert np.array_equal(np.argmax(est.decision_function(X), axis=1), np.argmax(est.predict_proba(X), axis=1))
    np.testing.assert_allclose(est.log_predictive_density(X, y), np.log(est.predict_proba(X)[np.arange(150), y]))
    binary = BayesianLogisticRegression().fit(X, y == 1)
    assert np.array_equal(binary.decision_function(X) > 0, binary.predict(X))
    # Regressors: the Gaussian predictive density of the linear model.
    Xs, ys = sine_data(80)
    line = BayesianLinearRegression().fit(Xs, ys)
    mean, std = line.predict(Xs, return_std=True)
    np.testing.assert_allclose(line.log_predictive_density(Xs, ys),
                               -0.5 * np.log(2 * np.pi * std ** 2) - 0.5 * ((ys - mean) / std) ** 2, rtol=1e-9)
    search = GridSearchCV(BayesianLinearRegression(), {"alpha": [0.1, 10.0]}, scoring=occam.log_predictive_density_scorer,
                          cv=3).fit(Xs, ys)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    assert occam.log_predictive_density_scorer(line, Xs, ys) == pytest.approx(line.log_predictive_density(Xs, ys).mean())


def test_hetero_networks_report_their_noise_level():
    rng = np.random.default_rng(4)
    X = rng.uniform(-1, 1, (300, 1))
    y = np.sin(3 * X[:, 0]) + (0.05 + 0.2 * (X[:, 0] + 1)) * rng.normal(size=300)
    est = BayesianMLPRegressor(hidden=(8,), likelihood="hetero", random_state=0).fit(X, y)
    sigma = est.predict_noise_std(np.array([[-0.9], [0.9]]))
    assert sigma[1] > 2.5 * sigma[0]


def test_verbose_writes_a_few_lines_and_a_summary(capsys):
    X, y = sine_data()
    BayesianMLPRegressor(hidden=(3,), verbose=True, random_state=0).fit(X, y)
    err = capsys.readouterr().err
    assert "\r" not in err
    assert len(err.splitlines()) < 20
    assert "termination" in err and "log-evidence" in err


def test_n_jobs_is_the_thread_count_and_gives_the_same_numbers():
    X, y = sine_data(200)
    one = BayesianMLPRegressor(hidden=(4,), random_state=0).fit(X, y)
    two = BayesianMLPRegressor(hidden=(4,), n_jobs=2, random_state=0).fit(X, y)
    assert np.array_equal(one.predict(X), two.predict(X))
    threads = BayesianMLPRegressor(hidden=(4,), method_options={"threads": 2}, random_state=0).fit(X, y)
    assert np.array_equal(one.predict(X), threads.predict(X))


def test_multi_output_targets_are_refused_with_a_way_forward():
    X, y = sine_data()
    with pytest.raises(ValueError, match="MultiOutputRegressor"):
        BayesianMLPRegressor(hidden=(2,)).fit(X, np.column_stack([y, y]))


# --- issue 46: parameters and data refused with the estimator's own names ----------------------


def test_bad_parameters_are_named_as_the_estimator_names_them():
    X, y = sine_data()
    with pytest.raises(ValueError, match="hidden='abc'"):
        BayesianMLPRegressor(hidden="abc").fit(X, y)
    with pytest.raises(ValueError, match="max_iter=0"):
        BayesianLinearRegression(max_iter=0).fit(X, y)
    with pytest.raises(ValueError, match="max_iter=0"):
        BayesianMLPRegressor(max_iter=0).fit(X, y)
    with pytest.raises(ValueError, match="standardize=True"):
        BayesianMLPRegressor(standardize=True).fit(X, y)
    with pytest.raises(ValueError, match="n_jobs"):
        BayesianMLPRegressor(hidden=(2,), method="vi", n_jobs=2).fit(X, y)


def test_bad_data_is_refused_or_warned_about():
    X, y = sine_data()
    with pytest.warns(UserWarning, match="constant"):
        BayesianLinearRegression().fit(X, np.full(len(y), 3.0))
    huge = X.copy()
    huge[0, 0] = 1e300
    with pytest.raises(ValueError, match="overflow"):
        BayesianMLPRegressor(hidden=(2,)).fit(huge, y)
    frame = pd.DataFrame(np.column_stack([X, X]), columns=["a", "a"])
    with pytest.raises(ValueError, match="repeated column names"):
        BayesianLinearRegression().fit(frame, y)


def test_online_evidence_from_method_options():
    # method_options={"evidence_loop": "online", ...}: the minibatch run with α, β from the kron
    # evidence (docs/scale.md); the report says how many epochs and rounds it ran, and a fit of a
    # few epochs is not converged.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(300)
    options = {"evidence_loop": "online", "hessian_structure": "kron", "optimizer": "sgd", "epochs": 12,
               "batch_size": 30, "learning_rate": 1e-3, "lr_schedule": "cosine", "burn_in": 4, "evidence_every": 4,
               "hyper_steps": 20}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = occam.BayesianMLPRegressor(hidden=(8,), method_options=options, random_state=1).fit(X, y)
    assert model.termination_ == "maximum_iterations"
    assert "12 epochs of sgd, 3 hyperparameter rounds" in model.report_["message"]
    with pytest.raises(ValueError, match="evidence_every"):
        occam.BayesianMLPRegressor(hidden=(8,), method_options=dict(options, evidence_every=0)).fit(X, y)
