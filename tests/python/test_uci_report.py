"""bench/uci_report.py: the UCI tables compare each declared method, on complete runs only, with every
published result, ahead / level / behind by two standard errors of the difference."""
import csv
import importlib.util
import math
import os

from uci_fixture import write_results

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = importlib.util.spec_from_file_location("uci_report", os.path.join(HERE, "..", "..", "bench", "uci_report.py"))
report = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(report)


def split_rows(dataset, method, n, ll, spread=0.1, coverage=0.95):
    # Test log-likelihoods ll ± spread alternately: mean ll, std (ddof 0) = spread.
    return [[dataset, k, method, 1.0, ll + (spread if k % 2 else -spread), coverage, 1.0, "converged"]
            for k in range(n)]


def write_published(path, rows, extra_columns=False):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        head = ["dataset", "method", "metric", "mean", "stderr", "source"]
        w.writerow(head + (["spread", "splits"] if extra_columns else []))
        w.writerows(rows)


def run(tmp_path, results, published, extra=None):
    write_results(tmp_path / "r.csv", results)
    write_published(tmp_path / "p.csv", published)
    paths = [str(tmp_path / "p.csv")]
    if extra is not None:
        write_published(tmp_path / "e.csv", extra, extra_columns=True)
        paths.append(str(tmp_path / "e.csv"))
    rows = report.read_results([str(tmp_path / "r.csv")])
    agg = report.aggregate(rows)
    pub, sources = report.read_published(paths)
    order = {m: i for i, m in enumerate(["map-cv", "laplace", "nuts"])}
    return report.tables(agg, pub, sources, order)


def summary_row(text, dataset, method):
    for line in text.splitlines():
        if line.startswith(f"| {dataset} | {method} |"):
            return [c.strip() for c in line.strip("|").split("|")]
    return None


def test_a_declared_method_is_counted_ahead_level_and_behind_against_each_published_result(tmp_path):
    # laplace: mean -2.0, s.e. 0.1/sqrt(20) = 0.0224 over 20 splits.
    results = split_rows("yacht", "laplace", 20, -2.0)
    published = [["yacht", "A", "test_ll", -2.5, 0.05, "paper A"],    # z = +9.1: ahead
                 ["yacht", "B", "test_ll", -2.05, 0.05, "paper B"],   # z = +0.9: level
                 ["yacht", "C", "test_ll", -1.5, 0.05, "paper C"]]    # z = -9.1: behind
    text = run(tmp_path, results, published)
    row = summary_row(text, "yacht", "laplace")
    assert row[2] == "20"
    assert row[5] == "1 / 1 / 1" and row[6] == "1 / 1 / 1"


def test_an_incomplete_run_is_neither_shown_nor_compared(tmp_path):
    results = split_rows("yacht", "laplace", 19, 5.0) + split_rows("yacht", "map-cv", 20, -2.0)
    published = [["yacht", "A", "test_ll", -2.5, 0.05, "paper A"]]
    text = run(tmp_path, results, published)
    assert summary_row(text, "yacht", "laplace")[3] == "not compared (incomplete)"
    assert "**occam laplace**" not in text
    assert "**occam map-cv**" in text
    assert "laplace (19 of 20 splits)" in text


def test_no_method_other_than_the_declared_ones_enters_the_summary(tmp_path):
    # map-cv beats everything, but it was not declared: no best-of over methods.
    results = split_rows("yacht", "laplace", 20, -3.0) + split_rows("yacht", "map-cv", 20, 9.0)
    published = [["yacht", "A", "test_ll", -2.5, 0.05, "paper A"]]
    text = run(tmp_path, results, published)
    assert summary_row(text, "yacht", "map-cv") is None
    assert summary_row(text, "yacht", "laplace")[5] == "0 / 0 / 1"


