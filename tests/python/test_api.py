"""The Python module's own behaviour: arrays without copies, DataFrames, pickling and joblib through
the model file, progress and Ctrl-C, errors, classifiers, Poisson offsets and graph priors, MCMC
output in ArviZ's layout."""

import io
import os
import pickle
import signal
import threading
import time

import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

import occam
from occam import (BayesianLinearRegression, BayesianLogisticRegression, BayesianMLPClassifier, BayesianMLPRegressor,
                   BayesianPoissonRegressor)


def sine_data(n=60, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, 1))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=n)
    return X, y


def bits(a):
    return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)


# --- arrays ------------------------------------------------------------------------------------


def test_results_are_numpy_arrays_that_own_the_library_buffers_without_a_copy():
    X, y = sine_data()
    est = BayesianMLPRegressor(hidden=(4,), random_state=0).fit(X, y)
    p = est.model_.predict(X)
    for key in ("mean", "std", "lower", "upper"):
        # A moved Eigen object is wrapped by a capsule that frees it; a copy would own its data.
        assert not p[key].flags.owndata
        assert type(p[key].base).__name__ == "PyCapsule"


def test_any_layout_and_dtype_of_inputs_gives_the_same_bits():
    X, y = sine_data()
    X3 = np.hstack([X, X ** 2, np.cos(X)])
    est = BayesianMLPRegressor(hidden=(4,), random_state=0).fit(X3, y)
    reference = est.predict(X3)
    assert np.array_equal(bits(est.predict(np.asfortranarray(X3))), bits(reference))
    strided = np.zeros((X3.shape[0], 6))
    strided[:, ::2] = X3
    assert np.array_equal(bits(est.predict(strided[:, ::2])), bits(reference))
    assert np.array_equal(bits(est.predict(X3.tolist())), bits(reference))


def test_a_dataframe_keeps_its_column_names_in_the_model_and_report():
    X, y = sine_data()
    frame = pd.DataFrame({"dose": X[:, 0], "age": X[:, 0] ** 2})
    est = BayesianMLPRegressor(hidden=(3,), prior="ard", random_state=0).fit(frame, pd.Series(y, name="response"))
    assert list(est.feature_names_in_) == ["dose", "age"]
    assert est.model_.feature_names == ["dose", "age"]
    assert est.model_.target_name == "response"
    assert {"input:dose", "input:age"} <= set(est.alpha_)


# --- learned attributes ------------------------------------------------------------------------


def test_mlp_regressor_attributes_come_from_the_fit_report():
    X, y = sine_data()
    est = BayesianMLPRegressor(hidden=(5,), random_state=1).fit(X, y)
    report = est.report_
    assert est.termination_ == report["termination"] == est.model_.termination
    assert est.log_evidence_ == report["log_evidence"]
    assert est.alpha_ == report["alpha"] and len(est.alpha_) == 4  # MacKay's four groups
    assert est.beta_ == report["beta"] and est.gamma_ == report["gamma_total"]
    assert est.n_iter_ >= 1
    assert est.score(X, y) > 0.9
    mean, std = est.predict(X, return_std=True)
    lower, upper = est.predict_interval(X, level=0.9)
    assert np.all(lower < mean) and np.all(mean < upper) and np.all(std > 0)
    wide_lower, wide_upper = est.predict_interval(X, level=0.99)
    assert np.all(wide_lower < lower) and np.all(upper < wide_upper)


def test_posterior_predictive_draws_are_the_monte_carlo_predictive_in_the_target_units():
    X, y = sine_data()
    est = BayesianMLPRegressor(hidden=(5,), random_state=1).fit(X, 100.0 + 10.0 * y)
    draws = est.sample_posterior_predictive(X[:5], n_samples=500, random_state=2)
    assert draws.shape == (500, 5)
    # The draws behind the library's sampled linearised predictive (w ~ N(w_MAP, A⁻¹) through the
    # network linearised at w_MAP, then y ~ p(y | f)), rows × columns as draws × inputs, in the
    # target's units.
    p = est.model_.predict(X[:5], method="linearized-mc", samples=500, seed=2)
    np.testing.assert_allclose(draws.mean(axis=0), p["mean"], rtol=1e-12)
    np.testing.assert_allclose(draws.std(axis=0, ddof=1), p["std"], rtol=1e-10)
    again = est.sample_posterior_predictive(X[:5], n_samples=500, random_state=2)
    assert np.array_equal(bits(draws), bits(again))


