"""occam for Python: Bayesian neural networks and Bayesian GLMs whose hyperparameters are learned
from the data, as scikit-learn estimators. Every number is computed by occam's C++ library
(occam._occam binds its fit service); docs/python.md walks through them.

    from occam import BayesianMLPRegressor
    model = BayesianMLPRegressor(hidden=(20,), random_state=1).fit(X, y)
    mean, std = model.predict(X_test, return_std=True)
"""

from . import _occam
from ._classification import BayesianLogisticRegression, BayesianMLPClassifier
from ._occam import Committee, FittedModel, NumericalError, load_model
from ._regression import BayesianLinearRegression, BayesianMLPRegressor, BayesianPoissonRegressor
from .plot import (plot_calibration, plot_evidence, plot_hyperparameters, plot_predicted_observed, plot_predictive_band,
                   plot_ranks, plot_traces)

__version__ = _occam.__version__

__all__ = ["BayesianLinearRegression", "BayesianLogisticRegression", "BayesianMLPClassifier", "BayesianMLPRegressor",
           "BayesianPoissonRegressor", "Committee", "FittedModel", "NumericalError", "load_model",
           "plot_calibration", "plot_evidence", "plot_hyperparameters", "plot_predicted_observed", "plot_predictive_band",
           "plot_ranks", "plot_traces"]
