"""method_options: every key of the library's table of method options reaches the library, the
samplers' newer ones too (the microcanonical samplers' integrator, trajectory_length, max_steps;
init_optimizer, save_warmup, checkpoint_every), and each has a flag or says why not."""

import json

import numpy as np
import pytest

import occam
from occam import BayesianMLPRegressor


def data():
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (40, 1))
    return X, np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=40)


def test_microcanonical_options_reach_the_sampler():
    X, y = data()
    options = {"integrator": "leapfrog", "max_steps": 3, "trajectory_length": 0.5}
    est = BayesianMLPRegressor(hidden=(2,), method="mclmc", chains=1, warmup=100, draws=40, random_state=3,
                               method_options=options).fit(X, y)
    # The leapfrog integrator takes one gradient a step, and no iteration takes more than max_steps.
    gradients = est.posterior_draws_["n_leapfrog__"]
    assert np.all(gradients >= 1) and np.all(gradients <= 3)
    for key, value in options.items():
        assert est.report_["options"][key] == value
    default = BayesianMLPRegressor(hidden=(2,), method="mclmc", chains=1, warmup=100, draws=40, random_state=3).fit(X, y)
    assert np.max(default.posterior_draws_["n_leapfrog__"]) > 3


def test_sampling_run_options_reach_the_library():
    X, y = data()
    options = {"init_optimizer": "lbfgs", "save_warmup": True, "checkpoint_every": 10}
    est = BayesianMLPRegressor(hidden=(2,), method="nuts", chains=1, warmup=20, draws=10, random_state=3,
                               method_options=options).fit(X, y)
    # checkpoint_every, a run setting no number depends on, is taken but not reported.
    assert "checkpoint_every" not in est.report_["options"]
    for key in ("init_optimizer", "save_warmup"):
        assert est.report_["options"][key] == options[key]


def test_a_bad_key_or_value_is_refused_by_its_keyword():
    X, y = data()
    with pytest.raises(ValueError, match="max_steps = 0: must be positive"):
        BayesianMLPRegressor(hidden=(2,), method="mclmc", method_options={"max_steps": 0}).fit(X, y)
    with pytest.raises(ValueError, match="max_depth does not apply to method 'hmc'"):
        BayesianMLPRegressor(hidden=(2,), method="hmc", method_options={"max_depth": 5}).fit(X, y)


def test_every_option_has_a_flag_and_a_keyword_or_says_why_not():
    table = json.loads(occam._occam.method_option_table())
    assert {o["key"] for o in table} >= {"integrator", "trajectory_length", "energy_variance", "max_steps",
                                         "init_optimizer", "save_warmup", "checkpoint_every"}
    for option in table:
        assert option["flag"] or option["no_flag"], option["key"]
        assert option["no_keyword"] is None or option["no_keyword"], option["key"]
        assert set(option["methods"]) <= set(occam._occam.method_names())
        assert set(option["defaults"]) == set(option["methods"])
