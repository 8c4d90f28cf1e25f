#!/usr/bin/python3
"""Tabulates bench/microcanonical_bench.sh's runs: per case (hidden units, hyperparameters) and
sampler, the CPU seconds of the whole process (user + system, /usr/bin/time), gradients (chains.csv,
warm-up and MAP starts' evaluations included as the sampler counts them), gradients per kept draw,
the bulk ESS of lp__ and the minimum bulk ESS over the monitored predictions f.k (summary.csv, R's
posterior package's estimators), each per CPU second, and each sampler's ESS per second over NUTS's
in the same case. Writes OUT/results.csv and prints a Markdown table.

    python3 bench/microcanonical_report.py OUT_DIR
"""
import csv
import os
import sys


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(l for l in f if not l.startswith("#")))


def main():
    out = sys.argv[1]
    rows = []
    for case in sorted(os.listdir(out)):
        case_dir = os.path.join(out, case)
        if not os.path.isdir(case_dir) or "_" not in case or case == "toy-source":
            continue
        hidden, hyper = case.split("_", 1)
        for method in ("nuts", "mclmc", "mams"):
            run = os.path.join(case_dir, method, "run")
            if not os.path.exists(os.path.join(run, "summary.csv")):
                continue
            wall, user, system = (float(v) for v in open(os.path.join(case_dir, method, "time.txt")).read().split()[-3:])
            summary = {r["variable"]: r for r in read_csv(os.path.join(run, "summary.csv"))}
            chains = read_csv(os.path.join(run, "chains.csv"))
            gradients = sum(int(c["gradients"]) for c in chains)
            draws = sum(int(c["draws"]) for c in chains)
            f_ess = [float(r["ess_bulk"]) for name, r in summary.items() if name.startswith("f.")]
            cpu = user + system
            rows.append({"hidden": int(hidden), "hyper": hyper, "method": method, "cpu_seconds": cpu,
                         "wall_seconds": wall, "gradients": gradients, "gradients_per_draw": gradients / max(draws, 1),
                         "ess_lp": float(summary["lp__"]["ess_bulk"]), "min_ess_f": min(f_ess),
                         "max_rhat_f": max(float(r["rhat"]) for name, r in summary.items() if name.startswith("f.")),
                         "step_size": sum(float(c["step_size"]) for c in chains) / len(chains)})
    for r in rows:
        r["ess_lp_per_s"] = r["ess_lp"] / r["cpu_seconds"]
        r["min_ess_f_per_s"] = r["min_ess_f"] / r["cpu_seconds"]
        nuts = [n for n in rows if n["hidden"] == r["hidden"] and n["hyper"] == r["hyper"] and n["method"] == "nuts"]
        r["lp_vs_nuts"] = r["ess_lp_per_s"] / nuts[0]["ess_lp_per_s"] if nuts else float("nan")
        r["f_vs_nuts"] = r["min_ess_f_per_s"] / nuts[0]["min_ess_f_per_s"] if nuts else float("nan")
    rows.sort(key=lambda r: (r["hidden"], r["hyper"], ("nuts", "mclmc", "mams").index(r["method"])))
    if rows:
        with open(os.path.join(out, "results.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    print("| H | hyper | sampler | CPU s | gradients | grad./draw | ESS lp__ | per s | min ESS f | per s | "
          "max R̂ f | lp__ vs NUTS | f vs NUTS |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['hidden']} | {r['hyper']} | {r['method']} | {r['cpu_seconds']:.0f} | {r['gradients'] / 1e6:.2f} M | "
              f"{r['gradients_per_draw']:.0f} | {r['ess_lp']:.0f} | {r['ess_lp_per_s']:.2f} | {r['min_ess_f']:.0f} | "
              f"{r['min_ess_f_per_s']:.2f} | {r['max_rhat_f']:.3f} | {r['lp_vs_nuts']:.2f}× | {r['f_vs_nuts']:.2f}× |")


if __name__ == "__main__":
    main()