def test_a_per_split_standard_deviation_is_turned_into_a_standard_error(tmp_path):
    # The source printed s.d. 0.4 over 20 splits: s.e. 0.4/sqrt(20) = 0.089. occam -2.0 ± 0.022 against
    # -2.3: z = 0.3/0.092 = 3.3, ahead; had 0.4 been read as an s.e., z = 0.73, level.
    results = split_rows("yacht", "laplace", 20, -2.0)
    published = [["yacht", "E", "test_ll", -2.3, 0.4, "ensembles [± printed there is per-split std-dev]"]]
    text = run(tmp_path, results, published)
    assert summary_row(text, "yacht", "laplace")[5] == "1 / 0 / 0"
    pub, _ = report.read_published([str(tmp_path / "p.csv")])
    assert math.isclose(pub["yacht"]["E"]["ll"][1], 0.4 / math.sqrt(20))
    # Protein has 5 splits.
    assert report.SPLITS["protein-tertiary-structure"] == 5


def test_other_splits_are_shown_but_never_counted_and_unverified_ones_only_against_all(tmp_path):
    results = split_rows("yacht", "laplace", 20, -2.0)
    published = [["yacht", "A", "test_ll", -2.5, 0.05, "paper A"]]
    extra = [["yacht", "U", "test_ll", -1.0, 0.05, "paper U", "se", "unverified"],
             ["yacht", "D", "test_ll", -1.0, 0.05, "paper D", "sd", "different"]]
    text = run(tmp_path, results, published, extra)
    row = summary_row(text, "yacht", "laplace")
    assert row[5] == "1 / 0 / 0"      # these splits: A only
    assert row[6] == "1 / 0 / 1"      # all: A and U; D never
    assert "D (not comparable)" in text and "U (splits unverified)" in text


def test_paired_differences_are_taken_split_by_split_over_the_splits_both_have(tmp_path):
    import subprocess
    import sys
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    # B's splits share a large spread (±1) that pairing removes; A is B + 0.1 ± 0.02, and A has a
    # split B lacks, which is left out.
    write_results(a, [["yacht", k, "hetero", 1.0, (1.0 if k % 2 else -1.0) + 0.1 + (0.02 if k % 4 < 2 else -0.02),
                       0.95, 1.0, "converged"] for k in range(9)])
    write_results(b, [["yacht", k, "plain", 1.0, 1.0 if k % 2 else -1.0, 0.95, 1.0, "converged"] for k in range(8)])
    script = os.path.join(HERE, "..", "..", "bench", "uci", "paired.py")
    out = subprocess.run([sys.executable, script, "hetero", "plain", str(a), str(b)], check=True,
                         capture_output=True, text=True).stdout
    d = [0.12, 0.12, 0.08, 0.08, 0.12, 0.12, 0.08, 0.08]
    se = math.sqrt(sum((x - 0.1) ** 2 for x in d) / 7 / 8)
    assert f"| yacht | 8 | +0.100 ± {se:.3f} | 8 of 8 |" in out, out
    # One method at two commits: B's rows from their own files, where A's file has none of B's.
    write_results(b, [["yacht", k, "hetero", 1.0, 1.0 if k % 2 else -1.0, 0.95, 1.0, "converged"] for k in range(8)])
    out = subprocess.run([sys.executable, script, "hetero", "hetero", str(a), "--b-files", str(b)], check=True,
                         capture_output=True, text=True).stdout
    assert f"| yacht | 8 | +0.100 ± {se:.3f} | 8 of 8 |" in out, out


