#!/usr/bin/python3
"""The evidence fit on split 0 of every UCI data set: the joint ascent, MacKay's outer loop, the online loop.

For each data set (in the order given) and each loop, one `occam fit --method laplace --hyper
evidence --evidence-loop LOOP` on the split's training rows with the protocol's network (one tanh
layer of n_hidden.txt units: 50, protein 100; every other option at its default: α = 1 in four
groups, β = 10, weights from seed 1, stream 0 — the start bench/uci_benchmark.cc gives split 0),
then `occam predict` on its test rows. The loop `online` (minibatch Adam with α, β from the
structured evidence, docs/scale.md) runs with `--hessian-structure kron`, the structure it is meant
for (it refuses the full GGN), and every other option at its default (100 epochs of 128 rows, step
size 10⁻³, burn-in 10, α and β every 5 epochs by 50 steps, no polish). Each fit runs alone, under
`nice`, with one BLAS thread and a wall-clock cap: at the cap it gets SIGTERM and, with `--on-interrupt save`, writes its report
at the state reached (termination "aborted"), so a capped row still has its gradient norms.
One JSON line per fit is appended to OUT/results.jsonl (a rerun skips the fits already there):
termination, ‖∇S‖ and the log-evidence gradient as the report gives them, ascent steps or
re-estimation rounds, MAP iterations, the fit's CPU seconds (user + system of the process, from
wait4) and wall seconds, log Z, test RMSE and mean test log-likelihood (original units), and the
load average before and after.

  /usr/bin/python3 bench/uci_split0_evidence.py [--out DIR] [--datasets a,b] [--loops joint,outer,online]
                                       [--cap SECONDS] [--cap-for NAME:LOOP=SECONDS,...]
                                       [--stop-at HH:MM] [--dry-run]
  /usr/bin/python3 bench/uci_split0_evidence.py --table DIR/results.jsonl      # the Markdown table
  OCCAM=build/occam (a portable build for published figures); OCCAM_UCI_DIR or ../shared/data/uci
"""
import argparse
import datetime
import json
import math
import os
import signal
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ORDER = ["yacht", "energy", "bostonHousing", "concrete", "wine-quality-red", "power-plant", "kin8nm",
         "naval-propulsion-plant", "protein-tertiary-structure"]
SHORT = {"bostonHousing": "Boston", "wine-quality-red": "wine", "power-plant": "power",
         "naval-propulsion-plant": "naval", "protein-tertiary-structure": "protein"}
GRACE_SECONDS = 300  # after SIGTERM, time for the fit to finish its iteration and write its report


def uci_dir():
    return os.environ.get("OCCAM_UCI_DIR", os.path.normpath(os.path.join(HERE, "..", "..", "shared", "data", "uci")))


def load_avg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def write_split(name, split, folder):
    """train.csv / test.csv of the split (raw values, occam standardises), the hidden width."""
    d = os.path.join(uci_dir(), name)
    data = np.loadtxt(os.path.join(d, "data.txt"))
    feat = np.atleast_1d(np.loadtxt(os.path.join(d, "index_features.txt"), dtype=int))
    targ = int(np.loadtxt(os.path.join(d, "index_target.txt")))
    hidden = int(np.loadtxt(os.path.join(d, "n_hidden.txt")))
    header = ",".join(["x%d" % (j + 1) for j in range(len(feat))] + ["y"])
    rows = {}
    for part in ("train", "test"):
        idx = np.atleast_1d(np.loadtxt(os.path.join(d, "index_%s_%d.txt" % (part, split)), dtype=int))
        np.savetxt(os.path.join(folder, part + ".csv"), np.column_stack([data[np.ix_(idx, feat)], data[idx, targ]]),
                   delimiter=",", header=header, comments="", fmt="%.17g")
        rows[part] = len(idx)
    return hidden, rows


