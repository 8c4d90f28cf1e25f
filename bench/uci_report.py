#!/usr/bin/env python3
"""Aggregates occam_uci results into the tables and figure of docs/RESULTS.md.

    python3 bench/uci_report.py results.csv [more.csv ...] \
        [--published published.csv ...] --doc docs/RESULTS.md --png docs/uci_test_ll.png

Per (dataset, method): mean and standard error over the splits run, s.e. = std (ddof=0) / sqrt(n),
as in the published code (Hernandez-Lobato & Adams 2015; Gal & Ghahramani 2016). Only methods run on
every split of a data set are shown and compared; the methods declared in DECLARED are each compared
with every published result (ahead / level / behind by MARGIN standard errors), never a best-of. The
tables
replace the text between the markers <!-- uci-tables:begin --> and <!-- uci-tables:end --> in the
document, and the one table read at a glance (glance(): per data set, each declared method against the
best published result on these splits) the text between <!-- uci-glance:begin --> and
<!-- uci-glance:end --> (everything else is left as it is); the figure is drawn with gnuplot.
Standard library only.
"""
import argparse
import csv
import math
import os
import re
import subprocess
import sys
from collections import OrderedDict, defaultdict

BEGIN, END = "<!-- uci-tables:begin -->", "<!-- uci-tables:end -->"
GLANCE_BEGIN, GLANCE_END = "<!-- uci-glance:begin -->", "<!-- uci-glance:end -->"
DATASETS = ["bostonHousing", "concrete", "energy", "kin8nm", "naval-propulsion-plant", "power-plant",
            "protein-tertiary-structure", "wine-quality-red", "yacht"]
# Splits per data set in the protocol (n_splits.txt): a method's row is compared only when it has all.
SPLITS = {"protein-tertiary-structure": 5}
# occam's methods declared, before the full run, as the ones its claims are about: one per kind of
# inference. Each is compared with every published result on its own; no best-of over methods.
DECLARED = OrderedDict([("laplace", "the evidence framework"),
                        ("laplace-committee", "a committee of Laplace fits weighted by their evidence"),
                        ("laplace-ensemble", "the committee's Laplace fits weighted equally"),
                        ("laplace-hetero", "the evidence framework with a noise level that depends on x"),
                        ("nuts", "sampling"),
                        ("mile", "sampling by microcanonical Langevin dynamics from independent MAP fits")])