def test_linear_model_predictive_draws_have_the_exact_predictive_moments():
    # For a linear model the Monte Carlo predictive is the exact Gaussian one: its draws agree
    # with predict's mean and std within 5 Monte Carlo standard errors.
    X, y = sine_data(200)
    est = BayesianLinearRegression().fit(X, y)
    n = 20000
    draws = est.sample_posterior_predictive(X[:5], n_samples=n, random_state=3)
    mean, std = est.predict(X[:5], return_std=True)
    assert np.all(np.abs(draws.mean(axis=0) - mean) < 5 * std / np.sqrt(n))
    assert np.all(np.abs(draws.std(axis=0, ddof=1) - std) < 5 * std / np.sqrt(2 * n))


# --- pickling, joblib, clone -------------------------------------------------------------------


@pytest.mark.parametrize("make", [
    lambda: BayesianMLPRegressor(hidden=(4,), random_state=0),
    lambda: BayesianMLPRegressor(hidden=(4,), method="vi", method_options={"vi_iterations": 300}, random_state=0),
    lambda: BayesianLinearRegression(),
])
def test_pickle_and_joblib_go_through_the_model_file_and_predict_the_same_bits(make, tmp_path):
    X, y = sine_data()
    est = make().fit(X, y)
    mean, std = est.predict(X, return_std=True)
    state = est.__getstate__()
    assert "model_" not in state and "model.json" in state["_model_files"]
    restored = pickle.loads(pickle.dumps(est))
    r_mean, r_std = restored.predict(X, return_std=True)
    assert np.array_equal(bits(r_mean), bits(mean)) and np.array_equal(bits(r_std), bits(std))
    joblib.dump(est, tmp_path / "est.joblib")
    assert np.array_equal(bits(joblib.load(tmp_path / "est.joblib").predict(X)), bits(mean))
    assert restored.get_params() == est.get_params()


def test_hessian_structure_reaches_the_laplace_fit():
    X, y = sine_data()
    for structure in ("diag", "last-layer", "kron", "lowrank:4"):
        est = BayesianMLPRegressor(hidden=(3,), method_options={"hessian_structure": structure}, random_state=0).fit(X, y)
        mean, std = est.predict(X, return_std=True)
        assert np.all(np.isfinite(mean)) and np.all(std > 0)
        assert est.report_["optimality"]["hessian_structure"] == structure
    with pytest.raises(ValueError, match="hessian_structure"):
        BayesianMLPRegressor(hidden=(3,), method_options={"hessian_structure": "kfac"}).fit(X, y)


def test_clone_and_set_params():
    est = BayesianMLPRegressor(hidden=(7, 3), activation="relu", method_options={"evidence_loop": "outer"})
    twin = clone(est)
    assert twin.get_params() == est.get_params() and twin is not est
    twin.set_params(hidden=(2,))
    assert twin.hidden == (2,) and est.hidden == (7, 3)


# --- progress, Ctrl-C, errors ------------------------------------------------------------------


def test_verbose_prints_progress_lines_and_the_brief_report(capsys):
    X, y = sine_data()
    BayesianMLPRegressor(hidden=(3,), verbose=True, random_state=0).fit(X, y)
    err = capsys.readouterr().err
    assert "round" in err or "iteration" in err
    assert "log-evidence" in err


def test_ctrl_c_stops_a_long_fit_with_keyboard_interrupt():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 8))
    y = np.sin(X).sum(axis=1)
    # A fit of many seconds: NUTS on a 30-unit network.
    est = BayesianMLPRegressor(hidden=(30,), method="nuts", chains=1, warmup=5000, draws=5000, random_state=0)
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    start = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        est.fit(X, y)
    timer.join()
    assert time.monotonic() - start < 20.0
    assert not hasattr(est, "model_")


def test_an_exception_in_the_progress_function_stops_the_fit_and_propagates():
    X, y = sine_data()

    def progress(line, chain, iteration, total):
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        occam._occam.fit('{"network": {"kind": "mlp", "hidden": [3], "activation": "tanh"}, '
                         '"likelihood": {"kind": "gaussian"}, "prior": {"kind": "groups", "alpha": 1.0}, '
                         '"standardize": "both"}', X, y.reshape(-1, 1), ["x"], "y", [], None, '{}', progress)