def test_metrics(test_csv, pred_csv):
    y = np.genfromtxt(test_csv, delimiter=",", names=True)["y"]
    pred = np.genfromtxt(pred_csv, delimiter=",", names=True)
    r, sd = y - pred["mean"], pred["std"]
    return {"test_rmse": float(np.sqrt(np.mean(r * r))),
            "test_ll": float(np.mean(-0.5 * np.log(2.0 * math.pi * sd * sd) - r * r / (2.0 * sd * sd)))}


def run_fit(cmd, cap, log_path):
    """Runs cmd; SIGTERM at `cap` s of wall time. Returns (exit code, wall s, CPU s, capped)."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", OCCAM_PROGRESS_INTERVAL="30")
    start = time.monotonic()
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        capped = False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid != 0:
                break
            elapsed = time.monotonic() - start
            if not capped and elapsed >= cap:
                capped = True
                os.kill(proc.pid, signal.SIGTERM)
            elif capped and elapsed >= cap + GRACE_SECONDS:
                os.kill(proc.pid, signal.SIGKILL)
            time.sleep(0.05)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, time.monotonic() - start, usage.ru_utime + usage.ru_stime, capped


def record_of(report, fields):
    opt = report.get("optimality", {})
    fields.update({
        "termination": report.get("termination"),
        "message": report.get("message"),
        "gradient_norm": opt.get("gradient_norm"),
        "gradient_tolerance": opt.get("gradient_tolerance"),
        "hyper_gradient_norm": opt.get("hyper_gradient_norm"),
        "hyper_gradient_kind": opt.get("hyper_gradient_kind"),
        "hyper_gradient_tolerance": opt.get("hyper_gradient_tolerance"),
        "stopping_test": opt.get("stopping_test"),
        "hyper_steps": report.get("iterations"),
        "map_iterations": report.get("map_iterations"),
        "log_evidence": report.get("log_evidence"),
        "log_evidence_standardized": report.get("log_evidence_standardized"),
        "fit_seconds": report.get("seconds"),
        "num_params": report.get("num_params"),
        "alpha": report.get("alpha"),
        "beta": report.get("beta"),
        "gamma_total": report.get("gamma_total"),
    })
    return fields


def measure(args):
    os.makedirs(args.out, exist_ok=True)
    results = os.path.join(args.out, "results.jsonl")
    done = set()
    if os.path.exists(results):
        done = {(r["data"], r["loop"]) for r in map(json.loads, open(results)) if r.get("data")}
    caps = {}
    for item in filter(None, args.cap_for.split(",")):
        key, seconds = item.split("=")
        caps[tuple(key.split(":"))] = float(seconds)
    occam = os.environ.get("OCCAM", os.path.normpath(os.path.join(HERE, "..", "build", "occam")))
    for name in filter(None, args.datasets.split(",")):
        folder = os.path.join(args.out, name)
        os.makedirs(folder, exist_ok=True)
        hidden, rows = None, None
        for loop in filter(None, args.loops.split(",")):
            if (name, loop) in done:
                continue
            if args.stop_at and datetime.datetime.utcnow().strftime("%H:%M") >= args.stop_at:
                print("%s %s: not started, past --stop-at %s UTC" % (name, loop, args.stop_at), flush=True)
                continue
            if hidden is None:
                hidden, rows = write_split(name, args.split, folder)
            prefix = os.path.join(folder, loop)
            cmd = ["nice", "-n", str(args.nice), occam, "fit", "--data", os.path.join(folder, "train.csv"),
                   "--target", "y", "--hidden", str(hidden), "--method", "laplace", "--hyper", "evidence",
                   "--evidence-loop", loop, "--on-interrupt", "save", "--progress", "lines",
                   "--out", prefix + "_model.json", "--report", prefix + "_report.json"]
            if loop == "online":
                cmd += ["--hessian-structure", "kron"]
            cap = caps.get((name, loop), args.cap)
            print(" ".join(cmd), "  # cap %g s" % cap, flush=True)
            if args.dry_run:
                continue
            for stale in ("_model.json", "_report.json", "_pred.csv"):
                if os.path.exists(prefix + stale):
                    os.remove(prefix + stale)
            record = {"data": name, "loop": loop, "split": args.split, "hidden": hidden, "m": rows["train"],
                      "test_rows": rows["test"], "cap_s": cap, "occam": occam,
                      "started_utc": datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M:%S"),
                      "load_before": load_avg()}
            code, wall, cpu, capped = run_fit(cmd, cap, prefix + "_fit.log")
            record.update({"exit_code": code, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "capped": capped,
                           "load_after": load_avg()})
            if os.path.exists(prefix + "_report.json"):
                record_of(json.load(open(prefix + "_report.json")), record)
            if os.path.exists(prefix + "_model.json"):
                subprocess.run([occam, "predict", "--model", prefix + "_model.json", "--data",
                                os.path.join(folder, "test.csv"), "--out", prefix + "_pred.csv"],
                               check=True, stdout=subprocess.DEVNULL)
                record.update(test_metrics(os.path.join(folder, "test.csv"), prefix + "_pred.csv"))
            with open(results, "a") as f:
                f.write(json.dumps(record) + "\n")
            print("  -> %s, %.1f s CPU, %.1f s wall%s, load %s -> %s" % (
                record.get("termination", "no report (exit %d)" % code), cpu, wall,
                ", stopped at the cap" if capped else "", record["load_before"], record["load_after"]), flush=True)


def fmt(x, spec):
    return "—" if x is None else spec % x


def table(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    print("| data set | m | W | loop | termination | ‖∇S‖ (tol.) | max \\|dL/dlog θ\\| (kind) | steps | MAP iter. "
          "| CPU s | wall s | log Z | log Z std | test RMSE | test LL | load before → after |")
    print("| --- | ---: | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in rows:
        term = r.get("termination", "no report (exit %s)" % r.get("exit_code"))
        if r.get("capped"):
            term = "stopped at the cap after %.0f s (%s)" % (r["wall_s"], term)
        kind = r.get("hyper_gradient_kind") or ""
        print("| %s | %d | %s | %s | %s | %s (%s) | %s (%s) | %s | %s | %.1f | %.1f | %s | %s | %s | %s | %s → %s |" % (
            SHORT.get(r["data"], r["data"]), r["m"], r.get("num_params", "—"), r["loop"], term,
            fmt(r.get("gradient_norm"), "%.1e"), fmt(r.get("gradient_tolerance"), "%.1e"),
            fmt(r.get("hyper_gradient_norm"), "%.2g"), kind.replace("_", " "), fmt(r.get("hyper_steps"), "%d"),
            fmt(r.get("map_iterations"), "%d"), r["cpu_s"], r["wall_s"], fmt(r.get("log_evidence"), "%.2f"),
            fmt(r.get("log_evidence_standardized"), "%.2f"), fmt(r.get("test_rmse"), "%.4g"),
            fmt(r.get("test_ll"), "%.3f"), r["load_before"].split()[0], r["load_after"].split()[0]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="/tmp/occam-uci-split0", help="folder of the CSVs, reports and results.jsonl")
    ap.add_argument("--datasets", default=",".join(ORDER), help="comma-separated UCI folders, run in this order")
    ap.add_argument("--loops", default="joint,outer", help="evidence loops per data set, in this order")
    ap.add_argument("--split", type=int, default=0)
    ap.add_argument("--cap", type=float, default=1200.0, help="wall-clock seconds before SIGTERM")
    ap.add_argument("--cap-for", default="", help="per-fit caps, e.g. naval-propulsion-plant:outer=900")
    ap.add_argument("--stop-at", default="", help="UTC HH:MM after which no new fit starts")
    ap.add_argument("--nice", type=int, default=10)
    ap.add_argument("--dry-run", action="store_true", help="write the CSVs and print the commands only")
    ap.add_argument("--table", metavar="RESULTS", help="print the Markdown table of a results.jsonl and exit")
    args = ap.parse_args()
    if args.table:
        table(args.table)
    else:
        measure(args)


if __name__ == "__main__":
    sys.exit(main())
