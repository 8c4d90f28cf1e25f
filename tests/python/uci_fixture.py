"""Fixtures shared by the tests of the UCI scripts in bench/: a results file as occam_uci writes it."""
import csv


def write_results(path, rows):
    with open(path, "w", newline="") as f:
        f.write("# occam_uci test fixture\n")
        w = csv.writer(f)
        w.writerow(["dataset", "split", "method", "rmse", "test_ll", "coverage95", "seconds", "termination"])
        w.writerows(rows)
