#!/usr/bin/python3
"""The PyTorch peer of bench/evidence_bench.cc: the same work, timed the same way.

A one-hidden-layer tanh MLP (13-H-1) written functionally over one flat float64 parameter
vector laid out as occam's Mlp lays it out (W1 column-major, b1, W2, b2), so that every
operation is the same computation as occam's:

  value_grad     S(w) = sum_g alpha_g E_W,g + beta E_D and its gradient (autograd backward)
  ggn            the Gauss-Newton data Hessian beta J^T J, J the per-example Jacobian from
                 vmap(jacrev(f)) (torch.func, or functorch on torch < 2.0), in blocks of 2048 rows
  exact_hessian  the exact data Hessian beta nabla^2 E_D by torch.autograd.functional.hessian,
                 with vectorize=False and vectorize=True (the faster is the one compared), summed
                 over row blocks (one block at m = 455)
  eigh           torch.linalg.eigh of the W x W GGN matrix

at (m, D, H) = (455, 13, 50) (Boston split 0, standardised as in evidence_bench.cc) and
(100000, 13, 100) (synthetic: X ~ N(0,1), y = tanh(x1+x2) + tanh(x3-2x4)/2 + tanh(x5)/4 + 0.1 eps,
numpy's generator, so not the same numbers as occam's Rng but the same shape and law).
The point w_i = 0.2 sin(0.37 i + 0.1), alpha = (0.5, 1, 2, 4), beta = 10 are those of the C++
benchmark; log_p (normalising constants included) lets compare.py check both compute the same.

One thread (torch.set_num_threads(1), OPENBLAS_NUM_THREADS=1): occam is single-threaded.
Timing: one warm-up call, then the median of repeats within a time budget, both wall-clock
(time.perf_counter) and process CPU time (time.process_time); calls under 10 ms are timed in
batches of about 0.1 s (a repeat is a batch's mean), as Google Benchmark times occam. The exact
Hessian at m = 100000 is run once, on all rows when its estimate is under --hessian-cap seconds;
otherwise it is timed on a row subset and reported as an extrapolation, flagged so.
Output: one JSON object per line, on stdout and appended to --out when given.

Usage: /usr/bin/python3 bench/torch_peer.py [--out FILE] [--sizes small,large] [--budget SECONDS]
                                            [--hessian-cap SECONDS] [--ops value_grad,ggn,exact_hessian,eigh]
"""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

try:  # torch >= 2.0
    from torch.func import jacrev, vmap  # noqa: E402
    FUNC_MODULE = "torch.func"
except ImportError:  # torch 1.13 (Debian 12) ships the same API as functorch
    from functorch import jacrev, vmap  # noqa: E402
    FUNC_MODULE = "functorch"

torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)

D = 13
BETA = 10.0
ALPHA = (0.5, 1.0, 2.0, 4.0)  # input weights, hidden biases, output weights, output biases
BLOCK_ROWS = 2048  # rows per Jacobian block, as occam's Posterior::data_hessian
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def uci_dir():
    return os.environ.get("OCCAM_UCI_DIR") or os.path.join(REPO, "..", "shared", "data", "uci")


def synthetic(m, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, D))
    y = (np.tanh(X[:, 0] + X[:, 1]) + 0.5 * np.tanh(X[:, 2] - 2.0 * X[:, 3]) + 0.25 * np.tanh(X[:, 4])
         + 0.1 * rng.standard_normal(m))
    return X, y[:, None], "synthetic"


def boston_or_synthetic(m):
    d = os.path.join(uci_dir(), "bostonHousing")
    try:
        data = np.loadtxt(os.path.join(d, "data.txt"))
        feat = np.loadtxt(os.path.join(d, "index_features.txt"), dtype=int)
        targ = int(np.loadtxt(os.path.join(d, "index_target.txt")))
        train = np.loadtxt(os.path.join(d, "index_train_0.txt"), dtype=int)[:m]
    except OSError:
        X, y, _ = synthetic(m, 455)
        return X, y, "synthetic (no %s)" % d
    X = data[np.ix_(train, feat)]
    y = data[train, targ][:, None]

    def standardise(a):
        sd = a.std(axis=0)
        sd[sd == 0] = 1.0
        return (a - a.mean(axis=0)) / sd

    return standardise(X), standardise(y), "boston split 0"