def test_each_method_row_names_the_commit_of_the_build_that_made_it(tmp_path):
    # A row read from a file names that file's build; a later file wins a row both hold, and its build
    # goes with it; rows from two builds name both; a file without a build line says so.
    old, new, bare = tmp_path / "old.csv", tmp_path / "new.csv", tmp_path / "bare.csv"
    write_results(old, split_rows("yacht", "laplace", 20, -2.0) + split_rows("yacht", "nuts", 10, -2.0))
    write_results(new, split_rows("yacht", "laplace", 20, -1.0) + split_rows("yacht", "nuts", 20, -2.0)[10:])
    write_results(bare, split_rows("yacht", "map-cv", 20, -3.0))
    head = "# occam_uci 0.1.0; commit {}; GNU 12.2.0 Release -O3 (portable build); numerics pinned\n"
    for path, commit in ((old, "9174e4e166322d7ae37efc23cc67060a91b69a3c"),
                         (new, "7fc4f80226b0f37b70314e96858eb1f40161f4ed+changes")):
        body = path.read_text().split("\n", 1)[1]
        path.write_text(head.format(commit) + body)
    bare.write_text(bare.read_text().split("\n", 1)[1])  # a file from before results recorded their build
    rows = report.read_results([str(old), str(new), str(bare)])
    agg = report.aggregate(rows)
    assert agg["yacht"]["laplace"]["builds"] == ["7fc4f80+changes"]
    assert agg["yacht"]["laplace"]["ll"][0] == -1.0
    assert agg["yacht"]["nuts"]["builds"] == ["7fc4f80+changes", "9174e4e"]
    assert agg["yacht"]["map-cv"]["builds"] == ["unrecorded"]
    text = report.tables(agg, {}, {}, {m: i for i, m in enumerate(["map-cv", "laplace", "nuts"])})
    row = [c.strip() for c in next(l for l in text.splitlines() if l.startswith("| **occam nuts**")).strip("|").split("|")]
    assert row[6] == "7fc4f80+changes, 9174e4e"


def test_each_declared_method_is_tallied_against_each_published_result_over_the_data_sets(tmp_path):
    # laplace complete on yacht and energy, incomplete on concrete; A on all three, U (splits unverified)
    # on yacht only, D (other splits) never counted.
    results = (split_rows("yacht", "laplace", 20, -2.0) + split_rows("energy", "laplace", 20, -1.0)
               + split_rows("concrete", "laplace", 12, 9.0))
    published = [["yacht", "A", "test_ll", -2.5, 0.05, "paper A"],     # ahead
                 ["energy", "A", "test_ll", -1.02, 0.05, "paper A"],   # level
                 ["concrete", "A", "test_ll", -3.0, 0.05, "paper A"]]  # laplace incomplete: not counted
    extra = [["yacht", "U", "test_ll", -1.0, 0.05, "paper U", "se", "unverified"],   # behind
             ["energy", "D", "test_ll", -9.0, 0.05, "paper D", "se", "different"]]
    text = run(tmp_path, results, published, extra)
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("| published result |"))
    end = next(i for i in range(start, len(lines)) if not lines[i].startswith("|"))
    rows = {l.split("|")[1].strip(): [c.strip() for c in l.strip("|").split("|")[1:]] for l in lines[start + 2:end]}
    declared = list(report.DECLARED)
    assert rows["A"][declared.index("laplace")] == "1 / 1 / 0"
    assert rows["U (splits unverified)"][declared.index("laplace")] == "0 / 0 / 1"
    assert rows["A"][declared.index("nuts")] == "-"
    assert not any(k.startswith("D") for k in rows)


def run_dropped(tmp_path, results, dropped):
    write_results(tmp_path / "r.csv", results)
    write_published(tmp_path / "p.csv", [["yacht", "A", "test_ll", -2.5, 0.05, "paper A"],
                                         ["energy", "A", "test_ll", -2.5, 0.05, "paper A"]])
    agg = report.aggregate(report.read_results([str(tmp_path / "r.csv")]))
    pub, sources = report.read_published([str(tmp_path / "p.csv")])
    return report.tables(agg, pub, sources, {"laplace": 0, "nuts": 1}, dropped=dropped)


