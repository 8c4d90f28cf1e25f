"""What every occam estimator shares: the checks of its parameters and data, the call into the
library, the learned attributes read from the fit's report, warnings about fits that did not
converge, progress lines, and pickling through the versioned model file.

The estimators only translate their parameters into a model specification and method options
(both JSON, read by the library) and arrays; occam._occam.fit does the rest.
"""

import json
import math
import numbers
import os
import sys
import tempfile
import time
import warnings

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_array, check_is_fitted

from . import _occam

# The methods and their options come from the library's one table of method options
# (occam/method_options.h): each option's key (the command line's flag, '-' written '_'), the
# methods it applies to, its default and choices.
METHOD_OPTIONS = {o["key"]: o for o in json.loads(_occam.method_option_table())}
METHODS = tuple(_occam.method_names())
MCMC_METHODS = METHODS[3:]  # after laplace, map and vi: the samplers

# Estimator parameter -> method option; an estimator passes those of its parameters that apply to its
# method (the option's methods in the table).
METHOD_PARAMETERS = tuple((parameter, option, tuple(METHOD_OPTIONS[option]["methods"])) for parameter, option in (
    ("hessian", "hessian"),
    ("optimizer", "optimizer"),
    ("max_iter", "max_iterations"),
    ("family", "family"),
    ("chains", "chains"),
    ("warmup", "warmup"),
    ("draws", "draws"),
    ("n_jobs", "threads"),
))
STANDARDIZE = ("both", "inputs", "none")

# Sampler diagnostics below these values raise a SamplerWarning (Vehtari et al. 2021: use the draws
# when R̂ < 1.01 and the bulk ESS exceeds 100 per chain).
RHAT_LIMIT = 1.01
ESS_PER_CHAIN = 100
# |x| beyond this has a square that overflows a double: the standardisation's variance would.
LARGEST_SCALE = 1e154


class SamplerWarning(ConvergenceWarning):
    """MCMC draws whose R̂ or effective sample size says the chains have not mixed."""


def seed_from(random_state):
    """The library's seed: an int is used as given (the CLI's --seed), else one is drawn."""
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool) and random_state >= 0:
        return int(random_state)
    return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))


def _number(value):
    return math.nan if value is None else float(value)


def check_integer(name, value, minimum, allow_none=False):
    """An int parameter, refused with its own name (not the library's field) when it is not one."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name}={value!r}: must be an integer of at least {minimum}")
    return int(value)


def check_positive(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (0.0 < value < math.inf):
        raise ValueError(f"{name}={value!r}: must be a positive finite number")
    return float(value)


def check_choice(name, value, choices, hint=""):
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name}={value!r}: must be one of {', '.join(map(repr, choices))}{hint}")
    return value


def thread_count(n_jobs):
    """scikit-learn's n_jobs as a thread count: None is 1, -1 every core, -2 all but one."""
    if n_jobs is None:
        return 1
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral) or n_jobs == 0:
        raise ValueError(f"n_jobs={n_jobs!r}: must be a positive integer, -1 (every core) or None")
    return int(n_jobs) if n_jobs > 0 else max(1, (os.cpu_count() or 1) + 1 + int(n_jobs))


def check_scale(name, values, columns):
    """Refuses values whose squares overflow (the standardisation would produce infinities)."""
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return
    largest = np.max(np.abs(values), axis=0) if values.ndim == 2 else np.array([np.max(np.abs(values))])
    for column, value in zip(columns, np.atleast_1d(largest)):
        if value > LARGEST_SCALE:
            raise ValueError(f"{name} column {column!r} has values up to {value:.3g}, whose squares overflow a double: "
                             f"rescale it (e.g. divide by {10 ** int(np.floor(np.log10(value)))})")


def check_unique_columns(X):
    """A DataFrame's columns name the model's inputs: two of the same name are refused."""
    columns = getattr(X, "columns", None)
    if columns is None:
        return
    names = [str(c) for c in columns]
    repeated = sorted({c for c in names if names.count(c) > 1})
    if repeated:
        raise ValueError(f"X has repeated column names {repeated}: each input needs a name of its own")


class Progress:
    """verbose=True: a line at the start, then at most one every `interval` seconds while the fit
    runs, and the library's brief report at the end (what `occam fit` prints)."""

    def __init__(self, stream=None, interval=2.0):
        self.stream = stream if stream is not None else sys.stderr
        self.interval = interval
        self.last = None
        self.pending = ""

    def __call__(self, line, chain, iteration, total):
        if not line:
            return
        now = time.monotonic()
        if self.last is None or now - self.last >= self.interval:
            self.stream.write(line + "\n")
            self.stream.flush()
            self.last = now
            self.pending = ""
        else:
            self.pending = line

    def close(self, summary=None):
        if self.pending:
            self.stream.write(self.pending + "\n")
        if summary:
            self.stream.write(summary.rstrip("\n") + "\n")
        self.stream.flush()


