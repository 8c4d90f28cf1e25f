"""Regressors: a Bayesian network (Laplace, VI or MCMC), Bayesian linear regression on occam's
exact evidence path, and a Poisson GLM for counts with an optional offset."""

import json

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.metrics import d2_tweedie_score

from ._base import MCMC_METHODS, OccamEstimator, as_offset, seed_from


def _layers(hidden):
    return [int(hidden)] if np.isscalar(hidden) else [int(h) for h in hidden]


def _target_name(y):
    name = getattr(y, "name", None)
    return str(name) if name is not None else "y"


class _Regressor(RegressorMixin, OccamEstimator):
    """predict with error bars, intervals and predictive draws, for every occam regressor."""

    def _prediction(self, X, offset=None, **options):
        X = self._check_fitted_X(X)
        return self.model_.predict(X, offset=as_offset(offset, len(X)), **options)

    def _predict(self, X, return_std, offset=None):
        p = self._prediction(X, offset)
        return (p["mean"], p["std"]) if return_std else p["mean"]

    def predict_interval(self, X, level=0.95, **kwargs):
        """The central `level` interval of the predictive distribution: (lower, upper)."""
        p = self._prediction(X, level=level, **kwargs)
        return p["lower"], p["upper"]

    def predict_noise_std(self, X):
        """The noise standard deviation σ(x) at the rows of X: the noise model's (method_options
        {"noise_model": "network"}), or 1/√β at every row (gaussian likelihood only)."""
        return self.model_.noise_std(self._check_fitted_X(X))

    def sample_posterior_predictive(self, X, n_samples=100, random_state=None, **kwargs):
        """Draws of y at the rows of X from the predictive distribution: n_samples × rows (for an
        MCMC fit, one draw per posterior draw, at most n_samples of them, evenly thinned)."""
        seed = seed_from(random_state)
        if getattr(self, "posterior_draws_", None) is not None:
            p = self._prediction(X, method="mc", max_draws=int(n_samples), seed=seed, keep_draws=True, **kwargs)
        else:
            p = self._prediction(X, method="mc", samples=int(n_samples), seed=seed, keep_draws=True, **kwargs)
        return p["draws"]


class BayesianMLPRegressor(_Regressor):
    """A multilayer perceptron whose weights have a posterior and whose hyperparameters (α per
    weight group, the noise precision β) are learned from the data.

    method: "laplace" (MAP + Laplace, α and β by `hyper`: "evidence" (default), "quick",
    "periodic", "integrate", "empirical-bayes" or "fixed"), "map" (a point estimate at the given
    α, β), "vi" (q(w) by the ELBO; hyper "elbo", "elbo-closed" or "fixed"), or "nuts", "hmc",
    "metropolis", "mclmc", "mams" (MCMC; hyper "gibbs" or "fixed"), or "sgld", "sghmc" (stochastic-gradient MCMC
    on minibatches; method_options={"step_size": h} is required, see docs/mcmc.md). α and β refer to the standardised data unless
    standardize="none". `method_options` passes any other option by its command-line name
    (docs/python.md), e.g. method_options={"hessian_structure": "lowrank:20"} for a Laplace
    approximation that keeps the top 20 eigenpairs of the Gauss-Newton matrix plus the rest of its
    diagonal ("full", "diag", "last-layer", "kron" or "lowrank:K"; docs/scale.md).
    """

    def __init__(self, hidden=(50,), activation="tanh", method="laplace", hyper=None, prior="groups",
                 likelihood="gaussian", alpha=1.0, beta=10.0, standardize="both", hessian="ggn", optimizer="auto",
                 max_iter=5000, family="fullrank", chains=4, warmup=1000, draws=1000, method_options=None,
                 random_state=None, verbose=False):
        self.hidden = hidden
        self.activation = activation
        self.method = method
        self.hyper = hyper
        self.prior = prior
        self.likelihood = likelihood
        self.alpha = alpha
        self.beta = beta
        self.standardize = standardize
        self.hessian = hessian
        self.optimizer = optimizer
        self.max_iter = max_iter
        self.family = family
        self.chains = chains
        self.warmup = warmup
        self.draws = draws
        self.method_options = method_options
        self.random_state = random_state
        self.verbose = verbose

    def _spec(self):
        return {"network": {"kind": "mlp", "hidden": _layers(self.hidden), "activation": self.activation},
                "likelihood": {"kind": self.likelihood, "beta": float(self.beta)},
                "prior": {"kind": self.prior, "alpha": float(self.alpha)},
                "standardize": self.standardize}

    def _method(self):
        if self.method in MCMC_METHODS:
            extra = {"chains": self.chains, "warmup": self.warmup, "draws": self.draws}
        else:
            extra = {"hessian": self.hessian, "optimizer": self.optimizer, "max_iterations": self.max_iter}
            if self.method == "vi":
                extra["family"] = self.family
        return self._method_options(self.method, self.hyper, extra)

    def fit(self, X, y):
        target = _target_name(y)
        X, y = self._validate_data(X, y, dtype=np.float64, y_numeric=True, ensure_min_samples=2)
        return self._fit_library(X, y, self._spec(), self._method(), target=target)

    def predict(self, X, return_std=False):
        """The predictive mean (and standard deviation) in the target's units."""
        return self._predict(X, return_std)

    def _more_tags(self):
        return {"non_deterministic": self.method in MCMC_METHODS or self.method == "vi"}