# (data set, declared method) pairs dropped from the table because a full run is out of reach of the
# 2-core machine the rows are made on (a method that cannot run every split is dropped rather than
# shown on a subset). Each names its measured or estimated cost; docs/RESULTS.md, "What
# the full run needs", gives the measurements. A dropped pair whose rows are all present is an error:
# the entry is stale and must go.
DROPPED = {
    ("kin8nm", "nuts"): "some 16–39 minutes a split here, 5–13 hours for the 20 (scaled by training rows × weights "
                        "from the five data sets run)",
    ("naval-propulsion-plant", "laplace"): "hours a split here, and split 0 does not converge (docs/BENCHMARKS.md: "
                                           "`no_progress` after 3,486 s of CPU, its MAPs crawling)",
    ("naval-propulsion-plant", "laplace-committee"): "five `laplace` fits a split, hours each here",
    ("naval-propulsion-plant", "laplace-ensemble"): "five `laplace` fits a split, hours each here",
    ("naval-propulsion-plant", "laplace-hetero"): "two fits of `laplace`'s size a split, hours each here",
    ("naval-propulsion-plant", "nuts"): "some 1.5 hours a split here (estimated from energy's)",
    ("power-plant", "nuts"): "some 11–28 minutes a split here, 4–9 hours for the 20 (scaled by training rows × "
                             "weights from the five data sets run)",
    ("protein-tertiary-structure", "laplace-committee"): "five `laplace` fits a split, hours each here",
    ("protein-tertiary-structure", "laplace-ensemble"): "five `laplace` fits a split, hours each here",
    ("protein-tertiary-structure", "laplace-hetero"): "two fits of `laplace`'s size a split, hours each here",
    ("protein-tertiary-structure", "nuts"): "some 7 hours a split here (estimated from energy's)",
    ("protein-tertiary-structure", "mile"): "some 2–12 hours a split here: four MAP starts at 2 s an iteration, "
                                            "300 to 5,000 iterations each, and ~1.2 hours of gradients",
}
# "Ahead" and "behind" mean by more than this many standard errors of the difference.
MARGIN = 2.0
# Coverage of the 95% interval the aim asks for.
COVERAGE = (0.93, 0.97)
# Published results that do not follow the protocol occam runs (one hidden layer of 50 units, 100
# for protein); they are shown, but not counted in "best published".
OFF_PROTOCOL = {"MCDropout_2Layers": "two hidden layers"}
# Short labels for the figure.
SHORT = {"VI_Graves2011": "VI", "PBP": "PBP", "MCDropout_paper": "MC-drop.", "MCDropout_10xEpochs": "MC-drop. 10x",
         "MCDropout_2Layers": "MC-drop. 2 layers", "MCDropout_BayesOpt_rerun2018": "MC-drop. BO 2018",
         "MCDropout_GridSearch2018": "MC-drop. grid 2018", "DeepEnsembles_M5": "ensembles",
         "SGHMC_best_average": "SGHMC best avg.", "SGHMC_tuned_per_dataset": "SGHMC tuned",
         "SGHMC_scale_adapted": "SGHMC scale-ad.", "HMPF_ergodic_flow": "HMPF", "DVI_Wu2019": "DVI"}


def mean_se(values):
    n = len(values)
    mean = sum(values) / n
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / n)  # ddof = 0
    return mean, std / math.sqrt(n)


def build_of(header_lines):
    """The source commit a results file's first line names, shortened ("7fc4f80", "7fc4f80+changes"), or
    "unrecorded" for a file made before occam_uci recorded its build."""
    for line in header_lines:
        m = re.search(r"\bcommit ([0-9a-f]{7,40})(\+changes)?", line)
        if m:
            return m.group(1)[:7] + (m.group(2) or "")
    return "unrecorded"


def read_results(paths):
    rows = OrderedDict()
    for path in paths:
        with open(path, newline="") as f:
            lines = f.read().splitlines()
        # '#' lines: the build that made the rows (occam_uci writes one first).
        build = build_of(line for line in lines if line.startswith("#"))
        for r in csv.DictReader(line for line in lines if not line.startswith("#")):
            r["build"] = build
            rows[(r["dataset"], int(r["split"]), r["method"])] = r  # a later file wins
    return list(rows.values())


def aggregate(rows):
    """{dataset: {method: dict(n, splits, rmse, ll, cov, sec, nonconverged)}}"""
    groups = defaultdict(lambda: defaultdict(list))
    for r in rows:
        groups[r["dataset"]][r["method"]].append(r)
    out = defaultdict(OrderedDict)
    for d, methods in groups.items():
        for m, rs in methods.items():
            rs.sort(key=lambda r: int(r["split"]))
            out[d][m] = dict(
                n=len(rs),
                splits=[int(r["split"]) for r in rs],
                rmse=mean_se([float(r["rmse"]) for r in rs]),
                ll=mean_se([float(r["test_ll"]) for r in rs]),
                cov=mean_se([float(r["coverage95"]) for r in rs]),
                sec=sum(float(r["seconds"]) for r in rs) / len(rs),
                nonconverged=sum(r["termination"] != "converged" for r in rs),
                builds=sorted(set(r.get("build", "unrecorded") for r in rs)),
            )
    return out


def spread_of(source):
    """What the ± of a row of shared/data/uci/published.csv is, from what its source says."""
    if "per-split std-dev" in source:
        return "sd"
    if "not stated" in source:
        return "unknown"
    return "se"


