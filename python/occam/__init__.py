"""occam for Python: Bayesian neural networks and Bayesian GLMs whose hyperparameters are learned
from the data, as scikit-learn estimators. Every number is computed by occam's C++ library
(occam._occam binds its fit service); docs/python.md walks through them.

    from occam import BayesianMLPRegressor
    model = BayesianMLPRegressor(hidden=(20,), random_state=1).fit(X, y)
    mean, std = model.predict(X_test, return_std=True)
"""

from . import _occam
from ._base import SamplerWarning
from ._classification import BayesianLogisticRegression, BayesianMLPClassifier
from ._occam import FittedModel, NumericalError, load_model
from ._regression import BayesianLinearRegression, BayesianMLPRegressor, BayesianPoissonRegressor
from .plot import (plot_calibration, plot_evidence, plot_hyperparameters, plot_predicted_observed, plot_predictive_band,
                   plot_ranks, plot_traces)

__version__ = _occam.__version__


def log_predictive_density_scorer(estimator, X, y):
    """The mean log predictive density log p(y | x, data) of held-out rows (estimator.log_predictive_density):
    the test log-likelihood, a `scoring` for GridSearchCV and cross_val_score (larger is better)."""
    return float(estimator.log_predictive_density(X, y).mean())


__all__ = ["BayesianLinearRegression", "BayesianLogisticRegression", "BayesianMLPClassifier", "BayesianMLPRegressor",
           "BayesianPoissonRegressor", "FittedModel", "NumericalError", "SamplerWarning", "load_model",
           "log_predictive_density_scorer", "plot_calibration", "plot_evidence", "plot_hyperparameters",
           "plot_predicted_observed", "plot_predictive_band", "plot_ranks", "plot_traces"]
