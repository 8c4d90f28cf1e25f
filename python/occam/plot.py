"""Pictures of occam runs with matplotlib, the same ones `occam plot` draws with gnuplot
(docs/python.md, "Pictures"). Each function draws on the Axes it is given (or on a new figure) and
returns them: one Axes, or an array of Axes for a picture of several panels.

    import occam
    axes = occam.plot_traces("run/")                      # a sampling run folder (occam sample)
    ax = occam.plot_calibration(model, X_test, y_test)    # a fitted estimator or FittedModel
    axes = occam.plot_evidence(model)                     # the evidence ascent of a Laplace fit

The numbers are those of the C++ library: draws, R-hat and ESS from FittedModel.sampler_output(),
intervals from the model's predict, the ascent from its report; this module only ranks, counts and
draws them.
"""

import json

import numpy as np

_HYPER_PREFIXES = ("alpha.",)
_HYPER_NAMES = ("alpha", "beta", "smoothing")


def _pyplot():
    import matplotlib.pyplot as plt  # matplotlib is optional: pip install occam[plot]
    return plt


def _fitted_model(source):
    """A FittedModel from a path (model file or run folder), an occam estimator or a FittedModel."""
    from ._occam import load_model
    if isinstance(source, (str, bytes)) or hasattr(source, "__fspath__"):
        return load_model(str(source))
    return getattr(source, "model_", source)


def _axes(axes, count, width=9.0, panel_height=2.4):
    if axes is not None:
        return np.atleast_1d(axes)
    plt = _pyplot()
    _, created = plt.subplots(count, 1, figsize=(width, panel_height * count), squeeze=False, constrained_layout=True)
    return created[:, 0]


def _is_hyperparameter(name):
    return name.startswith(_HYPER_PREFIXES) or name in _HYPER_NAMES


def run_variables(output):
    """The columns pictures of a run show by default: lp__ and the sampled hyperparameters, else
    lp__ and the first three monitored outputs f.* (as `occam plot`)."""
    columns = output["columns"]
    chosen = ["lp__"] if "lp__" in columns else []
    chosen += [c for c in columns if _is_hyperparameter(c)]
    if len(chosen) <= 1:
        chosen += [c for c in columns if c.startswith("f.")][:4 - len(chosen)]
    return chosen


def _diagnostics(output, name):
    values = dict(zip(output["diagnostic_names"], output["diagnostics"][name]))
    return values


def _diagnostics_title(output, name):
    d = _diagnostics(output, name)
    return f"{name}:  Rhat {d['rhat']:.3f}   ESS bulk {d['ess_bulk']:.0f}   ESS tail {d['ess_tail']:.0f}"


def rank_histograms(draws, bins):
    """Rank plots' counts (Vehtari et al. 2021, Sec. 4.1): `draws` is (chain, draw); every draw is
    ranked among all of them (ties share their average rank) and each chain's ranks are counted in
    `bins` equal bins. Returns (bins, chains) counts, as occam::rank_histograms does."""
    draws = np.asarray(draws, dtype=float)
    flat = draws.ravel()
    order = np.argsort(flat, kind="stable")
    ranks = np.empty(flat.size)
    sorted_values = flat[order]
    i = 0
    while i < flat.size:
        j = i
        while j + 1 < flat.size and sorted_values[j + 1] == sorted_values[i]:
            j += 1
        ranks[order[i:j + 1]] = 0.5 * (i + j) + 1.0
        i = j + 1
    ranks = ranks.reshape(draws.shape)
    which = np.minimum(bins - 1, ((ranks - 1.0) * bins / flat.size).astype(int))
    return np.stack([np.bincount(which[c], minlength=bins) for c in range(draws.shape[0])], axis=1)


def plot_traces(run, variables=None, axes=None):
    """Each variable's draws against the iteration, a line per chain, with R-hat and the bulk and
    tail ESS in each panel's title. `run`: a run folder, or an MCMC-fitted estimator or model."""
    output = _fitted_model(run).sampler_output()
    variables = list(variables) if variables is not None else run_variables(output)
    axes = _axes(axes, len(variables))
    for ax, name in zip(axes, variables):
        draws = np.asarray(output["draws"][name])
        for c, chain in enumerate(draws):
            ax.plot(np.arange(1, chain.size + 1), chain, lw=0.8, label=f"chain {c + 1}")
        ax.set_title(_diagnostics_title(output, name), fontsize=10)
        ax.set_ylabel(name)
        ax.set_xlabel("iteration (after warm-up)")
        ax.legend(loc="upper right", fontsize=8)
    return axes


