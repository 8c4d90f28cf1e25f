"""bench/uci/calibration.py: coverage and mean z^2 of the test predictions, pooled over the splits, and
with --results, pooled apart by whether each split's fit converged."""
import csv
import os
import subprocess
import sys

from uci_fixture import write_results

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "bench", "uci", "calibration.py")


def write_predictions(folder, dataset, split, method, zs):
    # y = mean + z·std with std 2: the file's z are exactly zs.
    with open(folder / f"{dataset}_{split}_{method}.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["test_row", "y", "mean", "std"])
        for i, z in enumerate(zs):
            w.writerow([i, 10.0 + i + 2.0 * z, 10.0 + i, 2.0])


def table_row(text, *cells):
    prefix = "| " + " | ".join(cells) + " |"
    for line in text.splitlines():
        if line.startswith(prefix):
            return [c.strip() for c in line.strip("|").split("|")]
    return None


def test_the_splits_are_pooled_apart_by_how_their_fit_ended(tmp_path):
    preds = tmp_path / "preds"
    preds.mkdir()
    # Split 0 converged: 2 of its 4 rows outside the interval (|z| 3), z^2 = (9+9+0+0)/4 = 4.5.
    write_predictions(preds, "yacht", 0, "laplace", [3.0, -3.0, 0.0, 0.0])
    # Splits 1 and 2 stopped early: every row inside, z^2 = 1.
    write_predictions(preds, "yacht", 1, "laplace", [1.0, -1.0, 1.0, -1.0])
    write_predictions(preds, "yacht", 2, "laplace", [1.0, 1.0, -1.0, -1.0])
    # Split 3 has no results row: left out of the second table, and said so.
    write_predictions(preds, "yacht", 3, "laplace", [0.0, 0.0, 0.0, 0.0])
    write_results(tmp_path / "r.csv", [["yacht", 0, "laplace", 1, 0, 0.5, 1, "converged"],
                                       ["yacht", 1, "laplace", 1, 0, 1.0, 1, "maximum_iterations"],
                                       ["yacht", 2, "laplace", 1, 0, 1.0, 1, "no_progress"]])
    out = subprocess.run([sys.executable, SCRIPT, str(preds), "--results", str(tmp_path / "r.csv")],
                         capture_output=True, text=True, check=True).stdout
    pooled = table_row(out, "yacht", "laplace", "4")
    assert pooled is not None and pooled[3] == "16" and pooled[4] == "0.875"
    converged = table_row(out, "yacht", "laplace", "converged")
    assert converged == ["yacht", "laplace", "converged", "1", "4", "0.500", "4.50"]
    stopped = table_row(out, "yacht", "laplace", "stopped otherwise")
    assert stopped == ["yacht", "laplace", "stopped otherwise", "2", "8", "1.000", "1.00"]
    assert "No results row for 1 prediction file(s), left out: yacht split 3 laplace" in out


def test_without_results_there_is_one_table(tmp_path):
    preds = tmp_path / "preds"
    preds.mkdir()
    write_predictions(preds, "yacht", 0, "laplace", [3.0, 0.0, 0.0, 0.0])
    out = subprocess.run([sys.executable, SCRIPT, str(preds)], capture_output=True, text=True, check=True).stdout
    assert table_row(out, "yacht", "laplace", "1") is not None
    assert "converged" not in out
