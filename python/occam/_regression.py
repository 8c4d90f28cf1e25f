"""Regressors: a Bayesian network (Laplace, VI or MCMC), Bayesian linear regression on occam's
exact evidence path, and a Poisson GLM for counts with an optional offset."""

import json
import warnings

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.metrics import d2_tweedie_score

from ._base import (MCMC_METHODS, METHOD_OPTIONS, OccamEstimator, as_offset, check_choice, check_integer,
                    check_unique_columns, layers, seed_from)


def _target_name(y):
    name = getattr(y, "name", None)
    return str(name) if name is not None else "y"


class _Regressor(RegressorMixin, OccamEstimator):
    """predict with error bars, intervals and predictive draws, for every occam regressor."""

    def _regression_data(self, X, y):
        """X and a single-column float y, checked; a constant target is warned about."""
        self._reset()
        self._check_common_parameters()
        shape = getattr(y, "shape", ())
        if len(shape) == 2 and shape[1] != 1:
            raise ValueError(f"y has {shape[1]} columns: occam's regressors fit one target (fit one model per "
                             f"column, e.g. with sklearn.multioutput.MultiOutputRegressor)")
        check_unique_columns(X)
        X, y = self._validate_data(X, y, dtype=np.float64, y_numeric=True, ensure_min_samples=2)
        self._check_training_data(X, y)
        if np.ptp(y) == 0.0:
            warnings.warn(f"y is constant ({y[0]!r}): there is nothing to learn and the fitted noise level is "
                          f"degenerate", UserWarning, stacklevel=3)
        return X, y

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
        {"noise_model": "network"}), the hetero likelihood's √(exp(s(x)) + floor) from the network's
        second output at the posterior mean, or 1/√β at every row (gaussian likelihood)."""
        return self.model_.noise_std(self._check_fitted_X(X))

    def sample_posterior_predictive(self, X, n_samples=100, random_state=None, predictive="auto", offset=None):
        """Draws of y at the rows of X from the predictive distribution: n_samples × rows.

        predictive: "auto" draws from the predictive that predict and predict_interval describe —
        the linearised one for a Laplace fit ("linearized-mc": w ~ N(w_MAP, A⁻¹) through the
        network linearised at w_MAP), the draws themselves for MCMC (one per posterior draw, at most
        n_samples of them, evenly thinned), q's draws for VI; "mc" pushes the same w through the
        network itself, which for weakly determined weights spreads far wider (docs/python.md)."""
        seed = seed_from(random_state)
        n_samples = check_integer("n_samples", n_samples, 2)
        kind = getattr(self.model_, "posterior_kind", None) if hasattr(self, "model_") else None
        if predictive == "auto":
            predictive = "linearized-mc" if kind == "laplace" else "mc"
        if getattr(self, "posterior_draws_", None) is not None:
            p = self._prediction(X, offset, method=predictive, max_draws=n_samples, seed=seed, keep_draws=True)
        else:
            p = self._prediction(X, offset, method=predictive, samples=n_samples, seed=seed, keep_draws=True)
        return p["draws"]

    def log_predictive_density(self, X, y, offset=None):
        """log p(y_n | x_n, data) per row, in the target's units: the log predictive density
        (Laplace and MAP fits: the linearised predictive, exact for a Gaussian likelihood, by
        Gauss–Hermite quadrature for Poisson; VI and MCMC: the Gaussian with the predictive's mean
        and standard deviation)."""
        X = self._check_fitted_X(X)
        y = np.asarray(y, dtype=np.float64).ravel()
        if len(y) != len(X):
            raise ValueError(f"y has {len(y)} entries, X has {len(X)} rows")
        offset = as_offset(offset, len(X))
        if self.model_.posterior_kind in ("laplace", "map"):
            return self.model_.log_predictive_density(X, y, offset=offset)
        mean, std = self._predict(X, True, offset) if offset is not None else self._predict(X, True)
        return -0.5 * np.log(2.0 * np.pi * std ** 2) - 0.5 * ((y - mean) / std) ** 2

    def _more_tags(self):
        return {"multioutput": False}


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
                 max_iter=5000, family="fullrank", chains=4, warmup=1000, draws=1000, n_jobs=None, method_options=None,
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
        self.n_jobs = n_jobs
        self.method_options = method_options
        self.random_state = random_state
        self.verbose = verbose

    def _spec(self):
        return {"network": {"kind": "mlp", "hidden": layers(self.hidden), "activation": self.activation},
                "likelihood": {"kind": self.likelihood, "beta": float(self.beta)},
                "prior": {"kind": self.prior, "alpha": float(self.alpha)},
                "standardize": self.standardize}

    def fit(self, X, y):
        target = _target_name(y)
        X, y = self._regression_data(X, y)
        return self._fit_library(X, y, self._spec(), self._method_options(self.hyper), target=target)


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
    |∂ log p(y|α,β) / ∂ log θ| over θ = α, β. prior="ard" gives each input its own α (alpha_ an
    array, as ARDRegression's lambda_). method: "laplace" (exact here), "vi", "map" or an MCMC
    sampler (chains, warmup, draws), as BayesianMLPRegressor's.
    """

    def __init__(self, fit_intercept=True, hyper="evidence", alpha=1.0, beta=1.0, tol=1e-4, max_iter=200,
                 prior="ridge", method="laplace", chains=4, warmup=1000, draws=1000, n_jobs=None, method_options=None,
                 random_state=None, verbose=False):
        self.fit_intercept = fit_intercept
        self.prior = prior
        self.hyper = hyper
        self.alpha = alpha
        self.beta = beta
        self.tol = tol
        self.max_iter = max_iter
        self.method = method
        self.chains = chains
        self.warmup = warmup
        self.draws = draws
        self.n_jobs = n_jobs
        self.method_options = method_options
        self.random_state = random_state
        self.verbose = verbose

    def _standardize_choices(self):
        return ("center", "none")

    def _method_options(self, hyper, extra=None):
        # max_iter and tol belong to the evidence loop (hyperparameter steps), not to the optimiser.
        options = super()._method_options(hyper, extra)
        options.pop("max_iterations", None)
        if self.method in METHOD_OPTIONS["hyper_gradient_tolerance"]["methods"] and hyper != "fixed":
            options.setdefault("hyper_gradient_tolerance", self.tol)
            options.setdefault("max_hyper_iterations", self.max_iter)
        return options

    def fit(self, X, y):
        target = _target_name(y)
        X, y = self._regression_data(X, y)
        spec = {"network": {"kind": "linear", "intercept": False},
                "likelihood": {"kind": "gaussian", "beta": float(self.beta)},
                "prior": {"kind": check_choice("prior", self.prior, ("ridge", "ard")), "alpha": float(self.alpha)},
                "standardize": "center" if self.fit_intercept else "none"}
        # hyper="evidence" (the default) names the Laplace fit's loop; a sampler's default is Gibbs.
        hyper = self.hyper if self.method in ("laplace", "map") or self.hyper in ("gibbs", "fixed") else None
        self._fit_library(X, y, spec, self._method_options(hyper), target=target)
        alphas = np.array(list(self.alpha_.values()))
        self.alpha_ = float(alphas[0]) if self.prior == "ridge" else alphas  # ARD: one per input, as ARDRegression's lambda_
        self.coef_ = np.asarray(self.model_.posterior_mean)
        if self.model_.posterior_kind in ("laplace", "vi"):
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
                 standardize="inputs", fit_intercept=True, max_iter=5000, method="laplace", chains=4, warmup=1000,
                 draws=1000, n_jobs=None, method_options=None, random_state=None, verbose=False):
        self.prior = prior
        self.grid = grid
        self.edges = edges
        self.alpha = alpha
        self.smoothing = smoothing
        self.hyper = hyper
        self.standardize = standardize
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.method = method
        self.chains = chains
        self.warmup = warmup
        self.draws = draws
        self.n_jobs = n_jobs
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
        X, y = self._regression_data(X, y)
        offset = as_offset(offset, len(X))
        likelihood = {"kind": "poisson"}
        if offset is not None:
            likelihood["offset_column"] = "offset"
        spec = {"network": {"kind": "linear", "intercept": bool(self.fit_intercept)}, "likelihood": likelihood,
                "prior": self._prior(X.shape[1]), "standardize": self.standardize}
        self._fit_library(X, y, spec, self._method_options(self.hyper), offset=offset, target=target)
        from ._classification import linear_coefficients

        coef, intercept = linear_coefficients(self.model_, self.n_features_in_, 1, bool(self.fit_intercept))
        self.coef_, self.intercept_ = coef[0], float(intercept[0])
        return self

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