class BayesianLinearRegression(_Regressor):
    """Bayesian linear regression with α (the weights' prior precision) and β (the noise
    precision) by the evidence, on occam's exact linear-Gaussian path.

    With fit_intercept, X and y are centred (standardize "center") and the intercept has a flat
    prior, as in scikit-learn's BayesianRidge; there, `lambda_` is occam's α and `alpha_` is
    occam's β (docs/python.md). coef_, intercept_ and sigma_ (the weights' posterior covariance,
    A⁻¹) have BayesianRidge's meaning. `tol` is the evidence's stopping test: the largest
    |∂ log p(y|α,β) / ∂ log θ| over θ = α, β.
    """

    def __init__(self, fit_intercept=True, hyper="evidence", alpha=1.0, beta=1.0, tol=1e-4, max_iter=200,
                 method_options=None, random_state=None, verbose=False):
        self.fit_intercept = fit_intercept
        self.hyper = hyper
        self.alpha = alpha
        self.beta = beta
        self.tol = tol
        self.max_iter = max_iter
        self.method_options = method_options
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X, y):
        target = _target_name(y)
        X, y = self._validate_data(X, y, dtype=np.float64, y_numeric=True, ensure_min_samples=2)
        spec = {"network": {"kind": "linear", "intercept": False},
                "likelihood": {"kind": "gaussian", "beta": float(self.beta)},
                "prior": {"kind": "ridge", "alpha": float(self.alpha)},
                "standardize": "center" if self.fit_intercept else "none"}
        method = self._method_options("laplace", self.hyper, {"hyper_gradient_tolerance": self.tol,
                                                              "max_hyper_iterations": self.max_iter})
        self._fit_library(X, y, spec, method, target=target)
        self.alpha_ = float(next(iter(self.alpha_.values())))
        self.coef_ = np.asarray(self.model_.posterior_mean)
        self.sigma_ = np.asarray(self.model_.posterior_covariance)
        s = json.loads(self.model_.standardizer)
        self.intercept_ = float(s["y_mean"] - np.dot(s["x_mean"], self.coef_)) if self.fit_intercept else 0.0
        return self

    def predict(self, X, return_std=False):
        """The predictive mean (and standard deviation, √(xᵀA⁻¹x + 1/β) on centred x)."""
        return self._predict(X, return_std)


class BayesianPoissonRegressor(_Regressor):
    """A Poisson GLM (log link) for counts, log λ = xᵀw + b + offset, with α (and, for the
    graph-Laplacian prior, the smoothing precision λ_s) by the evidence.

    prior: "ridge", "groups", "ard" (one α per input) or "laplacian" (λ_s·L + α·I on the weights,
    L the Laplacian of a graph over the inputs: `grid`, e.g. "20x20" or "40" for a chain, or
    `edges`, an array of (i, j[, weight]) rows or the path of an edge-list file). `offset` (the
    log exposure, one per row) goes to fit and to predict.
    """

    def __init__(self, prior="ridge", grid=None, edges=None, alpha=1.0, smoothing=1.0, hyper=None,
                 standardize="inputs", fit_intercept=True, max_iter=5000, method_options=None, random_state=None,
                 verbose=False):
        self.prior = prior
        self.grid = grid
        self.edges = edges
        self.alpha = alpha
        self.smoothing = smoothing
        self.hyper = hyper
        self.standardize = standardize
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.method_options = method_options
        self.random_state = random_state
        self.verbose = verbose

    def _prior(self, n_features):
        prior = {"kind": self.prior, "alpha": float(self.alpha), "smoothing": float(self.smoothing)}
        if self.grid is not None:
            prior["grid"] = str(self.grid)
        if isinstance(self.edges, (str, bytes)) or hasattr(self.edges, "__fspath__"):
            prior["edges_file"] = str(self.edges)
        elif self.edges is not None:
            edges = [list(map(float, e)) for e in self.edges]
            prior["graph"] = {"nodes": n_features,
                              "edges": [[int(e[0]), int(e[1]), e[2] if len(e) > 2 else 1.0] for e in edges]}
        return prior

    def fit(self, X, y, offset=None):
        target = _target_name(y)
        X, y = self._validate_data(X, y, dtype=np.float64, y_numeric=True, ensure_min_samples=2)
        offset = as_offset(offset, len(X))
        likelihood = {"kind": "poisson"}
        if offset is not None:
            likelihood["offset_column"] = "offset"
        spec = {"network": {"kind": "linear", "intercept": bool(self.fit_intercept)}, "likelihood": likelihood,
                "prior": self._prior(X.shape[1]), "standardize": self.standardize}
        method = self._method_options("laplace", self.hyper, {"max_iterations": self.max_iter})
        return self._fit_library(X, y, spec, method, offset=offset, target=target)

    def predict(self, X, offset=None, return_std=False):
        """The predictive mean count (and its standard deviation) at the rows of X."""
        return self._predict(X, return_std, offset=offset)

    def score(self, X, y, offset=None, sample_weight=None):
        """D², the fraction of the Poisson deviance explained (scikit-learn's PoissonRegressor.score)."""
        return d2_tweedie_score(y, self.predict(X, offset=offset), sample_weight=sample_weight, power=1)

    def _more_tags(self):
        reason = ("occam's Poisson likelihood takes non-negative integer counts only; the check's targets "
                  "are real numbers (shifted to be positive)")
        return {"requires_positive_y": True,
                "_xfail_checks": {check: reason for check in (
                    "check_regressors_train", "check_regressor_data_not_an_array", "check_regressors_no_decision_function",
                    "check_fit_idempotent", "check_fit_check_is_fitted", "check_n_features_in")}}