def read_published(paths):
    """{dataset: {method: {'rmse': (m, se), 'll': (m, se), 'source': str, 'spread': str, 'splits': str}}}

    'spread' says what the printed ± was: "se" (a standard error over splits), "sd" (a per-split
    standard deviation, turned here into a standard error, s.d./√n), "unknown" (used as printed, and
    marked) or "none" (no ± was printed: the comparison uses occam's s.e. alone). 'splits' is "same"
    (these 20 splits), "unverified" (not known to be these) or "different" (known not to be: shown,
    never compared). Files without those columns (shared/data/uci/published.csv) are read from the
    source text."""
    pub = defaultdict(lambda: defaultdict(dict))
    sources = OrderedDict()
    for path in paths:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                d, source = r["dataset"], r["source"]
                entry = pub[d][r["method"]]
                spread = r.get("spread") or spread_of(source)
                mean = float(r["mean"])
                se = float(r["stderr"]) if r["stderr"] else 0.0
                splits = r.get("splits") or ("unverified" if "unverified" in source else "same")
                if spread == "sd" and splits != "different":  # over other splits or trials it means nothing here
                    se /= math.sqrt(SPLITS.get(d, 20))
                if r["metric"] == "rmse":
                    entry["rmse"] = (mean, se)
                elif r["metric"] == "test_ll":
                    entry["ll"] = (mean, se)
                elif r["metric"] == "test_nll":  # Lakshminarayanan et al. report the negative
                    entry["ll"] = (-mean, se)
                entry["source"] = source
                entry["spread"] = spread
                entry["splits"] = splits
                sources.setdefault(source, len(sources) + 1)
    return pub, sources


def splits_text(splits):
    if not splits:
        return "-"
    ranges, start, prev = [], splits[0], splits[0]
    for s in splits[1:] + [None]:
        if s is not None and s == prev + 1:
            prev = s
            continue
        ranges.append(str(start) if start == prev else f"{start}-{prev}")
        if s is not None:
            start = prev = s
    return ",".join(ranges)


def fmt(pair, digits, n=2):
    """mean ± s.e.; with one split there is no standard error to give. digits < 0: scientific."""
    spec = f".{-digits - 1}e" if digits < 0 else f".{digits}f"
    if n < 2:
        return f"{pair[0]:{spec}}"
    return f"{pair[0]:{spec}} ± {pair[1]:{spec}}"


def digits_for(value):
    a = abs(value)
    # Naval's RMSE is of order 1e-5 in its original units: scientific, 3 significant digits.
    return -3 if 0 < a < 1e-3 else 4 if a < 0.05 else 3 if a < 1 else 2


def complete(d, s):
    return s["n"] == SPLITS.get(d, 20)


def z_score(o, p):
    """(occam − published) / √(s.e.² + s.e.²); None when neither has a standard error."""
    se = math.sqrt(o[1] ** 2 + p[1] ** 2)
    return (o[0] - p[0]) / se if se > 0 else None


def verdict(z):
    return "ahead" if z > MARGIN else "behind" if z < -MARGIN else "level"


def compared(pub_d, splits):
    """The published one-hidden-layer test log-likelihoods of a data set whose splits are in `splits`."""
    return [(m, e) for m, e in pub_d.items()
            if "ll" in e and m not in OFF_PROTOCOL and e["splits"] in splits]


