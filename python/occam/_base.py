"""What every occam estimator shares: the call into the library, the learned attributes read
from the fit's report, progress lines, and pickling through the versioned model file.

The estimators only translate their parameters into a model specification and method options
(both JSON, read by the library) and arrays; occam._occam.fit does the rest.
"""

import json
import math
import os
import sys
import tempfile

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_array, check_is_fitted

from . import _occam

MCMC_METHODS = ("nuts", "hmc", "metropolis", "mclmc", "mams", "sgld", "sghmc")
METHODS = ("laplace", "map", "vi") + MCMC_METHODS


def seed_from(random_state):
    """The library's seed: an int is used as given (the CLI's --seed), else one is drawn."""
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool) and random_state >= 0:
        return int(random_state)
    return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))


def _number(value):
    return math.nan if value is None else float(value)


class Progress:
    """One line per iteration of the fit, rewritten in place on a terminal and in a notebook
    (both honour a carriage return on stderr)."""

    def __init__(self, stream=None):
        self.stream = stream if stream is not None else sys.stderr
        self.width = 0

    def __call__(self, line, chain, iteration, total):
        if not line:
            return
        self.stream.write("\r" + line.ljust(self.width))
        self.width = len(line)
        self.stream.flush()

    def close(self):
        if self.width:
            self.stream.write("\n")
            self.stream.flush()


class OccamEstimator(BaseEstimator):
    """The shared machinery; subclasses define _spec() and _method() and call _fit_library()."""

    # --- what subclasses provide -------------------------------------------------------------

    def _method_options(self, method, hyper, extra):
        """The method options for the library (keys are the CLI's flags, '-' written '_')."""
        if method not in METHODS:
            raise ValueError(f"method={method!r}: must be one of {', '.join(METHODS)}")
        options = {"method": method, "seed": seed_from(self.random_state)}
        if hyper is not None:
            options["hyper"] = hyper
        options.update({k: v for k, v in extra.items() if v is not None})
        options.update(self.method_options or {})
        return options

    # --- the call into the library -----------------------------------------------------------

    def _feature_names(self, n_features):
        names = getattr(self, "feature_names_in_", None)
        if names is not None:
            return [str(name) for name in names]
        return [f"x{d}" for d in range(n_features)]

    def _fit_library(self, X, Y, spec, method, class_labels=(), offset=None, target="y"):
        progress = Progress() if self.verbose else None
        try:
            self.model_ = _occam.fit(json.dumps(spec), X, np.asarray(Y, dtype=np.float64).reshape(len(X), 1),
                                     self._feature_names(X.shape[1]), str(target), [str(c) for c in class_labels],
                                     offset, json.dumps(method), progress)
        finally:
            if progress is not None:
                progress.close()
        self._read_report()
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

    def _check_fitted_X(self, X):
        check_is_fitted(self, "model_")
        return self._validate_data(X, reset=False, dtype=np.float64)

    def _predict_library(self, X, offset=None, **options):
        return self.model_.predict(X, offset=offset, **options)

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
