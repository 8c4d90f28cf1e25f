"""A fit through Python and through `occam fit` on the same CSV, spec and seed gives bit-identical
predictions, both ways: each front end reads the other's model file and predicts the same bits."""

import os
import subprocess

import numpy as np
import pandas as pd
import pytest

import occam

CLI = os.environ.get("OCCAM_CLI")
pytestmark = pytest.mark.skipif(not CLI, reason="OCCAM_CLI (the occam tool; ctest sets it) is not set")


def write_csv(path, frame):
    # repr() of a float is its shortest round-trip form: the tool reads back the same doubles.
    with open(path, "w") as f:
        f.write(",".join(frame.columns) + "\n")
        for row in frame.itertuples(index=False):
            f.write(",".join(repr(float(v)) for v in row) + "\n")


def occam_cli(*args):
    subprocess.run([CLI, *args], check=True, capture_output=True, text=True)


def regression_data(rng, n):
    x1 = rng.uniform(-2, 2, n)
    x2 = rng.normal(size=n)
    y = np.sin(x1) + 0.3 * x2 + 0.1 * rng.normal(size=n)
    return pd.DataFrame({"x1": x1, "x2": x2}), pd.Series(y, name="y")


def cli_predictions(tmp_path, model_path, X):
    write_csv(tmp_path / "test.csv", X)
    occam_cli("predict", "--model", str(model_path), "--data", str(tmp_path / "test.csv"),
              "--out", str(tmp_path / "pred.csv"))
    return pd.read_csv(tmp_path / "pred.csv", float_precision="round_trip")


def assert_bit_identical(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape
    assert np.array_equal(a.view(np.int64), b.view(np.int64)), np.max(np.abs(a - b))


def test_mlp_regressor_fit_by_python_and_by_the_cli_predict_the_same_bits(tmp_path):
    rng = np.random.default_rng(5)
    X, y = regression_data(rng, 80)
    X_test, _ = regression_data(rng, 25)
    write_csv(tmp_path / "train.csv", X.assign(y=y))
    occam_cli("fit", "--data", str(tmp_path / "train.csv"), "--target", "y", "--hidden", "6", "--seed", "3",
              "--out", str(tmp_path / "cli.json"), "--quiet")
    est = occam.BayesianMLPRegressor(hidden=(6,), random_state=3).fit(X, y)
    cli = cli_predictions(tmp_path, tmp_path / "cli.json", X_test)
    mean, std = est.predict(X_test, return_std=True)
    lower, upper = est.predict_interval(X_test)
    for column, ours in [("mean", mean), ("std", std), ("lower", lower), ("upper", upper)]:
        assert_bit_identical(ours, cli[column])
    # Python's model file, read by the tool; the tool's, read by Python.
    est.save(tmp_path / "python.json")
    assert_bit_identical(cli_predictions(tmp_path, tmp_path / "python.json", X_test)["mean"], mean)
    loaded = occam.load_model(str(tmp_path / "cli.json"))
    assert_bit_identical(loaded.predict(X_test.to_numpy())["std"], std)
    # The same fit: the same hyperparameters in both reports.
    import json
    assert est.alpha_ == json.loads(loaded.report)["alpha"]


def test_logistic_regression_fit_by_python_and_by_the_cli_predict_the_same_bits(tmp_path):
    rng = np.random.default_rng(6)
    X = pd.DataFrame({"a": rng.normal(size=120), "b": rng.normal(size=120)})
    y = pd.Series((X["a"] - 0.5 * X["b"] + 0.5 * rng.normal(size=120) > 0).astype(float), name="label")
    write_csv(tmp_path / "train.csv", X.assign(label=y))
    occam_cli("fit", "--data", str(tmp_path / "train.csv"), "--target", "label", "--model", "linear",
              "--likelihood", "bernoulli", "--prior", "ridge", "--standardize", "inputs",
              "--out", str(tmp_path / "cli.json"), "--quiet")
    est = occam.BayesianLogisticRegression(random_state=1).fit(X, y)
    cli = cli_predictions(tmp_path, tmp_path / "cli.json", X)
    assert_bit_identical(est.predict_proba(X)[:, 1], cli["p_1"])


def test_poisson_with_an_offset_fit_by_python_and_by_the_cli_predict_the_same_bits(tmp_path):
    rng = np.random.default_rng(7)
    n = 150
    X = pd.DataFrame({"s1": rng.normal(size=n), "s2": rng.normal(size=n)})
    exposure = np.log(rng.uniform(0.5, 2.0, n))
    y = pd.Series(rng.poisson(np.exp(0.3 + 0.6 * X["s1"] + exposure)).astype(float), name="count")
    write_csv(tmp_path / "train.csv", X.assign(exposure=exposure, count=y))
    occam_cli("fit", "--data", str(tmp_path / "train.csv"), "--target", "count", "--model", "linear",
              "--likelihood", "poisson", "--prior", "ridge", "--standardize", "inputs", "--offset", "exposure",
              "--out", str(tmp_path / "cli.json"), "--quiet")
    est = occam.BayesianPoissonRegressor(random_state=1).fit(X, y, offset=exposure)
    cli = cli_predictions(tmp_path, tmp_path / "cli.json", X.assign(exposure=exposure))
    assert_bit_identical(est.predict(X, offset=exposure), cli["mean"])