def tables(agg, pub, sources, method_order, dropped=None):
    dropped = DROPPED if dropped is None else dropped
    lines = []
    summary = ["| dataset | method | splits | test LL | 95% coverage | against results on these splits: "
               "ahead / level / behind | against all one-hidden-layer results: ahead / level / behind |",
               "| --- | --- | --- | --- | --- | --- | --- |"]
    tally = {m: dict(complete=0, ahead_all_same=0, calibrated=0, both=0, dropped=[]) for m in DECLARED}
    # (declared method, published result) -> the verdicts over the data sets both have, and whether the
    # result is known to use these splits on every one of them.
    versus = defaultdict(list)
    versus_unverified, versus_unreviewed = set(), set()
    for d in DATASETS:
        if d not in agg and d not in pub:
            continue
        ours = agg.get(d, {})
        shown = [m for m in sorted(ours, key=lambda m: method_order.get(m, 99)) if complete(d, ours[m])]
        left_out = [m for m in sorted(ours, key=lambda m: method_order.get(m, 99)) if m not in shown]
        declared_here = [m for m in DECLARED if m in shown]
        lines.append(f"### {d}\n")
        head = "| method | splits | test RMSE | test log-likelihood | 95% coverage | s / split | commit |"
        rule = "| --- | --- | --- | --- | --- | --- | --- |"
        for m in declared_here:
            head += f" {m} − it (s.e.) |"
            rule += " --- |"
        lines += [head, rule]
        for m in shown:
            s = ours[m]
            dr, dl = digits_for(s["rmse"][0]), 2 if abs(s["ll"][0]) >= 1 else 3
            note = f" †{s['nonconverged']}" if s["nonconverged"] else ""
            n = s["n"]
            lines.append(f"| **occam {m}** | {n}{note} | {fmt(s['rmse'], dr, n)} | {fmt(s['ll'], dl, n)} | "
                         f"{fmt(s['cov'], 2, n)} | {s['sec']:.1f} | {', '.join(s['builds'])} |"
                         + " |" * len(declared_here))
        for m, e in pub.get(d, {}).items():
            rmse = fmt(e["rmse"], digits_for(e["rmse"][0])) if "rmse" in e else "-"
            ll = "-"
            if "ll" in e:
                ll = f"{e['ll'][0]:.2f}" if e["spread"] == "none" else fmt(e["ll"], 2)
                if e["spread"] == "sd":
                    ll += " (s.d.)" if e["splits"] == "different" else " ‡"
                elif e["spread"] == "unknown":
                    ll += " ±?"
            tags = [OFF_PROTOCOL[m]] if m in OFF_PROTOCOL else []
            tags += {"unverified": ["splits unverified"], "different": ["not comparable"]}.get(e["splits"], [])
            if "anonymous" in e["source"]:
                tags.append("unreviewed source")
            tag = f" ({'; '.join(tags)})" if tags else ""
            row = f"| {m}{tag} [{sources[e['source']]}] | | {rmse} | {ll} | | | |"
            for o in declared_here:
                z = z_score(ours[o]["ll"], e["ll"]) if "ll" in e and e["splits"] != "different" else None
                row += f" {z:+.1f} |" if z is not None and m not in OFF_PROTOCOL else " |"
            lines.append(row)
        if left_out:
            lines.append("")
            lines.append("Not shown (not every split has been run, so not compared): " + ", ".join(
                f"{m} ({ours[m]['n']} of {SPLITS.get(d, 20)} splits)" for m in left_out) + ".")
        gone = [m for m in DECLARED if (d, m) in dropped and m not in shown]
        if gone:
            lines.append("")
            lines.append("Dropped, too slow to run every split on the machine the rows are made on (the summary gives "
                         "the cost): " + ", ".join(gone) + ".")
        lines.append("")
        for m in DECLARED:
            s = ours.get(m)
            if (d, m) in dropped:
                if s is not None and complete(d, s):
                    raise ValueError(f"{m} on {d} has every split but is listed in DROPPED: remove the entry")
                tally[m]["dropped"].append(d)
                summary.append(f"| {d} | {m} | {s['n'] if s else 0} of {SPLITS.get(d, 20)} | dropped: too slow, "
                               f"{dropped[(d, m)]} | | | |")
                continue
            if s is None:
                summary.append(f"| {d} | {m} | 0 of {SPLITS.get(d, 20)} | not run | | | |")
                continue
            n = s["n"]
            if not complete(d, s):
                summary.append(f"| {d} | {m} | {n} of {SPLITS.get(d, 20)} | not compared (incomplete) | | | |")
                continue
            counts = []
            for splits in (("same",), ("same", "unverified")):
                v = [verdict(z) for z in (z_score(s["ll"], e["ll"]) for _, e in compared(pub.get(d, {}), splits))
                     if z is not None]
                counts.append(v)
            same, every = counts
            for p_name, e in compared(pub.get(d, {}), ("same", "unverified")):
                z = z_score(s["ll"], e["ll"])
                if z is not None:
                    versus[(m, p_name)].append(verdict(z))
                    if e["splits"] != "same":
                        versus_unverified.add(p_name)
                    if "anonymous" in e["source"]:
                        versus_unreviewed.add(p_name)
            cov = s["cov"][0]
            t = tally[m]
            t["complete"] += 1
            ahead = bool(same) and all(v == "ahead" for v in same)
            calibrated = COVERAGE[0] <= cov <= COVERAGE[1]
            t["ahead_all_same"] += ahead
            t["calibrated"] += calibrated
            t["both"] += ahead and calibrated
            fmt_counts = lambda v: f"{v.count('ahead')} / {v.count('level')} / {v.count('behind')}"
            summary.append(f"| {d} | {m} | {n} | {fmt(s['ll'], 2, n)} | {cov:.3f} | {fmt_counts(same)} | "
                           f"{fmt_counts(every)} |")
    summary.append("")
    for m, what in DECLARED.items():
        t = tally[m]
        gone = f" (dropped on {len(t['dropped'])}: {', '.join(t['dropped'])})" if t["dropped"] else ""
        summary.append(f"- **{m}** ({what}): all splits run on {t['complete']} of {len(DATASETS)} data sets{gone}; ahead by "
                       f"more than {MARGIN:g} s.e. of every result known to use these splits on {t['ahead_all_same']} "
                       f"of them; 95% coverage in {COVERAGE[0]:.2f}–{COVERAGE[1]:.2f} on {t['calibrated']}; both on "
                       f"{t['both']}.")
    published_names = list(OrderedDict.fromkeys(p_name for (_, p_name) in versus))
    if published_names:
        summary += ["", "Each declared method against each published result, over the data sets where both have a test "
                    "log-likelihood (complete runs only): data sets ahead / level / behind.", ""]
        summary.append("| published result | " + " | ".join(DECLARED) + " |")
        summary.append("| --- |" + " --- |" * len(DECLARED))
        for p_name in published_names:
            tags = (["splits unverified"] if p_name in versus_unverified else []) + (
                ["unreviewed source"] if p_name in versus_unreviewed else [])
            tag = f" ({'; '.join(tags)})" if tags else ""
            cells = []
            for m in DECLARED:
                v = versus.get((m, p_name), [])
                cells.append(f"{v.count('ahead')} / {v.count('level')} / {v.count('behind')}" if v else "-")
            summary.append(f"| {p_name}{tag} | " + " | ".join(cells) + " |")
    refs = ["occam rows: only methods that have run every split of the data set (20; 5 for protein); †k: k of "
            "the splits stopped at the iteration budget, reported a failure or (nuts) ended with chains that "
            "disagree, R̂ > 1.01 (their rows still have their predictions); mean ± s.e. over the splits; seconds "
            "of wall-clock time per split on a shared, busy machine; commit: the source commit of the build that made "
            "the rows, from the first line of their results file (\"unrecorded\": made before results files "
            "recorded their build; several when the rows come from several builds). The columns \"m − it (s.e.)\" give, for each "
            f"declared method m, its test log-likelihood minus the published one over the standard error of the "
            f"difference, √(s.e.² + s.e.²); beyond ±{MARGIN:g} the summary counts it as ahead or behind, else level. "
            "‡: the source printed per-split standard deviations, shown here as standard errors (s.d./√n); ±?: "
            "the source does not say which it printed, used as printed; no ±: none was printed, and the "
            "difference is judged by occam's s.e. alone. \"splits unverified\": not known to use these splits "
            "(counted only against all results); \"unreviewed source\": from an anonymous submission, not a "
            "reviewed paper (counted as unverified); \"not comparable\": known to use other splits or targets "
            "(shown, never counted); two-layer results are shown, never counted.", "",
            "Sources of the published numbers (`shared/data/uci/published.csv` and `bench/uci/published_extra.csv`):",
            ""]
    for s, i in sources.items():
        refs.append(f"{i}. {s}")
    return "\n".join(summary) + "\n\n" + "\n".join(lines) + "\n" + "\n".join(refs) + "\n"