def test_library_errors_name_the_field_and_are_value_errors():
    X, y = sine_data()
    with pytest.raises(ValueError, match="hidden"):
        BayesianMLPRegressor(hidden=(0,)).fit(X, y)
    with pytest.raises(ValueError, match="tanhh"):
        BayesianMLPRegressor(activation="tanhh").fit(X, y)
    with pytest.raises(ValueError, match="mc_sample"):
        BayesianMLPRegressor(method="vi", method_options={"mc_sample": 3}).fit(X, y)
    with pytest.raises(ValueError, match="method"):
        BayesianMLPRegressor(method="gibbs").fit(X, y)
    with pytest.raises(ValueError, match="integer count"):
        BayesianPoissonRegressor().fit(X, np.abs(y) + 0.5)
    with pytest.raises(OSError):
        occam.load_model("/nonexistent/model.json")


# --- classifiers -------------------------------------------------------------------------------


def test_logistic_regression_with_word_labels_and_probabilities():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 2))
    y = np.where(X[:, 0] + X[:, 1] + 0.5 * rng.normal(size=200) > 0, "spam", "ham")  # not separable
    est = BayesianLogisticRegression().fit(X, y)
    assert list(est.classes_) == ["ham", "spam"]
    p = est.predict_proba(X)
    assert p.shape == (200, 2) and np.allclose(p.sum(axis=1), 1.0)
    assert est.score(X, y) > 0.85
    assert est.termination_ == "converged", est.report_["message"]


def test_mlp_classifier_with_three_classes_uses_the_softmax():
    rng = np.random.default_rng(4)
    centres = np.array([[0, 3], [3, -2], [-3, -2]])
    labels = rng.integers(0, 3, 240)
    X = centres[labels] + rng.normal(size=(240, 2))
    y = np.array([10, 20, 30])[labels]
    est = BayesianMLPClassifier(hidden=(4,), random_state=0).fit(X, y)
    assert list(est.classes_) == [10, 20, 30]
    assert est.report_["likelihood"]["type"] == "categorical" if "type" in est.report_["likelihood"] else True
    p = est.predict_proba(X)
    assert p.shape == (240, 3) and np.allclose(p.sum(axis=1), 1.0)
    assert est.score(X, y) > 0.9


# --- Poisson -----------------------------------------------------------------------------------


