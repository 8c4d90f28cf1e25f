"""bench/hidden_unit_clusters.py: a saved network's hidden units grouped by their incoming weights
and bias, up to tanh's sign change, at each relative tolerance."""
import importlib.util
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "bench", "hidden_unit_clusters.py")
SPEC = importlib.util.spec_from_file_location("hidden_unit_clusters", SCRIPT)
clusters_module = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(clusters_module)


def mlp_model(units, outgoing, activation="tanh"):
    """An occam-model file's fields for a 3-input, one-hidden-layer mlp: units[c] = (weights, bias)."""
    fan_in, hidden = 3, len(units)
    mean = [0.0] * (fan_in * hidden)
    for c, (weights, _) in enumerate(units):
        for j in range(fan_in):
            mean[c + j * hidden] = weights[j]  # unit-major: unit c's input j at c + j·units
    mean += [bias for _, bias in units]
    mean += list(outgoing) + [0.25]  # the output layer's weights, then its bias
    return {"network": {"type": "mlp", "layers": [fan_in, hidden, 1], "activation": activation},
            "posterior": {"mean": mean}}


UNITS = [([1.0, 2.0, 3.0], 0.5),
         ([-1.0, -2.0, -3.0], -0.5),  # unit 0 with its sign flipped
         ([1.0001, 2.0, 3.0], 0.5),  # unit 0 to a relative 3e-5
         ([3.0, 2.0, 1.0], 0.5)]


def test_layers_are_read_in_occams_unit_major_layout():
    layers, activation = clusters_module.layers_of(mlp_model(UNITS, [0.1, -0.2, 0.3, 0.4]))
    weights, biases = layers[0]
    assert activation == "tanh"
    assert weights == [list(w) for w, _ in UNITS]
    assert biases == [b for _, b in UNITS]
    assert layers[1] == ([[0.1, -0.2, 0.3, 0.4]], [0.25])


def test_units_coincide_up_to_sign_within_the_tolerance_only():
    vectors = [w + [b] for w, b in UNITS]
    assert clusters_module.clusters(vectors, 1e-6, odd=True) == [[0, 1], [2], [3]]
    assert clusters_module.clusters(vectors, 1e-3, odd=True) == [[0, 1, 2], [3]]
    # Without tanh's symmetry a flipped unit is another function.
    assert clusters_module.clusters(vectors, 1e-3, odd=False) == [[0, 2], [1], [3]]


def test_the_command_reports_distinct_units_per_tolerance(tmp_path):
    path = tmp_path / "model.json"
    path.write_text(json.dumps(mlp_model(UNITS, [0.1, -0.2, 0.3, 0.4])))
    out = subprocess.run([sys.executable, SCRIPT, str(path), "--tolerances", "1e-6,1e-3"],
                         check=True, capture_output=True, text=True).stdout
    assert "tolerance 1e-06: 3 distinct units; groups of coinciding units: 2" in out
    assert "tolerance 0.001: 2 distinct units; groups of coinciding units: 3" in out


def test_a_model_whose_parameters_do_not_fit_its_layers_is_refused(tmp_path):
    model = mlp_model(UNITS, [0.1, -0.2, 0.3, 0.4])
    model["posterior"]["mean"].append(1.0)
    path = tmp_path / "model.json"
    path.write_text(json.dumps(model))
    result = subprocess.run([sys.executable, SCRIPT, str(path)], capture_output=True, text=True)
    assert result.returncode != 0 and "parameters" in result.stderr


def test_with_the_rows_each_group_is_described_by_its_pre_activations(tmp_path):
    model = mlp_model(UNITS, [0.1, -0.2, 0.3, 0.4])
    model["features"] = ["a", "b", "c"]
    model["standardizer"] = {"mode": "both", "x_mean": [1.0, 0.0, 0.0], "x_scale": [2.0, 1.0, 1.0]}
    path = tmp_path / "model.json"
    path.write_text(json.dumps(model))
    data = tmp_path / "train.csv"
    # Standardised, the rows are (0, 0, 0) and (1, 0, 0): unit 0's pre-activations 0.5 and 1.5.
    data.write_text("c,a,y,b\n0,1,7,0\n0,3,8,0\n")
    out = subprocess.run([sys.executable, SCRIPT, str(path), "--tolerances", "1e-6", "--data", str(data)],
                         check=True, capture_output=True, text=True).stdout
    smallest_slope = 1.0 - math.tanh(1.5) ** 2
    assert (f"2 units: incoming norm 3.77, outgoing |v| 0.1; pre-activation mean 1, s.d. 0.5; "
            f"smallest tanh' {smallest_slope:.3g}") in out
