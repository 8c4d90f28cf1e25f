"""occam.plot_*: each returns its Axes, draws the numbers of the run, model or report it is given,
and draws the same numbers as `occam plot` (whose data files are read back here)."""

import json
import os
import subprocess

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

import occam  # noqa: E402
from occam.plot import calibration_curve, rank_histograms  # noqa: E402

CLI = os.environ.get("OCCAM_CLI")
pytestmark = pytest.mark.skipif(not CLI, reason="OCCAM_CLI (the occam tool; ctest sets it) is not set")


def occam_cli(*args, cwd):
    return subprocess.run([CLI, *args], check=True, capture_output=True, text=True, cwd=cwd)


def write_split(directory, seed):
    rng = np.random.default_rng(seed)
    for name, n in (("train.csv", 60), ("test.csv", 40)):
        x1, x2 = rng.normal(size=n), rng.normal(size=n)
        y = 0.5 + 1.5 * x1 - x2 + 0.3 * rng.normal(size=n)
        with open(directory / name, "w") as f:
            f.write("x1,x2,y\n")
            for row in zip(x1, x2, y):
                f.write(",".join(repr(float(v)) for v in row) + "\n")


def blocks(path):
    """A .dat file of `occam plot` as a list of blocks (separated by blank lines) of rows."""
    out, current = [], []
    for line in open(path):
        if line.startswith("#"):
            continue
        if not line.strip():
            if current:
                out.append(np.array(current))
                current = []
            continue
        current.append([float(v) for v in line.split()])
    if current:
        out.append(np.array(current))
    return out


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    directory = tmp_path_factory.mktemp("run")
    write_split(directory, 3)
    occam_cli("sample", "--data", "train.csv", "--target", "y", "--model", "linear", "--chains", "2", "--warmup", "150",
              "--draws", "200", "--seed", "2", "--out", "run", "--quiet", cwd=directory)
    occam_cli("plot", "run", "--out-dir", "pictures", cwd=directory)
    return directory


def test_traces_are_the_runs_draws_with_rhat_and_ess_in_the_title(run):
    axes = occam.plot_traces(run / "run")
    output = occam.load_model(str(run / "run")).sampler_output()
    names = ["lp__"] + [c for c in output["columns"] if c.startswith("alpha") or c == "beta"]
    assert len(axes) == len(names)
    trace = blocks(run / "pictures" / "trace.dat")  # one block per chain: iteration, then each variable
    for k, (ax, name) in enumerate(zip(axes, names)):
        assert ax.get_ylabel() == name
        d = dict(zip(output["diagnostic_names"], output["diagnostics"][name]))
        assert f"Rhat {d['rhat']:.3f}" in ax.get_title() and f"ESS bulk {d['ess_bulk']:.0f}" in ax.get_title()
        for c, line in enumerate(ax.get_lines()):
            np.testing.assert_array_equal(line.get_ydata(), np.asarray(output["draws"][name])[c])
            np.testing.assert_array_equal(line.get_ydata(), trace[c][:, k + 1])  # what `occam plot` drew
    plt.close("all")


def test_rank_plots_count_the_same_ranks_as_occam_plot(run):
    axes = occam.plot_ranks(run / "run")
    ranks = blocks(run / "pictures" / "rank.dat")  # one block per variable: bin centre, count per chain
    assert len(axes) == len(ranks)
    for ax, counts in zip(axes, ranks):
        stairs = [p for p in ax.patches if hasattr(p, "get_data")]
        assert len(stairs) == 2
        for c, s in enumerate(stairs):
            np.testing.assert_array_equal(s.get_data().values, counts[:, c + 1])
        assert counts[:, 1:].sum(axis=0).tolist() == [200, 200]
    # Ties share their average rank; a shifted chain piles up in the top bins.
    np.testing.assert_array_equal(rank_histograms([[1.0, 2.0], [1.0, 2.0]], 2), [[1, 1], [1, 1]])
    np.testing.assert_array_equal(rank_histograms([[1.0, 2.0], [3.0, 4.0]], 2), [[2, 0], [0, 2]])
    plt.close("all")


