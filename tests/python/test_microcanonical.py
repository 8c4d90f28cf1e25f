"""method="mclmc" and "mams": the microcanonical samplers through the estimators, their draws in
ArviZ's layout with the sampler columns occam's chain files carry."""

import numpy as np
import pytest

from occam import BayesianMLPRegressor


@pytest.mark.parametrize("method", ["mclmc", "mams"])
def test_microcanonical_methods_sample_and_predict(method):
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (40, 1))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=40)
    est = BayesianMLPRegressor(hidden=(2,), method=method, chains=2, warmup=150, draws=60, random_state=3).fit(X, y)
    draws = est.posterior_draws_
    assert draws["lp__"].shape == (2, 60)
    # Gradients per draw, no tree: the layout of the chain files (docs/mcmc.md).
    assert np.all(draws["n_leapfrog__"] >= 2) and np.all(draws["treedepth__"] == 0)
    assert np.all(np.isfinite(draws["energy__"]))
    assert np.all(np.isfinite(est.predict(X)))
    again = BayesianMLPRegressor(hidden=(2,), method=method, chains=2, warmup=150, draws=60, random_state=3).fit(X, y)
    assert np.array_equal(again.posterior_draws_["lp__"], draws["lp__"])
