#!/usr/bin/env python3
"""Reads occam's Google Benchmark JSON files and torch_peer.py's JSON lines from one results folder
and prints a Markdown table: both times, the ratio torch/occam per operation, and whether the two
computed the same numbers (on the Boston case, where both use the same data and the same w).

Usage: python3 bench/compare.py RESULTS_DIR
  RESULTS_DIR/occam_*.json   from evidence_bench --benchmark_out_format=json
  RESULTS_DIR/torch.jsonl    from torch_peer.py --out
"""
import glob
import json
import math
import os
import sys

# occam benchmark name -> operation key shared with torch_peer.py
OPS = {
    "BM_ValueGradient": ("value_grad", "value + gradient of log p(w, D)"),
    "BM_GgnHessian": ("ggn", "Gauss-Newton data Hessian"),
    "BM_ExactHessian": ("exact_hessian", "exact data Hessian"),
    "BM_Eigh": ("eigh", "eigendecomposition (W x W)"),
    "BM_ReestimationStep": ("reestimation_step", "Laplace + MacKay re-estimation step"),
    "BM_FitEvidence": ("fit_evidence", "complete evidence fit"),
}
ORDER = [v[0] for v in OPS.values()]
UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
# counters compared between the two (same data and same w only on the Boston case)
CHECKS = {"value_grad": ("log_p", "grad_norm"), "ggn": ("trace",), "exact_hessian": ("trace",),
          "eigh": ("lambda_max",)}


def load_occam(folder):
    results, failures = {}, []
    for path in sorted(glob.glob(os.path.join(folder, "occam_*.json"))):
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            failures.append("%s: %s" % (os.path.basename(path), e))
            continue
        for b in doc.get("benchmarks", []):
            name = b["name"]
            base = name.split("/")[0]
            if base not in OPS:
                continue
            agg = b.get("aggregate_name")
            if agg not in (None, "median"):
                continue
            if b.get("error_occurred"):
                failures.append("%s: %s" % (name, b.get("error_message")))
                continue
            op = OPS[base][0]
            m = int(b.get("m", 0))
            rec = dict(b)
            rec["wall_s"] = b["real_time"] * UNIT[b["time_unit"]]
            rec["cpu_s"] = b["cpu_time"] * UNIT[b["time_unit"]]
            rec["aggregate"] = agg or "single"
            key = (op, m)
            if key not in results or agg == "median":
                results[key] = rec
    for path in glob.glob(os.path.join(folder, "occam_*.failed")):
        with open(path) as f:
            failures.append(f.read().strip())
    return results, failures


def load_torch(folder):
    results, context = {}, None
    path = os.path.join(folder, "torch.jsonl")
    if not os.path.exists(path):
        return results, context
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            if r.get("kind") == "context":
                context = r
                continue
            op = r["op"]
            if op == "exact_hessian":
                results[("exact_hessian:" + r.get("variant", ""), r["m"])] = r
                continue
            if op == "exact_hessian_best":
                op = "exact_hessian"
            results[(op, r["m"])] = r
    return results, context


def fmt_time(s):
    if s is None or (isinstance(s, float) and math.isnan(s)):
        return "—"
    if s >= 1.0:
        return "%.3g s" % s
    if s >= 1e-3:
        return "%.3g ms" % (s * 1e3)
    return "%.3g µs" % (s * 1e6)