class Problem:
    def __init__(self, m, H):
        if m == 455:
            X, y, self.source = boston_or_synthetic(m)
        else:
            X, y, self.source = synthetic(m, 100000)
        self.m, self.H = m, H
        self.X = torch.from_numpy(np.ascontiguousarray(X))
        self.y = torch.from_numpy(np.ascontiguousarray(y))
        self.sizes = (H * D, H, H, 1)
        self.W = sum(self.sizes)
        i = torch.arange(self.W, dtype=torch.float64)
        self.w = 0.2 * torch.sin(0.37 * i + 0.1)
        self.alpha_vec = torch.cat([torch.full((s,), a) for s, a in zip(self.sizes, ALPHA)])

    def unpack(self, w):
        H = self.H
        W1t = w[: H * D].reshape(D, H)  # occam's W1 is H x D column-major: its transpose row-major
        b1 = w[H * D: H * D + H]
        W2 = w[H * D + H: H * D + 2 * H]
        b2 = w[H * D + 2 * H:]
        return W1t, b1, W2, b2

    def forward(self, w, X):
        W1t, b1, W2, b2 = self.unpack(w)
        return torch.tanh(X @ W1t + b1) @ W2[:, None] + b2  # m x 1

    def forward_single(self, w, x):
        W1t, b1, W2, b2 = self.unpack(w)
        return torch.tanh(x @ W1t + b1) @ W2 + b2[0]  # scalar

    def data_energy(self, w, X=None, y=None):
        X = self.X if X is None else X
        y = self.y if y is None else y
        r = self.forward(w, X) - y
        return 0.5 * (r * r).sum()

    def S(self, w):
        # S(w) = sum_g alpha_g E_W,g + beta E_D (MacKay 1992a)
        return 0.5 * (self.alpha_vec * w * w).sum() + BETA * self.data_energy(w)

    def log_p(self, w):
        """-S plus occam's normalising constants: log p(D|w,beta) + log p(w|alpha)."""
        const = 0.5 * self.m * math.log(BETA / (2 * math.pi))
        const += sum(0.5 * s * math.log(a / (2 * math.pi)) for s, a in zip(self.sizes, ALPHA))
        return const - self.S(w).item()

    # --- the operations -------------------------------------------------------------------
    def value_grad(self):
        w = self.w.detach().requires_grad_(True)
        s = self.S(w)
        (g,) = torch.autograd.grad(s, w)
        return s.detach(), g

    def ggn(self):
        jac = vmap(jacrev(self.forward_single, argnums=0), in_dims=(None, 0))
        Hm = torch.zeros(self.W, self.W)
        for start in range(0, self.m, BLOCK_ROWS):
            J = jac(self.w, self.X[start:start + BLOCK_ROWS])  # rows x W
            Hm.addmm_(J.T, J)
        return BETA * Hm

    def hessian_block_rows(self, vectorize):
        # The Hessian is summed over row blocks, as occam's Posterior::data_hessian does (2048 rows):
        # at m = 100000 one call on all rows makes each of the W backward passes stream 100000 x H
        # intermediates through memory, and its cost grows faster than m (docs/BENCHMARKS.md).
        # vectorize=True pushes all W vector-Jacobian products through at once, so its
        # intermediates hold about 4 W rows H doubles: its blocks keep this near 1 GB (one block
        # at m = 455; ~200 rows at m = 100000). At m = 455 both are a single call on all rows.
        if not vectorize:
            return min(self.m, BLOCK_ROWS)
        return max(1, min(self.m, int(1.0e9 / (8.0 * self.W * self.H * 4))))

    def exact_hessian(self, vectorize, rows=None):
        rows = self.m if rows is None else rows
        block = self.hessian_block_rows(vectorize)
        Hm = None
        for start in range(0, rows, block):
            X = self.X[start:min(rows, start + block)]
            y = self.y[start:min(rows, start + block)]
            Hb = torch.autograd.functional.hessian(lambda w: BETA * self.data_energy(w, X, y), self.w,
                                                   vectorize=vectorize)
            Hm = Hb if Hm is None else Hm.add_(Hb)
        return Hm


def timed(fn, budget, max_repeats=1000, warmup=True):
    """One warm-up call, then the median of repeats, in wall-clock time (time.perf_counter) and in
    process CPU time (time.process_time): repeats until `budget` seconds are spent and at least three
    were made (one or two when a single call takes longer than 5-10 budgets).

    Calls shorter than 10 ms are timed in batches (one repeat = the mean of a batch of calls lasting
    about 0.1 s), as Google Benchmark times occam: the median of single calls would leave out the
    calls that a busy machine pre-empted, while the mean over a batch keeps them, and the two sides
    must be timed alike. On a loaded machine the CPU time is the steadier of the two."""
    first = None
    batch = 1
    if warmup:
        t0 = time.perf_counter()
        out = fn()
        first = time.perf_counter() - t0
        if first < 0.01:
            t0 = time.perf_counter()
            out = fn()  # a second call: the first may include one-off set-up
            batch = max(1, min(1000, int(0.1 / max(time.perf_counter() - t0, 1e-7))))
    wall, cpu = [], []
    while True:
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(batch):
            out = fn()
        wall.append((time.perf_counter() - t0) / batch)
        cpu.append((time.process_time() - c0) / batch)
        total = sum(wall) * batch
        if len(wall) >= max_repeats or (total >= budget and (len(wall) >= 3 or total >= 10 * budget)):
            break
    return out, {"seconds": statistics.median(wall), "cpu_seconds": statistics.median(cpu),
                 "min_seconds": min(wall), "repeats": len(wall), "calls_per_repeat": batch,
                 "warmup_seconds": first}


