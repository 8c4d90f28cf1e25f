"""Classifiers: Bayesian logistic regression (a GLM) and a Bayesian network classifier, with the
Bernoulli likelihood for two classes and the categorical (softmax) one for more."""

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets

from ._base import OccamEstimator
from ._regression import _layers, _target_name


class _Classifier(ClassifierMixin, OccamEstimator):
    """Classes, the likelihood they call for, and predict_proba, for both classifiers."""

    def _fit_classes(self, X, y, network):
        target = _target_name(y)
        X, y = self._validate_data(X, y, dtype=np.float64, ensure_min_samples=2)
        check_classification_targets(y)
        self.classes_, index = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError(f"a classifier needs samples of at least 2 classes in the data; got 1 class "
                             f"({self.classes_[0]!r})")
        binary = len(self.classes_) == 2
        spec = {"network": network,
                "likelihood": {"kind": "bernoulli" if binary else "categorical"},
                "prior": {"kind": self.prior, "alpha": float(self.alpha)},
                "standardize": self.standardize}
        labels = () if binary else [str(c) for c in self.classes_]
        return self._fit_library(X, index.astype(np.float64), spec, self._method(), class_labels=labels, target=target)

    def predict_proba(self, X):
        """P(class | x, data) per row, columns in the order of classes_ (the predictive, averaged
        over the posterior: the probit approximation for Laplace, draws for VI)."""
        X = self._check_fitted_X(X)
        p = self.model_.predict(X)
        probabilities = p["probabilities"]
        if probabilities.shape[1] == 1:  # Bernoulli: P(y = 1)
            probabilities = np.hstack([1.0 - probabilities, probabilities])
        return probabilities

    def predict_log_proba(self, X):
        return np.log(self.predict_proba(X))

    def predict(self, X):
        """The most probable class."""
        probabilities = self.predict_proba(X)  # first: it checks that the model is fitted
        return self.classes_[np.argmax(probabilities, axis=1)]


class BayesianLogisticRegression(_Classifier):
    """Logistic (two classes) or softmax (more) regression with α by the evidence (MacKay 1992b).

    prior: "ridge" (one α), "groups" (weights and intercept apart) or "ard" (one α per input).
    method: "laplace" (the default), "map" or "vi"; hyper as for BayesianMLPRegressor.
    """

    def __init__(self, prior="ridge", alpha=1.0, hyper=None, method="laplace", fit_intercept=True,
                 standardize="inputs", max_iter=5000, method_options=None, random_state=None, verbose=False):
        self.prior = prior
        self.alpha = alpha
        self.hyper = hyper
        self.method = method
        self.fit_intercept = fit_intercept
        self.standardize = standardize
        self.max_iter = max_iter
        self.method_options = method_options
        self.random_state = random_state
        self.verbose = verbose

    def _method(self):
        return self._method_options(self.method, self.hyper, {"max_iterations": self.max_iter})

    def fit(self, X, y):
        return self._fit_classes(X, y, {"kind": "linear", "intercept": bool(self.fit_intercept)})


class BayesianMLPClassifier(_Classifier):
    """A network classifier (Bernoulli for two classes, softmax for more) with α per weight group
    by the evidence; parameters as BayesianMLPRegressor's (method "laplace", "map" or "vi")."""

    def __init__(self, hidden=(50,), activation="tanh", method="laplace", hyper=None, prior="groups", alpha=1.0,
                 standardize="inputs", hessian="ggn", optimizer="auto", max_iter=5000, family="fullrank",
                 method_options=None, random_state=None, verbose=False):
        self.hidden = hidden
        self.activation = activation
        self.method = method
        self.hyper = hyper
        self.prior = prior
        self.alpha = alpha
        self.standardize = standardize
        self.hessian = hessian
        self.optimizer = optimizer
        self.max_iter = max_iter
        self.family = family
        self.method_options = method_options
        self.random_state = random_state
        self.verbose = verbose

    def _method(self):
        extra = {"hessian": self.hessian, "optimizer": self.optimizer, "max_iterations": self.max_iter}
        if self.method == "vi":
            extra["family"] = self.family
        return self._method_options(self.method, self.hyper, extra)

    def fit(self, X, y):
        return self._fit_classes(X, y, {"kind": "mlp", "hidden": _layers(self.hidden), "activation": self.activation})