class OccamEstimator(BaseEstimator):
    """The shared machinery; subclasses define fit() through _fit_library()."""

    # --- what subclasses provide -------------------------------------------------------------

    def _method_options(self, hyper, extra=None):
        """The method options for the library (keys are the CLI's flags, '-' written '_'): the
        method, the seed, `hyper`, the parameters of METHOD_PARAMETERS the estimator has and that
        apply to its method, `extra`, then method_options."""
        method = getattr(self, "method", "laplace")
        if method not in METHODS:
            raise ValueError(f"method={method!r}: must be one of {', '.join(METHODS)}")
        options = {"method": method, "seed": seed_from(self.random_state)}
        if hyper is not None:
            options["hyper"] = hyper
        for parameter, option, methods in METHOD_PARAMETERS:
            if not hasattr(self, parameter):
                continue
            value = getattr(self, parameter)
            if parameter == "n_jobs":
                value = thread_count(value)
                if value == 1:
                    continue
                if method not in methods:
                    raise ValueError(f"n_jobs={self.n_jobs!r}: method {method!r} runs on one thread (n_jobs applies to "
                                     f"{', '.join(methods)})")
            if method in methods and value is not None:
                options[option] = value
        options.update({k: v for k, v in (extra or {}).items() if v is not None})
        options.update(self.method_options or {})
        return options

    def _check_common_parameters(self):
        if getattr(self, "standardize", None) is not None and not isinstance(self.standardize, str):
            raise ValueError(f"standardize={self.standardize!r}: must be one of "
                             f"{', '.join(map(repr, self._standardize_choices()))} (a string, not {type(self.standardize).__name__})")
        if hasattr(self, "standardize"):
            check_choice("standardize", self.standardize, self._standardize_choices())
        if hasattr(self, "max_iter"):
            check_integer("max_iter", self.max_iter, 1)
        for name in ("chains", "draws"):
            if hasattr(self, name):
                check_integer(name, getattr(self, name), 1)
        if hasattr(self, "warmup"):
            check_integer("warmup", self.warmup, 0)
        for name in ("alpha", "beta", "smoothing", "tol"):
            if hasattr(self, name):
                check_positive(name, getattr(self, name))
        if hasattr(self, "n_jobs"):
            thread_count(self.n_jobs)
        if self.method_options is not None and not isinstance(self.method_options, dict):
            raise ValueError(f"method_options={self.method_options!r}: must be a dict of options by their command-line names")

    def _standardize_choices(self):
        return STANDARDIZE

    # --- the call into the library -----------------------------------------------------------

    def _reset(self):
        """Every fit starts clean: no attribute of an earlier fit survives it (posterior draws,
        diagnostics, a committee)."""
        for name in [k for k in vars(self) if k.endswith("_") and not k.startswith("__")]:
            delattr(self, name)

    def _check_training_data(self, X, y, columns_of_y=1):
        names = self._feature_names(X.shape[1])
        check_scale("X", X, names)
        if y is not None:
            check_scale("y", y, ["y"] if columns_of_y == 1 else [f"y{k}" for k in range(columns_of_y)])

    def _feature_names(self, n_features):
        names = getattr(self, "feature_names_in_", None)
        if names is not None:
            return [str(name) for name in names]
        return [f"x{d}" for d in range(n_features)]

    def _fit_library(self, X, Y, spec, method, class_labels=(), offset=None, target="y"):
        progress = Progress() if self.verbose else None
        summary = None
        try:
            self.model_ = _occam.fit(json.dumps(spec), X, np.asarray(Y, dtype=np.float64).reshape(len(X), 1),
                                     self._feature_names(X.shape[1]), str(target), [str(c) for c in class_labels],
                                     offset, json.dumps(method), progress)
            summary = self.model_.brief_report()
        finally:
            if progress is not None:
                progress.close(summary)
        self._read_report()
        self._warn_if_not_converged()
        return self

    def _read_report(self):
        report = json.loads(self.model_.report)
        self.report_ = report
        self.termination_ = report.get("termination")
        if report.get("method") == "committee":
            # method_options={"committee": K}: the members' weights, and the hyperparameters of
            # the member with the most weight.
            self.committee_ = self.model_.members
            fitted = [m for m in report["members"] if "report" in m]
            report = max(fitted, key=lambda m: m["weight"])["report"]
        self.log_evidence_ = _number(report.get("log_evidence"))
        alpha = report.get("alpha") or {}
        self.alpha_ = {name: float(value) for name, value in alpha.items()}
        self.beta_ = _number(report.get("beta"))
        self.gamma_ = _number(report.get("gamma_total"))
        self.n_iter_ = int(report.get("iterations") or report.get("map_iterations")
                           or report.get("vi", {}).get("iterations") or 1)
        if "mcmc" in report:
            self._read_mcmc()

    def _read_mcmc(self):
        out = self.model_.sampler_output()
        self.posterior_draws_ = dict(out["draws"])
        import pandas as pd

        self.diagnostics_ = pd.DataFrame.from_dict(out["diagnostics"], orient="index",
                                                   columns=out["diagnostic_names"])
        self.chains_ = pd.DataFrame(out["chains"])
        # α and β as the draws summarise them (their posterior means; under hyper "fixed" the
        # columns are constant, the values given): the report keeps the values the chains started from.
        draws = self.posterior_draws_
        names = list(self.alpha_)
        for k, name in enumerate(names):
            column = draws.get(f"alpha.{k + 1}")
            if column is not None and column.size:
                self.alpha_[name] = float(np.mean(column))
        if "beta" in draws and draws["beta"].size:
            self.beta_ = float(np.mean(draws["beta"]))

    def _warn_if_not_converged(self):
        termination = self.termination_
        if termination in ("no_progress", "maximum_iterations", "failure"):
            message = self.report_.get("message") or ""
            warnings.warn(f"the fit ended with termination {termination!r}, not 'converged'"
                          + (f": {message}" if message else "") + " (report_ has the optimality conditions; "
                          "a larger max_iter or method_options such as gradient_tolerance may help)",
                          ConvergenceWarning, stacklevel=4)
        diagnostics = getattr(self, "diagnostics_", None)
        if diagnostics is not None and len(diagnostics):
            # The quantities R̂ and ESS mean something for: lp__, the hyperparameters and the
            # network's output (the weights of a network are not identified: units can swap).
            rows = [r for r in diagnostics.index if r == "lp__" or r == "beta" or r.startswith(("alpha.", "f."))]
            d = diagnostics.loc[rows]
            chains = max(1, len(getattr(self, "chains_", [])))
            worst_rhat = d["rhat"].max(skipna=True)
            worst_ess = d["ess_bulk"].min(skipna=True)
            problems = []
            if np.isfinite(worst_rhat) and worst_rhat > RHAT_LIMIT:
                problems.append(f"R-hat up to {worst_rhat:.3g} ({d['rhat'].idxmax()}; want < {RHAT_LIMIT})")
            if np.isfinite(worst_ess) and worst_ess < ESS_PER_CHAIN * chains:
                problems.append(f"bulk ESS down to {worst_ess:.3g} ({d['ess_bulk'].idxmin()}; want > "
                                f"{ESS_PER_CHAIN} per chain, {ESS_PER_CHAIN * chains})")
            if problems:
                warnings.warn("the chains have not mixed: " + "; ".join(problems) + ". Run longer (draws, warmup) "
                              "or more chains before trusting the draws (diagnostics_ has every column)",
                              SamplerWarning, stacklevel=4)

    def _check_fitted_X(self, X):
        check_is_fitted(self, "model_")
        return self._validate_data(X, reset=False, dtype=np.float64)

    # --- pickling, through the model file ----------------------------------------------------

    def __getstate__(self):
        state = dict(super().__getstate__())
        model = state.pop("model_", None)
        if model is not None:
            with tempfile.TemporaryDirectory() as folder:
                model.save(os.path.join(folder, "model.json"))
                files = {}
                for name in sorted(os.listdir(folder)):
                    with open(os.path.join(folder, name), "rb") as f:
                        files[name] = f.read()
            state["_model_files"] = files
        return state

    def __setstate__(self, state):
        state = dict(state)
        files = state.pop("_model_files", None)
        if files is not None:
            with tempfile.TemporaryDirectory() as folder:
                for name, data in files.items():
                    with open(os.path.join(folder, os.path.basename(name)), "wb") as f:
                        f.write(data)
                state["model_"] = _occam.load_model(os.path.join(folder, "model.json"))
        super().__setstate__(state)

    # --- saving for the command line ---------------------------------------------------------

    def save(self, path):
        """Writes the model file `occam predict --model` reads."""
        check_is_fitted(self, "model_")
        self.model_.save(os.fspath(path))


def as_offset(offset, n_rows):
    """An offset column (log exposure) as float64, one entry per row, or None."""
    if offset is None:
        return None
    offset = check_array(np.asarray(offset, dtype=np.float64).reshape(-1, 1), ensure_2d=True).ravel()
    if len(offset) != n_rows:
        raise ValueError(f"offset has {len(offset)} entries, X has {n_rows} rows")
    return offset


def layers(hidden):
    """hidden as a list of layer widths, refused with the parameter's name when it is not one."""
    values = [hidden] if np.isscalar(hidden) else hidden
    try:
        widths = [operator_index(h) for h in values]
    except TypeError:
        raise ValueError(f"hidden={hidden!r}: must be a positive integer or a tuple of them, e.g. (50,) or (20, 20)") \
            from None
    if not widths or any(w < 1 for w in widths):
        raise ValueError(f"hidden={hidden!r}: every layer needs at least 1 unit")
    return widths


def operator_index(value):
    if isinstance(value, bool):
        raise TypeError
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real) and float(value).is_integer():
        return int(value)
    raise TypeError