def best_published(pub_d):
    """The published result with the highest test log-likelihood among those known to use these splits
    and this protocol (one hidden layer): (name, entry), or None."""
    same = [(m, e) for m, e in compared(pub_d, ("same",)) if "ll" in e and m not in OFF_PROTOCOL]
    return max(same, key=lambda me: me[1]["ll"][0]) if same else None


def glance(agg, pub, dropped=None):
    """One table for a person in a minute: per data set, the best published test log-likelihood on
    these splits, and each declared method's test log-likelihood ± s.e., its 95% coverage and whether it
    is ahead of that best result by more than MARGIN s.e. of the difference (↑), level (≈) or behind (↓).
    Complete runs only; dropped or incomplete ones say so."""
    dropped = DROPPED if dropped is None else dropped
    head = "| data set | best published on these splits | " + " | ".join(f"occam {m}" for m in DECLARED) + " |"
    lines = [head, "| --- | --- |" + " --- |" * len(DECLARED)]
    for d in DATASETS:
        ours, best = agg.get(d, {}), best_published(pub.get(d, {}))
        cells = [d, f"{fmt(best[1]['ll'], 2)} ({SHORT.get(best[0], best[0])})" if best else "-"]
        for m in DECLARED:
            s = ours.get(m)
            if (d, m) in dropped and not (s and complete(d, s)):
                cells.append("too slow here")
            elif s is None or not complete(d, s):
                cells.append(f"{s['n'] if s else 0} of {SPLITS.get(d, 20)} splits run")
            else:
                z = z_score(s["ll"], best[1]["ll"]) if best else None
                mark = {"ahead": " ↑", "level": " ≈", "behind": " ↓"}[verdict(z)] if z is not None else ""
                cells.append(f"{fmt(s['ll'], 2, s['n'])}{mark} · {100 * s['cov'][0]:.0f}%")
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"Test log-likelihood (nats, higher is better), mean ± s.e. over the splits, then the 95% interval's "
              f"coverage of the test targets (aim: {100 * COVERAGE[0]:.0f}–{100 * COVERAGE[1]:.0f}%). ↑ / ≈ / ↓: "
              f"ahead of / level with / behind the best published result on these splits by more than {MARGIN:g} "
              "standard errors of the difference. Only methods run on every split are shown; \"too slow here\": not "
              "run on every split on the 2-core machine the rows are made on (\"Claims\" below gives the cost)."]
    return "\n".join(lines) + "\n"