def poisson_data(n=300, seed=5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    exposure = rng.uniform(0.5, 3.0, n)
    w = np.array([0.5, -0.3, 0.0, 0.2])
    y = rng.poisson(exposure * np.exp(0.2 + X @ w))
    return X, y.astype(float), np.log(exposure), w


def test_poisson_offset_scales_the_predicted_count_by_the_exposure():
    X, y, log_exposure, w = poisson_data()
    est = BayesianPoissonRegressor(standardize="none").fit(X, y, offset=log_exposure)
    assert est.termination_ == "converged"
    weights = np.asarray(est.model_.posterior_mean)
    np.testing.assert_allclose(weights[:4], w, atol=0.15)
    base = est.predict(X[:5], offset=np.zeros(5))
    doubled = est.predict(X[:5], offset=np.full(5, np.log(2.0)))
    np.testing.assert_allclose(doubled, 2.0 * base, rtol=1e-12)
    with pytest.raises(ValueError):
        est.predict(X[:5])  # fitted with an offset: predict needs one


def test_laplacian_prior_by_grid_and_by_the_same_edges_gives_the_same_fit():
    X, y, log_exposure, _ = poisson_data()
    chain = BayesianPoissonRegressor(prior="laplacian", grid="4").fit(X, y, offset=log_exposure)
    edges = BayesianPoissonRegressor(prior="laplacian", edges=[(0, 1), (1, 2), (2, 3)]).fit(X, y, offset=log_exposure)
    assert "smoothing" in chain.alpha_
    assert chain.alpha_ == edges.alpha_
    assert np.array_equal(bits(chain.predict(X, offset=log_exposure)), bits(edges.predict(X, offset=log_exposure)))


# --- MCMC --------------------------------------------------------------------------------------


def test_stochastic_gradient_mcmc_takes_its_options_and_needs_a_step_size():
    X, y = sine_data(40)
    options = {"step_size": 0.01, "friction": 20, "batch_size": 8, "precondition": "rmsprop", "init": "prior"}
    est = BayesianMLPRegressor(hidden=(2,), method="sghmc", chains=2, warmup=100, draws=50, random_state=3,
                               method_options=options).fit(X, y)
    assert est.posterior_draws_["lp__"].shape == (2, 50)
    assert np.all(est.posterior_draws_["accept_stat__"] == 1.0)
    assert np.all(np.isfinite(est.predict(X)))
    with pytest.raises(ValueError, match="sgld needs step_size"):
        BayesianMLPRegressor(hidden=(2,), method="sgld").fit(X, y)


def test_mcmc_draws_are_chain_by_draw_arrays_with_a_diagnostics_table():
    X, y = sine_data(40)
    est = BayesianMLPRegressor(hidden=(2,), method="nuts", chains=2, warmup=150, draws=100, random_state=3).fit(X, y)
    draws = est.posterior_draws_
    assert draws["lp__"].shape == (2, 100)
    assert draws["beta"].shape == (2, 100) and np.all(draws["beta"] > 0)
    assert {"w.1", "alpha.1", "f.1"} <= set(draws)
    d = est.diagnostics_
    assert isinstance(d, pd.DataFrame)
    assert list(d.columns) == ["mean", "sd", "q5", "median", "q95", "rhat", "ess_bulk", "ess_tail", "mcse_mean"]
    assert d.loc["beta", "mean"] == pytest.approx(draws["beta"].mean(), rel=1e-12)
    assert len(est.chains_) == 2
    # The predictive uses the draws, and survives pickling (a run directory in the model files).
    restored = pickle.loads(pickle.dumps(est))
    assert np.array_equal(bits(restored.predict(X)), bits(est.predict(X)))
    assert est.sample_posterior_predictive(X[:3], n_samples=50).shape == (50, 3)


def test_a_committee_predicts_its_mixture_saves_and_pickles(tmp_path):
    X, y = sine_data()
    est = BayesianMLPRegressor(hidden=(4,), random_state=3, method_options={"committee": 3, "threads": 2}).fit(X, y)
    plain = BayesianMLPRegressor(hidden=(4,), random_state=3).fit(X, y)
    c = est.model_
    assert isinstance(c, occam.FittedModel) and c.posterior_kind == "committee"
    assert [m["index"] for m in est.committee_] == [0, 1, 2]
    assert est.report_["method"] == "committee" and len(est.report_["members"]) == 3
    assert est.termination_ == c.termination
    w = c.weights
    assert w.sum() == pytest.approx(1.0, abs=1e-14)
    # The mixture of the members' predictives, member 1 being the plain fit with the same seed.
    Xt = np.array([[-3.0], [0.3], [3.0]])
    means = np.array([m.predict(Xt)["mean"] for m in c.models])
    stds = np.array([m.predict(Xt)["std"] for m in c.models])
    assert np.array_equal(bits(means[0]), bits(plain.predict(Xt)))
    mean, std = est.predict(Xt, return_std=True)
    assert np.allclose(mean, w @ means, rtol=1e-12, atol=1e-14)
    assert np.allclose(std ** 2, w @ (stds ** 2 + means ** 2) - mean ** 2, rtol=1e-9)
    # The hyperparameters shown are those of the member with the most weight.
    heaviest = c.models[int(np.argmax(w))]
    assert est.alpha_ == dict(zip(heaviest.alpha_names, heaviest.alpha))
    # Saved for the command line, read back and pickled: the same bits.
    est.save(tmp_path / "c.json")
    loaded = occam.load_model(str(tmp_path / "c.json"))
    assert loaded.posterior_kind == "committee"
    assert np.array_equal(bits(loaded.predict(Xt)["upper"]), bits(est.predict_interval(Xt)[1]))
    restored = pickle.loads(pickle.dumps(est))
    assert np.array_equal(bits(restored.predict(Xt, return_std=True)[1]), bits(std))
    with pytest.raises(ValueError, match="predictive draws"):
        est.sample_posterior_predictive(Xt)
    with pytest.raises(ValueError, match="committee"):
        BayesianMLPRegressor(hidden=(3,), method="vi", method_options={"committee": 2}).fit(X, y)
    with pytest.raises(ValueError, match="committee"):
        BayesianMLPRegressor(hidden=(3,), method_options={"committee_weighting": "equal"}).fit(X, y)


def test_a_committee_folder_keeps_its_members_and_a_fit_again_reads_them_back(tmp_path):
    X, y = sine_data()
    folder = str(tmp_path / "members")
    options = {"committee": 3, "committee_dir": folder}
    first = BayesianMLPRegressor(hidden=(4,), random_state=3, method_options=options).fit(X, y)
    assert sorted(os.listdir(folder)) == ["member_1.json", "member_2.json", "member_3.json"]
    assert [m["read_back"] for m in first.committee_] == [False, False, False]
    os.remove(os.path.join(folder, "member_2.json"))
    again = BayesianMLPRegressor(hidden=(4,), random_state=3, method_options=options).fit(X, y)
    assert [m["read_back"] for m in again.committee_] == [True, False, True]
    Xt = np.array([[-3.0], [0.3], [3.0]])
    assert np.array_equal(bits(again.predict(Xt)), bits(first.predict(Xt)))
    # Another seed starts other members: refused, naming it.
    with pytest.raises(ValueError, match="seed"):
        BayesianMLPRegressor(hidden=(4,), random_state=4, method_options=options).fit(X, y)


def test_a_checkpoint_lets_a_fit_run_again_end_where_the_first_did(tmp_path):
    X, y = sine_data()
    path = str(tmp_path / "ascent.json")
    options = {"evidence_loop": "joint", "checkpoint": path}
    first = BayesianMLPRegressor(hidden=(4,), random_state=3, method_options=options).fit(X, y)
    assert os.path.exists(path) and "resumed_at_step" not in first.report_
    # Run again: it goes on from the state after the last step, which is the end.
    again = BayesianMLPRegressor(hidden=(4,), random_state=3, method_options=options).fit(X, y)
    assert again.report_["resumed_at_step"] == first.report_["iterations"]
    assert again.report_["map_iterations"] == first.report_["map_iterations"]
    Xt = np.array([[-3.0], [0.3], [3.0]])
    assert np.array_equal(bits(again.predict(Xt)), bits(first.predict(Xt)))
    # Another seed's fit: refused, naming it.
    with pytest.raises(ValueError, match="seed"):
        BayesianMLPRegressor(hidden=(4,), random_state=4, method_options=options).fit(X, y)


def test_a_noise_model_follows_a_noise_level_that_changes_with_x_and_pickles(tmp_path):
    rng = np.random.default_rng(4)
    X = rng.uniform(-1, 1, (300, 1))
    y = np.sin(3 * X[:, 0]) + (0.05 + 0.125 * (X[:, 0] + 1)) * rng.normal(size=300)
    est = BayesianMLPRegressor(hidden=(8,), method_options={"noise_model": "network"}, random_state=0).fit(X, y)
    plain = BayesianMLPRegressor(hidden=(8,), random_state=0).fit(X, y)
    ends = np.array([[-0.9], [0.9]])
    mean, std = est.predict(ends, return_std=True)
    plain_mean, plain_std = plain.predict(ends, return_std=True)
    # The mean starts as the Laplace fit's and is refitted with the noise network's weights: close to
    # it, not equal.
    assert not np.array_equal(bits(mean), bits(plain_mean)) and np.allclose(mean, plain_mean, atol=0.02)
    assert est.report_["noise_model"]["weighted_refits"] == 1
    # Without the refit (noise_refits 0) the mean is the Laplace fit's, bit for bit.
    two_stages = BayesianMLPRegressor(hidden=(8,), method_options={"noise_model": "network", "noise_refits": 0},
                                      random_state=0).fit(X, y)
    assert np.array_equal(bits(two_stages.predict(ends)), bits(plain_mean))
    assert two_stages.report_["noise_model"]["weighted_refits"] == 0
    assert std[1] > 2.5 * std[0] and plain_std[1] < 1.5 * plain_std[0]
    assert "noise_model" in est.report_
    sigma = est.predict_noise_std(ends)
    assert np.all(sigma < std) and sigma[1] > 2.5 * sigma[0]
    assert np.allclose(plain.predict_noise_std(ends), plain.predict_noise_std(ends)[0])  # one level: 1/sqrt(beta)
    restored = pickle.loads(pickle.dumps(est))
    assert np.array_equal(bits(restored.predict(ends, return_std=True)[1]), bits(std))
    with pytest.raises(ValueError, match="noise_model"):
        BayesianMLPRegressor(hidden=(3,), method="vi", method_options={"noise_model": "network"}).fit(X, y)
    with pytest.raises(ValueError, match="noise_model"):
        BayesianMLPRegressor(hidden=(3,), method_options={"noise_model": "tree"}).fit(X, y)
    with pytest.raises(ValueError, match="noise_refits"):
        BayesianMLPRegressor(hidden=(3,), method_options={"noise_refits": 0}).fit(X, y)
    with pytest.raises(ValueError, match="noise_refits"):
        BayesianMLPRegressor(hidden=(3,), method_options={"noise_model": "network", "noise_refits": -1}).fit(X, y)
