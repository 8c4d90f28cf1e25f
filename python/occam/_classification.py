"""Classifiers: Bayesian logistic regression (a GLM) and a Bayesian network classifier, with the
Bernoulli likelihood for two classes and the categorical (softmax) one for more."""

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets, type_of_target

from ._base import OccamEstimator, check_choice, check_unique_columns, layers
from ._regression import _target_name

# The predictive of predict_proba (docs/python.md, "Calibrated probabilities").
PREDICTIVES = ("auto", "bridge", "probit", "linearized", "linearized-mc", "mc", "plug-in")
# A float target with more distinct values than this is a regression target, not class labels.
MAX_FLOAT_CLASSES = 10


def check_class_labels(y):
    """Refuses a target that is not a set of class labels (scikit-learn's type_of_target), and a
    float target with many distinct values: integer-valued floats pass type_of_target as
    "multiclass", but 200 classes from a measured quantity are a regression target."""
    check_classification_targets(y)
    kind = type_of_target(y)
    if kind not in ("binary", "multiclass"):
        raise ValueError(f"y is {kind!r}: a classifier takes one column of class labels")
    y = np.asarray(y)
    if np.issubdtype(y.dtype, np.floating):
        distinct = len(np.unique(y))
        if distinct > MAX_FLOAT_CLASSES:
            raise ValueError(f"y has {distinct} distinct float values: that looks like a regression target, not class "
                             f"labels (use a regressor, or pass integer or string labels if these are "
                             f"{distinct} classes)")


class _Classifier(ClassifierMixin, OccamEstimator):
    """Classes, the likelihood they call for, and the predictive probabilities, for both classifiers."""

    def _fit_classes(self, X, y, network):
        self._reset()
        self._check_common_parameters()
        check_choice("predictive", self.predictive, PREDICTIVES)
        target = _target_name(y)
        check_unique_columns(X)
        X, y = self._validate_data(X, y, dtype=np.float64, ensure_min_samples=2)
        check_class_labels(y)
        self._check_training_data(X, None)
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

    def _library_predictive(self, predictive):
        """The library's name for a predictive of predict_proba."""
        # "auto" is the library's: the Laplace bridge for a Laplace fit, the best calibrated against
        # NUTS (docs/python.md); q's draws for VI, the draws for MCMC, the plug-in for MAP.
        return check_choice("predictive", predictive, PREDICTIVES)

    def predict_proba(self, X, predictive=None):
        """P(class | x, data) per row, columns in the order of classes_, by the estimator's
        `predictive` unless another is given here: "bridge" (the Laplace bridge), "probit" (the
        linearised predictive with the probit approximation, also "linearized"), "linearized-mc"
        (the linearised predictive by Monte Carlo), "mc" (weights drawn from the posterior through
        the network), "plug-in" (the probabilities at the posterior mean, no spread), "auto" (the bridge
        for a Laplace fit, q's draws for VI, the draws for MCMC, the plug-in for MAP)."""
        X = self._check_fitted_X(X)
        method = self._library_predictive(self.predictive if predictive is None else predictive)
        p = self.model_.predict(X, method=method, samples=self.predictive_samples, seed=1)
        probabilities = p["probabilities"]
        if probabilities.shape[1] == 1:  # Bernoulli: P(y = 1)
            probabilities = np.hstack([1.0 - probabilities, probabilities])
        return probabilities

    def predict_log_proba(self, X, predictive=None):
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X, predictive))

    def decision_function(self, X):
        """The log-odds of the second class (two classes) or the log-probabilities (more), from
        predict_proba: larger means more probable, and predict takes its arg max."""
        log_p = self.predict_log_proba(X)
        return log_p[:, 1] - log_p[:, 0] if len(self.classes_) == 2 else log_p

    def log_predictive_density(self, X, y):
        """log p(y_n | x_n, data) per row under predict_proba's predictive: the log predictive
        density (the negative of each row's log-loss)."""
        index = np.searchsorted(self.classes_, np.asarray(y))
        known = (index < len(self.classes_)) & (self.classes_[np.minimum(index, len(self.classes_) - 1)] == np.asarray(y))
        if not np.all(known):
            raise ValueError(f"y has labels not seen in fit: {sorted(set(np.asarray(y)[~known].tolist()))}")
        log_p = self.predict_log_proba(X)
        return log_p[np.arange(len(index)), index]

    def predict(self, X):
        """The most probable class."""
        probabilities = self.predict_proba(X)  # first: it checks that the model is fitted
        return self.classes_[np.argmax(probabilities, axis=1)]