def test_a_dropped_method_says_why_and_is_neither_shown_nor_counted(tmp_path):
    # nuts dropped on energy with 3 of its 20 splits run: the summary names the reason, the data set's
    # section names the method, and the tally says on how many data sets it was dropped.
    results = (split_rows("yacht", "laplace", 20, -2.0) + split_rows("energy", "laplace", 20, -2.0)
               + split_rows("energy", "nuts", 3, 0.0))
    text = run_dropped(tmp_path, results, {("energy", "nuts"): "hours here"})
    row = summary_row(text, "energy", "nuts")
    assert row[2] == "3 of 20" and row[3] == "dropped: too slow, hours here"
    assert summary_row(text, "yacht", "nuts")[3] == "not run"
    assert "**occam nuts**" not in text
    assert "Dropped, too slow to run every split on the machine the rows are made on (the summary gives the cost): " \
           "nuts." in text
    assert "- **nuts** (sampling): all splits run on 0 of 9 data sets (dropped on 1: energy);" in text
    assert "- **laplace** (the evidence framework): all splits run on 2 of 9 data sets;" in text


def test_a_dropped_entry_for_a_complete_run_is_refused_as_stale(tmp_path):
    results = split_rows("yacht", "laplace", 20, -2.0)
    try:
        run_dropped(tmp_path, results, {("yacht", "laplace"): "too slow here"})
    except ValueError as e:
        assert "remove the entry" in str(e)
    else:
        raise AssertionError("a complete run listed as dropped was accepted")


def test_the_dropped_entries_name_declared_methods_and_known_data_sets():
    for (d, m), why in report.DROPPED.items():
        assert d in report.DATASETS and m in report.DECLARED and why


def glance(tmp_path, results, published, extra=None, dropped=None):
    write_results(tmp_path / "r.csv", results)
    write_published(tmp_path / "p.csv", published)
    paths = [str(tmp_path / "p.csv")]
    if extra is not None:
        write_published(tmp_path / "e.csv", extra, extra_columns=True)
        paths.append(str(tmp_path / "e.csv"))
    pub, _ = report.read_published(paths)
    return report.glance(report.aggregate(report.read_results([str(tmp_path / "r.csv")])), pub, dropped={} if dropped is None else dropped)


def glance_row(text, dataset):
    for line in text.splitlines():
        if line.startswith(f"| {dataset} |"):
            return [c.strip() for c in line.strip("|").split("|")]
    return None


def nuts_column():
    return 2 + list(report.DECLARED).index("nuts")


def test_the_glance_table_sets_each_declared_method_against_the_best_result_on_these_splits(tmp_path):
    # laplace -2.0 ± 0.022; nuts -2.5 ± 0.022, 19 splits only; the best published on these splits is B,
    # -2.05 ± 0.05 (z = +0.9: level); C is higher but on other splits, D higher but two layers.
    results = split_rows("yacht", "laplace", 20, -2.0, coverage=0.9) + split_rows("yacht", "nuts", 19, -2.5)
    published = [["yacht", "A", "test_ll", -2.5, 0.05, "paper A"], ["yacht", "B", "test_ll", -2.05, 0.05, "paper B"],
                 ["yacht", "MCDropout_2Layers", "test_ll", 0.0, 0.05, "paper D"]]
    extra = [["yacht", "C", "test_ll", 1.0, 0.05, "paper C", "se", "unverified"]]
    row = glance_row(glance(tmp_path, results, published, extra), "yacht")
    assert row[1] == "-2.05 ± 0.05 (B)"
    assert row[2] == "-2.00 ± 0.02 ≈ · 90%"
    assert row[nuts_column()] == "19 of 20 splits run"
    # Ahead and behind by more than 2 s.e. of the difference.
    published[1][3] = -2.5
    assert glance_row(glance(tmp_path, results, published[:2], extra), "yacht")[2].endswith("↑ · 90%")
    published[1][3] = -1.5
    assert glance_row(glance(tmp_path, results, published[:2], extra), "yacht")[2].endswith("↓ · 90%")
    # A pair too slow to run says so.
    text = glance(tmp_path, results, published, dropped={("yacht", "nuts"): "hours"})
    assert glance_row(text, "yacht")[nuts_column()] == "too slow here"