def agree(a, b):
    if a is None or b is None:
        return None
    return abs(a - b) <= 1e-8 * max(1.0, abs(a), abs(b))


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    folder = sys.argv[1]
    occam, failures = load_occam(folder)
    torch, context = load_torch(folder)

    sizes = sorted({m for (_, m) in occam} | {m for (op, m) in torch if ":" not in op})
    print("| operation | m | W | occam wall | occam CPU | torch wall | torch CPU | torch/occam (wall) "
          "| torch/occam (CPU) | same numbers |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    notes = []
    for op in ORDER:
        for m in sizes:
            o, t = occam.get((op, m)), torch.get((op, m))
            if o is None and t is None:
                continue
            W = int(o["W"]) if o and "W" in o else (t or {}).get("W", "")
            ow, oc = (o["wall_s"], o["cpu_s"]) if o else (None, None)
            tw, tc = (t.get("seconds"), t.get("cpu_seconds")) if t else (None, None)
            rw = "%.2f×" % (tw / ow) if ow and tw else "—"
            rc = "%.2f×" % (tc / oc) if oc and tc else "—"
            tag = ""
            if t and t.get("extrapolated"):
                tag = " (extrapolated)"
                notes.append("torch %s at m = %d: %s" % (op, m, t.get("note", "")))
            if t and t.get("variant"):
                tag += " [%s]" % t["variant"]
            check = ""
            if o and t and op in CHECKS and o.get("label", "").startswith("boston") and \
                    t.get("data", "").startswith("boston"):
                ok = [agree(o.get(c), t.get(c)) for c in CHECKS[op]]
                check = "yes" if all(ok) else "NO (" + ", ".join(
                    "%s %.10g vs %.10g" % (c, o.get(c, float("nan")), t.get(c, float("nan")))
                    for c, k in zip(CHECKS[op], ok) if not k) + ")"
            if o is None:
                failed = [f for f in failures if OPS_KEY.get(op, "") in f]
                check = (check + " " if check else "") + ("occam: failed" if failed else "occam: not run")
            print("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                op, m, W, fmt_time(ow), fmt_time(oc), fmt_time(tw) + tag, fmt_time(tc), rw, rc, check))

    # Torch's exact-Hessian variants, both shown.
    variants = sorted(k for k in torch if k[0].startswith("exact_hessian:"))
    if variants:
        print("\ntorch.autograd.functional.hessian variants:")
        for k in variants:
            r = torch[k]
            extra = (" (extrapolated from %d rows, measured %s)" % (r["measured_rows"], fmt_time(r["measured_seconds"]))
                     if r.get("extrapolated") else "")
            err = (" error: " + r["error"]) if "error" in r else ""
            print("- m = %d, %s: wall %s, CPU %s%s%s" % (k[1], k[0].split(":", 1)[1], fmt_time(r.get("seconds")),
                                                       fmt_time(r.get("cpu_seconds")), extra, err))

    fit = occam.get(("fit_evidence", 455))
    if fit:
        print("\nevidence fit at m = 455: %s, %d outer iterations, %d MAP iterations, log evidence %.6g, "
              "gamma %.4g, %.0f µs per MAP iteration" % (
                  fit.get("label", ""), fit.get("outer_iterations", 0), fit.get("map_iterations", 0),
                  fit.get("log_evidence", float("nan")), fit.get("gamma", float("nan")),
                  fit.get("us_per_map_iteration", float("nan"))))

    print("\naims:")

    def aim(text, ok, detail):
        print("- %s: %s (%s)" % (text, "MET" if ok else ("MISSED" if ok is not None else "not measured"), detail))

    def ratio(op, m, field_o, field_t):
        o, t = occam.get((op, m)), torch.get((op, m))
        if not o or not t or not t.get(field_t):
            return None
        return t[field_t] / o[field_o]

    for op, m, need, text in (("value_grad", 455, 5.0, "value+gradient >= 5x faster than PyTorch at (455,13,50)"),
                              ("exact_hessian", 455, 10.0, "exact Hessian >= 10x faster than autograd hessian at "
                                                           "(455,13,50)"),
                              ("exact_hessian", 100000, 10.0, "exact Hessian >= 10x faster at (100000,13,100)")):
        rw, rc = ratio(op, m, "wall_s", "seconds"), ratio(op, m, "cpu_s", "cpu_seconds")
        if rw is None:
            aim(text, None, "no pair of measurements")
        else:
            aim(text, rw >= need, "wall %.2fx, CPU %.2fx" % (rw, rc if rc else float("nan")))
    if fit:
        aim("complete evidence fit at (455,13,50) under 2 s on one core", fit["wall_s"] < 2.0,
            "wall %s, CPU %s" % (fmt_time(fit["wall_s"]), fmt_time(fit["cpu_s"])))
    else:
        aim("complete evidence fit at (455,13,50) under 2 s on one core", None, "not run")

    if context:
        print("\ntorch: %s (%s), %d thread(s), OPENBLAS_NUM_THREADS=%s, BLAS %s" % (
            context.get("torch"), context.get("func_module"), context.get("threads", 0),
            context.get("OPENBLAS_NUM_THREADS"), context.get("blas")))
    for n in notes:
        print("note: " + n)
    for f in failures:
        print("failure: " + f)
    return 0


OPS_KEY = {v[0]: k for k, v in OPS.items()}

if __name__ == "__main__":
    sys.exit(main())