def plot_ranks(run, variables=None, bins=None, axes=None):
    """Rank plots: each chain's histogram of its draws' ranks among all chains' draws; flat bars
    near the dashed line when the chains explore the same distribution."""
    output = _fitted_model(run).sampler_output()
    variables = list(variables) if variables is not None else run_variables(output)
    axes = _axes(axes, len(variables))
    for ax, name in zip(axes, variables):
        draws = np.asarray(output["draws"][name])
        count = bins or int(np.clip(draws.shape[1] // 20, 1, 20))
        counts = rank_histograms(draws, count)
        edges = np.linspace(0.0, 1.0, count + 1)
        for c in range(counts.shape[1]):
            ax.stairs(counts[:, c], edges, lw=1.5, label=f"chain {c + 1}")
        ax.axhline(draws.shape[1] / count, color="black", ls="--", lw=1, label="uniform")
        ax.set_title(_diagnostics_title(output, name) + "   (flat bars: chains agree)", fontsize=10)
        ax.set_xlabel("rank among all chains' draws (fraction)")
        ax.set_ylabel("draws")
        ax.set_xlim(0, 1)
        ax.legend(loc="upper right", fontsize=8)
    return axes


def plot_hyperparameters(run, axes=None, bins=30):
    """The histogram of each sampled hyperparameter's draws (all chains), on a log10 scale."""
    output = _fitted_model(run).sampler_output()
    names = [c for c in output["columns"] if _is_hyperparameter(c)]
    if not names:
        raise ValueError("the run sampled no hyperparameters (alpha and beta were fixed)")
    axes = _axes(axes, len(names))
    for ax, name in zip(axes, names):
        values = np.log10(np.maximum(np.asarray(output["draws"][name]).ravel(), 1e-300))
        ax.hist(values, bins=bins, alpha=0.6, edgecolor="black", label="draws")
        d = _diagnostics(output, name)
        ax.set_title(f"{name}:  median {d['median']:.4g}, 90% interval [{d['q5']:.4g}, {d['q95']:.4g}];  "
                     f"Rhat {d['rhat']:.3f}, ESS bulk {d['ess_bulk']:.0f}", fontsize=10)
        ax.set_xlabel(f"log10 {name}")
        ax.set_ylabel("draws")
    return axes


def _interval(model, X, level):
    """Predictive mean and central `level` interval at the rows of X, from an occam estimator or a
    FittedModel (columns in its feature order)."""
    if hasattr(model, "predict_interval"):
        lower, upper = model.predict_interval(X, level=level)
        return np.asarray(model.predict(X), dtype=float), np.asarray(lower), np.asarray(upper)
    p = _fitted_model(model).predict(np.asarray(X, dtype=float), level=level)
    return np.asarray(p["mean"]), np.asarray(p["lower"]), np.asarray(p["upper"])


def calibration_curve(model, X, y, levels=None):
    """(nominal, empirical): the fraction of targets inside the central interval at each level
    (0.05, 0.10, …, 0.95 by default), as occam::calibration_curve computes it."""
    levels = np.arange(1, 20) * 0.05 if levels is None else np.sort(np.asarray(levels, dtype=float))
    y = np.asarray(y, dtype=float).ravel()
    empirical = []
    for level in levels:
        _, lower, upper = _interval(model, X, float(level))
        empirical.append(np.mean((y >= lower) & (y <= upper)))
    return levels, np.asarray(empirical)


def plot_predicted_observed(model, X, y, level=0.95, ax=None):
    """Predicted mean with its central `level` interval against the observed target, one point per
    row, and the line predicted = observed; the interval's coverage and the RMSE in the title."""
    y = np.asarray(y, dtype=float).ravel()
    mean, lower, upper = _interval(model, X, level)
    ax = ax if ax is not None else _axes(None, 1, 9.0, 6.0)[0]
    ax.errorbar(y, mean, yerr=[mean - lower, upper - mean], fmt="o", ms=3, lw=0.8, alpha=0.7,
                label=f"mean and {100 * level:g}% interval")
    lo, hi = min(y.min(), lower.min()), max(y.max(), upper.max())
    ax.plot([lo, hi], [lo, hi], "k--", lw=1, label="predicted = observed")
    inside = np.mean((y >= lower) & (y <= upper))
    rmse = np.sqrt(np.mean((y - mean) ** 2))
    ax.set_title(f"{100 * level:g}% intervals cover {100 * inside:.1f}% of {y.size} rows;  RMSE {rmse:.4g}")
    ax.set_xlabel("observed")
    ax.set_ylabel("predicted")
    ax.legend(loc="upper left")
    return ax


def plot_calibration(model, X, y, levels=None, ax=None):
    """Empirical coverage of the central intervals against their nominal level, with the ±2
    binomial standard errors of a calibrated model."""
    nominal, empirical = calibration_curve(model, X, y, levels)
    rows = np.asarray(y).size
    band = 2.0 * np.sqrt(nominal * (1.0 - nominal) / rows)
    ax = ax if ax is not None else _axes(None, 1, 9.0, 6.0)[0]
    ax.fill_between(nominal, nominal - band, nominal + band, color="0.8", label="calibrated model: ±2 s.e.")
    ax.plot(nominal, empirical, "o-", color="tab:red", lw=2, label="empirical")
    ax.plot([0, 1], [0, 1], "k--", lw=1, label="nominal")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_title(f"calibration of the central intervals on {rows} rows")
    ax.set_xlabel("nominal level of the central interval")
    ax.set_ylabel("fraction of targets inside")
    ax.legend(loc="upper left")
    return ax


def plot_predictive_band(model, X, y, feature=0, level=0.95, points=200, ax=None):
    """The predictive mean and central interval along one input (`feature`: a column name or
    index), every other input held at its mean over X, with the data."""
    names = list(getattr(X, "columns", []))
    values = np.asarray(X, dtype=float)
    j = names.index(feature) if isinstance(feature, str) else int(feature)
    label = names[j] if names else f"x{j}"
    lo, hi = values[:, j].min(), values[:, j].max()
    pad = 0.05 * (hi - lo) if hi > lo else 0.05 * max(1.0, abs(lo))
    grid = np.tile(values.mean(axis=0), (points, 1))
    grid[:, j] = np.linspace(lo - pad, hi + pad, points)
    if names:
        import pandas as pd
        grid = pd.DataFrame(grid, columns=names)
    mean, lower, upper = _interval(model, grid, level)
    x = np.asarray(grid)[:, j]
    ax = ax if ax is not None else _axes(None, 1, 9.0, 6.0)[0]
    ax.fill_between(x, lower, upper, color="tab:blue", alpha=0.3, label=f"{100 * level:g}% predictive interval")
    ax.plot(x, mean, color="tab:blue", lw=2, label="predictive mean")
    ax.plot(values[:, j], np.asarray(y, dtype=float).ravel(), "o", ms=3, color="tab:red", label="data")
    held = [f"{names[k] if names else f'x{k}'} = {values[:, k].mean():.4g}" for k in range(values.shape[1]) if k != j]
    ax.set_title(f"predictive {100 * level:g}% interval along {label}" + (f" ({', '.join(held[:4])})" if held else ""))
    ax.set_xlabel(label)
    ax.set_ylabel("target")
    ax.legend(loc="best")
    return ax


def evidence_ascent(source):
    """The evidence framework's rounds from a report (a dict, or a file of occam fit --report), a
    model file, an estimator or a FittedModel: dict of arrays step, log_evidence, beta, accepted and alpha (a
    dict of arrays per weight group), as occam::evidence_ascent reads them."""
    if isinstance(source, dict):
        report = source
    elif isinstance(source, (str, bytes)) or hasattr(source, "__fspath__"):  # a report or model file
        with open(source, encoding="utf-8") as f:
            report = json.load(f)
    else:
        report = json.loads(_fitted_model(source).report)
    report = report.get("summary", report) if isinstance(report.get("summary"), dict) else report
    trace = report.get("trace") or []
    if not trace or "log_evidence" not in trace[0]:
        raise ValueError("the report has no evidence trace: only fits whose alpha and beta were re-estimated by the "
                         "evidence record one")

    def number(value):
        return np.nan if value is None else float(value)

    names = sorted(trace[0].get("alpha", {}))
    return {"step": np.array([t.get("iteration", k) for k, t in enumerate(trace)]),
            "log_evidence": np.array([number(t.get("log_evidence")) for t in trace]),
            "beta": np.array([number(t.get("beta")) for t in trace]),
            "accepted": np.array([bool(t.get("accepted", True)) for t in trace]),
            "alpha": {g: np.array([number(t["alpha"].get(g)) for t in trace]) for g in names}}


def plot_evidence(source, axes=None):
    """The evidence ascent: log-evidence, each weight group's α and β against the re-estimation
    round (standardised units; hollow markers: rounds whose step was undone)."""
    a = evidence_ascent(source)
    has_beta = bool(np.isfinite(a["beta"]).any())
    axes = _axes(axes, 3 if has_beta else 2)
    ax = axes[0]
    ax.plot(a["step"], a["log_evidence"], "o-", lw=2, label="log Z")
    undone = ~a["accepted"]
    if undone.any():
        ax.plot(a["step"][undone], a["log_evidence"][undone], "o", mfc="none", ms=10, color="tab:red", label="undone")
    ax.set_title("log-evidence (standardised units)")
    ax.set_ylabel("log Z")
    ax.legend(loc="lower right")
    for name, values in a["alpha"].items():
        axes[1].plot(a["step"], values, "o-", label=name)
    axes[1].set_yscale("log")
    axes[1].set_title("prior precision of each weight group")
    axes[1].set_ylabel("alpha")
    axes[1].legend(loc="best", fontsize=8)
    if has_beta:
        axes[2].plot(a["step"], a["beta"], "o-", lw=2, label="beta")
        axes[2].set_yscale("log")
        axes[2].set_title("noise precision")
        axes[2].set_ylabel("beta")
    for ax in axes:
        ax.set_xlabel("re-estimation round")
    return axes