def emit(record, out):
    line = json.dumps(record, sort_keys=True)
    print(line, flush=True)
    if out:
        with open(out, "a") as f:
            f.write(line + "\n")


def blas_name():
    try:
        with open("/proc/self/maps") as f:
            libs = {ln.split()[-1] for ln in f if "blas" in ln or "lapack" in ln}
        return ";".join(sorted(os.path.realpath(p) for p in libs if p.startswith("/")))
    except OSError:
        return "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="append JSON lines to this file")
    ap.add_argument("--sizes", default="small,large", help="small (455,13,50), large (100000,13,100)")
    ap.add_argument("--ops", default="value_grad,ggn,exact_hessian,eigh", help="operations to run")
    ap.add_argument("--budget", type=float, default=2.0, help="seconds of repeats per operation")
    ap.add_argument("--hessian-cap", type=float, default=300.0,
                    help="run an exact Hessian on all rows only when its estimate is below this many seconds; "
                         "otherwise time it on a row subset and report the linear extrapolation as such")
    args = ap.parse_args()

    emit({"kind": "context", "torch": torch.__version__, "func_module": FUNC_MODULE, "numpy": np.__version__,
          "python": platform.python_version(), "threads": torch.get_num_threads(),
          "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS"), "blas": blas_name()}, args.out)

    sizes = {"small": (455, 50), "large": (100000, 100)}
    for name in args.sizes.split(","):
        m, H = sizes[name]
        p = Problem(m, H)
        base = {"kind": "result", "impl": "torch", "m": m, "D": D, "H": H, "W": p.W, "data": p.source}

        ops = set(args.ops.split(","))
        if "value_grad" in ops:
            (s, g), t = timed(p.value_grad, args.budget)
            emit({**base, "op": "value_grad", **t, "log_p": p.log_p(p.w), "grad_norm": g.norm().item()}, args.out)

        G = None
        if "ggn" in ops:
            G, t = timed(p.ggn, args.budget, max_repeats=50)
            emit({**base, "op": "ggn", **t, "trace": G.trace().item()}, args.out)

        # The exact Hessian, both ways. Its cost is linear in m at fixed W: probe on a few rows
        # first, and beyond --hessian-cap time it on a subset only (never reported as measured
        # on all rows).
        best = None
        for vectorize in ((False, True) if "exact_hessian" in ops else ()):
            variant = "vectorize=%s" % vectorize
            # Whole blocks are identical calls, so the cost is linear in the number of blocks: the
            # probe times whole blocks (at least 455 rows) and the estimate scales it to all rows.
            block = p.hessian_block_rows(vectorize)
            probe_rows = min(m, block * max(1, -(-455 // block)))
            try:
                t0 = time.perf_counter()
                p.exact_hessian(vectorize, rows=probe_rows)
                probe = time.perf_counter() - t0
                estimate = probe * m / probe_rows
                if estimate <= args.hessian_cap:
                    Hx, t = timed(lambda: p.exact_hessian(vectorize), args.budget, max_repeats=20,
                                  warmup=estimate < 10.0)
                    rec = {**base, "op": "exact_hessian", "variant": variant, **t, "trace": Hx.trace().item()}
                else:
                    rows = max(probe_rows, int(m * args.hessian_cap / 8.0 / estimate) // block * block)
                    Hx, t = timed(lambda: p.exact_hessian(vectorize, rows=rows), args.budget, max_repeats=5,
                                  warmup=False)
                    rec = {**base, "op": "exact_hessian", "variant": variant, "measured_rows": rows,
                           "measured_seconds": t["seconds"], "repeats": t["repeats"],
                           "seconds": t["seconds"] * m / rows, "cpu_seconds": t["cpu_seconds"] * m / rows,
                           "extrapolated": True,
                           "note": "not run on all %d rows (estimated %.0f s > --hessian-cap %.0f s): timed on the "
                                   "first %d rows (%d blocks of %d), seconds = measured x m/rows"
                                   % (m, estimate, args.hessian_cap, rows, rows // block, block)}
            except RuntimeError as e:  # e.g. out of memory
                rec = {**base, "op": "exact_hessian", "variant": variant, "error": str(e)[:200]}
            emit(rec, args.out)
            # The faster variant, by CPU time (steadier than wall time on a shared machine); a
            # variant measured on all rows beats an extrapolated one.
            if "seconds" in rec:
                rank = (bool(rec.get("extrapolated")), rec["cpu_seconds"])
                if best is None or rank < (bool(best.get("extrapolated")), best["cpu_seconds"]):
                    best = rec
        if best is not None:
            emit({**best, "op": "exact_hessian_best"}, args.out)

        if "eigh" in ops:
            G = p.ggn() if G is None else G
            (evals, _), t = timed(lambda: torch.linalg.eigh(G), args.budget, max_repeats=50)
            emit({**base, "op": "eigh", **t, "lambda_max": evals[-1].item()}, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