def test_hyperparameter_histograms_hold_every_draw(run):
    axes = occam.plot_hyperparameters(run / "run")
    hyper = blocks(run / "pictures" / "hyper.dat")
    assert len(axes) == len(hyper)
    for ax, rows in zip(axes, hyper):
        heights = np.array([p.get_height() for p in ax.patches])
        assert heights.sum() == 400  # 2 chains × 200 draws
        np.testing.assert_array_equal(heights, rows[:, 1])  # the same 30 bins as `occam plot`
    plt.close("all")


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    directory = tmp_path_factory.mktemp("model")
    write_split(directory, 4)
    occam_cli("fit", "--data", "train.csv", "--target", "y", "--hidden", "3", "--out", "model.json", "--report",
              "report.json", "--quiet", cwd=directory)
    occam_cli("plot", "model.json", "--data", "test.csv", "--input", "x2", "--out-dir", "pictures", cwd=directory)
    occam_cli("plot", "report.json", "--out-dir", "pictures", cwd=directory)
    test = pd.read_csv(directory / "test.csv", float_precision="round_trip")
    return directory, occam.load_model(str(directory / "model.json")), test[["x1", "x2"]], test["y"]


def test_predicted_against_observed_draws_the_models_intervals(fitted):
    directory, model, X, y = fitted
    ax = occam.plot_predicted_observed(model, X, y)
    assert isinstance(ax, matplotlib.axes.Axes)
    rows = blocks(directory / "pictures" / "predicted.dat")[0]  # observed, mean, lower, upper
    points = ax.get_lines()[0]
    np.testing.assert_array_equal(points.get_xdata(), rows[:, 0])
    np.testing.assert_array_equal(points.get_ydata(), rows[:, 1])
    inside = np.mean((rows[:, 0] >= rows[:, 2]) & (rows[:, 0] <= rows[:, 3]))
    assert f"cover {100 * inside:.1f}% of 40 rows" in ax.get_title()
    plt.close("all")


def test_calibration_curve_is_occam_plots(fitted):
    directory, model, X, y = fitted
    ax = occam.plot_calibration(model, X, y)
    rows = blocks(directory / "pictures" / "calibration.dat")[0]  # nominal, empirical, band
    empirical = [line for line in ax.get_lines() if line.get_label() == "empirical"][0]
    np.testing.assert_allclose(empirical.get_xdata(), rows[:, 0], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(empirical.get_ydata(), rows[:, 1])
    # And it is the coverage of predict's own intervals.
    lower, upper = model.predict(np.asarray(X), level=0.3)["lower"], model.predict(np.asarray(X), level=0.3)["upper"]
    assert calibration_curve(model, X, y, [0.3])[1][0] == np.mean((y >= lower) & (y <= upper))
    plt.close("all")


def test_predictive_band_runs_along_one_input_like_occam_plot(fitted):
    directory, model, X, y = fitted
    ax = occam.plot_predictive_band(model, X, y, feature="x2")
    rows = blocks(directory / "pictures" / "band.dat")[0]  # x2, mean, lower, upper
    mean = [line for line in ax.get_lines() if line.get_label() == "predictive mean"][0]
    np.testing.assert_allclose(mean.get_xdata(), rows[:, 0], rtol=1e-12)
    np.testing.assert_allclose(mean.get_ydata(), rows[:, 1], rtol=1e-9)
    assert "x1 = " in ax.get_title()
    plt.close("all")


def test_evidence_ascent_is_the_reports_trace(fitted):
    directory, model, _, _ = fitted
    rows = blocks(directory / "pictures" / "evidence.dat")[0]  # round, log Z, beta, alpha per group, accepted
    report = json.load(open(directory / "report.json"))
    for source in (str(directory / "report.json"), report, model):
        axes = occam.plot_evidence(source)
        assert len(axes) == 3
        np.testing.assert_array_equal(axes[0].get_lines()[0].get_ydata(), rows[:, 1])
        np.testing.assert_array_equal(axes[2].get_lines()[0].get_ydata(), rows[:, 2])
        for g, line in enumerate(axes[1].get_lines()):
            np.testing.assert_array_equal(line.get_ydata(), rows[:, 3 + g])
        plt.close("all")


def test_estimators_plot_too_and_axes_can_be_given():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.uniform(-1, 1, 80), "b": rng.normal(size=80)})
    y = np.sin(2 * X["a"]) + 0.1 * rng.normal(size=80)
    estimator = occam.BayesianMLPRegressor(hidden=(4,), random_state=1).fit(X, y)
    _, ax = plt.subplots()
    assert occam.plot_calibration(estimator, X, y, ax=ax) is ax
    assert occam.plot_predictive_band(estimator, X, y, feature="a") is not None
    assert len(occam.plot_evidence(estimator)) == 3
    with pytest.raises(ValueError, match="no evidence trace"):
        occam.plot_evidence({"trace": [{"iteration": 0, "elbo": 1.0}]})
    plt.close("all")