def replace_between(doc, begin, end, text, path):
    if begin not in doc or end not in doc:
        sys.exit(f"{path}: no {begin} ... {end} section to replace")
    start, stop = doc.index(begin) + len(begin), doc.index(end)
    return doc[:start] + "\n" + text + doc[stop:]


def plot(agg, pub, png, method_order):
    """A 3x3 grid: test log-likelihood with ±1 s.e. bars, occam's methods (blue) beside the published ones (grey)."""
    script = ["set terminal pngcairo size 1500,1350 font ',9'", f"set output '{png}'",
              "set multiplot layout 3,3 title 'UCI regression: test log-likelihood, mean ± s.e. over splits (higher is better); occam (methods run on every split) in blue, published in grey'",
              "set termoption noenhanced", "set xtics rotate by 40 right", "set grid ytics", "unset key", "set bmargin 7"]
    for d in DATASETS:
        ours = agg.get(d, {})
        entries = [(f"occam {m}", ours[m]["ll"], 1) for m in sorted(ours, key=lambda m: method_order.get(m, 99))
                   if complete(d, ours[m])]
        entries += [(SHORT.get(m, m), e["ll"], 2) for m, e in pub.get(d, {}).items()
                    if "ll" in e and e["splits"] != "different"]
        if not entries:
            continue
        lows = [e[1][0] - e[1][1] for e in entries]
        highs = [e[1][0] + e[1][1] for e in entries]
        # Keep the panel readable: a far-off published value (e.g. SGHMC's -13 on yacht) is clipped.
        top = max(highs)
        bottom = max(min(lows), top - 3.0)
        pad = 0.08 * (top - bottom + 1e-9)
        clipped = sum(1 for e in entries if e[1][0] < bottom - pad)
        script.append(f"set title '{d}" + (f" ({clipped} below the axis, over 3 nats under the top)" if clipped else "") + "'")
        script.append(f"set xrange [0.3:{len(entries) + 0.7}]")
        script.append(f"set yrange [{bottom - pad}:{top + pad}]")
        for kind, colour in ((1, "#1f5fbf"), (2, "#808080")):
            block = [f"{i + 1} {e[1][0]} {e[1][1]} \"{e[0]}\"" for i, e in enumerate(entries) if e[2] == kind]
            script.append(f"$d{kind} << EOD\n" + ("\n".join(block) if block else "-1 0 0 \"\"") + "\nEOD")
        xt = ", ".join(f"\"{e[0]}\" {i + 1}" for i, e in enumerate(entries))
        script.append(f"set xtics ({xt})")
        script.append("plot $d1 using 1:2:3 with yerrorbars pt 7 ps 1.2 lc rgb '#1f5fbf', "
                      "$d2 using 1:2:3 with yerrorbars pt 5 ps 0.9 lc rgb '#808080'")
    script.append("unset multiplot")
    subprocess.run(["gnuplot"], input="\n".join(script), text=True, check=True)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+", help="occam_uci results CSV files (a later file wins on the same row)")
    ap.add_argument("--published", action="append",
                    help="published results CSV (repeatable; default: ../shared/data/uci/published.csv beside the "
                         "source tree and bench/uci/published_extra.csv)")
    ap.add_argument("--doc", default=os.path.join(here, "..", "docs", "RESULTS.md"),
                    help="markdown file whose tables section is replaced (printed to stdout when '-')")
    ap.add_argument("--png", default=os.path.join(here, "..", "docs", "uci_test_ll.png"), help="figure ('' for none)")
    args = ap.parse_args()

    rows = read_results(args.results)
    agg = aggregate(rows)
    published = args.published or [
        os.path.normpath(os.path.join(here, "..", "..", "shared", "data", "uci", "published.csv")),
        os.path.join(here, "uci", "published_extra.csv")]
    pub, sources = read_published(published)
    # The registry's order (bench/uci/uci_methods.cc), then any other method in the order first seen.
    known = ["map-cv", "laplace", "laplace-committee", "laplace-ensemble", "laplace-hetero", "laplace-hetero-refit",
             "laplace-integrate", "vi-meanfield", "nuts", "mile"]
    method_order = {m: i for i, m in enumerate(OrderedDict.fromkeys(known + [r["method"] for r in rows]))}
    text = tables(agg, pub, sources, method_order)
    if args.doc == "-":
        sys.stdout.write(text)
    else:
        with open(args.doc) as f:
            doc = f.read()
        new = replace_between(doc, BEGIN, END, text, args.doc)
        if GLANCE_BEGIN in new:
            new = replace_between(new, GLANCE_BEGIN, GLANCE_END, glance(agg, pub), args.doc)
        tmp = args.doc + ".tmp"
        with open(tmp, "w") as f:
            f.write(new)
        os.replace(tmp, args.doc)
    if args.png:
        plot(agg, pub, args.png, method_order)


if __name__ == "__main__":
    main()