class BayesianLogisticRegression(_Classifier):
    """Logistic (two classes) or softmax (more) regression with α by the evidence (MacKay 1992b).

    prior: "ridge" (one α), "groups" (weights and intercept apart) or "ard" (one α per input).
    method: "laplace" (the default), "map", "vi", or an MCMC sampler ("nuts", "hmc", "metropolis",
    "sgld", "sghmc"; with chains, warmup, draws); hyper as for BayesianMLPRegressor.
    predictive: what predict_proba averages over the posterior with (docs/python.md).
    After fit, coef_ (classes × inputs; 1 × inputs for two classes) and intercept_ are the
    posterior mean weights in the units of X.
    """

    def __init__(self, prior="ridge", alpha=1.0, hyper=None, method="laplace", fit_intercept=True,
                 standardize="inputs", max_iter=5000, predictive="auto", predictive_samples=1000, chains=4,
                 warmup=1000, draws=1000, n_jobs=None, method_options=None, random_state=None, verbose=False):
        self.prior = prior
        self.alpha = alpha
        self.hyper = hyper
        self.method = method
        self.fit_intercept = fit_intercept
        self.standardize = standardize
        self.max_iter = max_iter
        self.predictive = predictive
        self.predictive_samples = predictive_samples
        self.chains = chains
        self.warmup = warmup
        self.draws = draws
        self.n_jobs = n_jobs
        self.method_options = method_options
        self.random_state = random_state
        self.verbose = verbose

    def _method(self):
        return self._method_options(self.hyper)

    def fit(self, X, y):
        self._fit_classes(X, y, {"kind": "linear", "intercept": bool(self.fit_intercept)})
        self.coef_, self.intercept_ = linear_coefficients(self.model_, self.n_features_in_,
                                                          1 if len(self.classes_) == 2 else len(self.classes_),
                                                          bool(self.fit_intercept))
        return self


class BayesianMLPClassifier(_Classifier):
    """A network classifier (Bernoulli for two classes, softmax for more) with α per weight group
    by the evidence; parameters as BayesianMLPRegressor's (every method), `predictive` as
    BayesianLogisticRegression's."""

    def __init__(self, hidden=(50,), activation="tanh", method="laplace", hyper=None, prior="groups", alpha=1.0,
                 standardize="inputs", hessian="ggn", optimizer="auto", max_iter=5000, family="fullrank",
                 predictive="auto", predictive_samples=1000, chains=4, warmup=1000, draws=1000, n_jobs=None,
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
        self.predictive = predictive
        self.predictive_samples = predictive_samples
        self.chains = chains
        self.warmup = warmup
        self.draws = draws
        self.n_jobs = n_jobs
        self.method_options = method_options
        self.random_state = random_state
        self.verbose = verbose

    def _method(self):
        return self._method_options(self.hyper)

    def fit(self, X, y):
        return self._fit_classes(X, y, {"kind": "mlp", "hidden": layers(self.hidden), "activation": self.activation})

    def _more_tags(self):
        return {"non_deterministic": self.method != "laplace" and self.method != "map"}


def linear_coefficients(model, n_features, outputs, intercept):
    """coef_ (outputs × inputs) and intercept_ (outputs) of a linear model in the units of X, from
    the posterior mean weights θ = [B (inputs × outputs, column-major), b] on standardised inputs
    z = (x − mean)/scale: f = Bᵀz + b = (B/scale)ᵀx + b − Σ B·mean/scale."""
    import json

    theta = np.asarray(model.posterior_mean)
    B = theta[:n_features * outputs].reshape(outputs, n_features)  # row k: output k's weights
    b = theta[n_features * outputs:] if intercept else np.zeros(outputs)
    s = json.loads(model.standardizer)
    mean = np.asarray(s.get("x_mean") or np.zeros(n_features), dtype=float)
    scale = np.asarray(s.get("x_scale") or np.ones(n_features), dtype=float)
    if s.get("mode") in ("none", None):
        mean, scale = np.zeros(n_features), np.ones(n_features)
    coef = B / scale
    return coef, b - coef @ mean
