#!/usr/bin/python3
"""The PyTorch peer of `occam fit --method laplace --hyper evidence`: the whole evidence job.

The job: a 13-H-1 tanh network (H = 50, W = 751) on a UCI split (Boston split 0 by default),
inputs and target standardised as occam standardises them (training mean and population standard
deviation, a constant column scaled by 1; src/model/data.cc, location_scale), a Gaussian likelihood of
precision beta, and occam's four default prior groups (Mlp::default_groups: input weights, hidden
biases, output weights, output bias), each with its own alpha. Parameters are one flat float64
vector laid out as occam's Mlp lays it out (W1 column-major, b1, W2, b2; bench/torch_peer.py).
One thread (torch.set_num_threads(1), OPENBLAS_NUM_THREADS=1), as occam runs.

Two ways to set alpha and beta:

  mackay        MacKay's outer loop (MacKay 1992a, eqs. 4.9-4.11; 1992b, eq. 5.1): the MAP by
                torch.optim.LBFGS (strong Wolfe, memory 10) to occam's stopping rule
                (||grad S|| <= 1e-6 max(1, ||w||), or S changing by <= 1e-9 max(1, |S|) over 10
                iterations; include/occam/map.h), warm-started; the Gauss-Newton Hessian
                beta J^T J with J from vmap(jacrev(f)) (torch.func, or functorch on torch 1.13);
                gamma_g = W_g - alpha_g tr_g(A^-1); alpha_g <- gamma_g / 2E_W,g,
                beta <- (m - gamma) / 2E_D. Stopping rule (--rule): 'gradient' (the default) stops
                when every component of the log-evidence gradient in log theta is at most --grad-tol
                in absolute value (d log Z / d log alpha_g = gamma_g/2 - alpha_g E_W,g,
                d log Z / d log beta = (m - gamma)/2 - beta E_D); 'evidence-change' is occam's rule
                at the time of writing (|change of log Z| <= 1e-6 max(1, |log Z|)). The loop is
                plain: no round is undone. Capped at --mackay-seconds of wall time.
  laplace-torch laplace-torch's recipe (Immer et al. 2021; laplace-torch's post-hoc marginal-
                likelihood tuning): the MAP by full-batch Adam at the starting alpha, beta, then
                Adam on (log alpha_g, log beta) of the Laplace marginal likelihood (full GGN) at that
                fixed w, with gradients by autograd through the Cholesky factor.

Both start from alpha = 1 and beta = 10 (occam's defaults) and weights drawn as occam draws them
(N(0, 1/fan_in) weights, zero biases; not the same numbers, occam has its own generator).
A = beta J^T J + diag(alpha) is factorised by Cholesky: log|A| from the factor's diagonal and
diag(A^-1) from the factor, which the per-group gamma needs (an eigendecomposition of the GGN gives
log|A| and gamma only for a single alpha).

The log-evidence is occam's (src/inference/laplace/laplace.cc, log_evidence; MacKay 1992a, eq. 10):
  log Z = m/2 log(beta/2pi) - beta E_D + sum_g [W_g/2 log(alpha_g/2pi) - alpha_g E_W,g]
          + W/2 log 2pi - 1/2 log|A|
in standardised units ("log_evidence_standardized" in occam's report) and, as occam reports it,
as a density of the original targets: log Z - m log(y_scale). Neither includes the hidden-unit
symmetry term. `--occam-model model.json` evaluates this formula at occam's own fitted w, alpha,
beta (the model file of `occam fit --out`) and prints it beside the value occam reported, so that
both sides are seen to compute the same quantity.

Predictions use the linearised (GGN) predictive, as `occam predict` does: mean f(x; w),
variance g^T A^-1 g + 1/beta, mapped to the original units; test RMSE and the mean test
log-likelihood of a Gaussian with that mean and variance.

Output: one JSON object per line, on stdout and appended to --out when given.

Usage: /usr/bin/python3 bench/evidence_job_peer.py [--variants mackay,laplace-torch] [--out FILE]
           [--occam-model model.json [--occam-predictions pred.csv] [--occam-seconds WALL CPU]]
       /usr/bin/python3 bench/evidence_job_peer.py --table FILE   (the comparison table of a run)
"""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

# Shared with the kernel peer: torch.func/functorch, the data folder, JSON-lines output; importing
# it also sets one thread and float64.
from torch_peer import FUNC_MODULE, blas_name, emit, jacrev, uci_dir, vmap  # noqa: E402

torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)

LOG_2PI = math.log(2.0 * math.pi)
MIN_HYPER, MAX_HYPER = 1e-10, 1e10  # occam's clamp on alpha and beta (src/inference/evidence/evidence.cc)
ALPHA_START, BETA_START = 1.0, 10.0  # occam fit's defaults (apps/occam/fitting.h)


# --- data -----------------------------------------------------------------------------------
def location_scale(a):
    """occam's Standardizer: the mean and population sd per column; sd 1 for a constant column."""
    mean = a.mean(axis=0)
    sd = np.sqrt(((a - mean) ** 2).mean(axis=0))
    floor = 1e-12 * np.maximum(1.0, np.abs(mean))
    return mean, np.where(np.isfinite(sd) & (sd > floor), sd, 1.0)


class Split:
    def __init__(self, name, split):
        d = os.path.join(uci_dir(), name)
        data = np.loadtxt(os.path.join(d, "data.txt"))
        feat = np.atleast_1d(np.loadtxt(os.path.join(d, "index_features.txt"), dtype=int))
        targ = int(np.loadtxt(os.path.join(d, "index_target.txt")))
        train = np.loadtxt(os.path.join(d, "index_train_%d.txt" % split), dtype=int)
        test = np.loadtxt(os.path.join(d, "index_test_%d.txt" % split), dtype=int)
        self.name = "%s split %d" % (name, split)
        self.X_raw, self.y_raw = data[np.ix_(train, feat)], data[train, targ]
        self.X_test_raw, self.y_test = data[np.ix_(test, feat)], data[test, targ]
        self.x_mean, self.x_scale = location_scale(self.X_raw)
        self.y_mean, self.y_scale = location_scale(self.y_raw[:, None])
        self.y_mean, self.y_scale = float(self.y_mean[0]), float(self.y_scale[0])
        self.X = torch.from_numpy((self.X_raw - self.x_mean) / self.x_scale)
        self.y = torch.from_numpy((self.y_raw - self.y_mean) / self.y_scale)
        self.X_test = torch.from_numpy((self.X_test_raw - self.x_mean) / self.x_scale)
        self.m, self.D = self.X.shape

    def write_csv(self, folder):
        """train.csv and test.csv for `occam fit` / `occam predict` (floats written to round-trip)."""
        header = ",".join(["x%d" % (j + 1) for j in range(self.D)] + ["y"])
        for file, X, y in (("train.csv", self.X_raw, self.y_raw), ("test.csv", self.X_test_raw, self.y_test)):
            with open(os.path.join(folder, file), "w") as f:
                f.write(header + "\n")
                for row, target in zip(X, y):
                    f.write(",".join(repr(float(v)) for v in row) + "," + repr(float(target)) + "\n")


# --- the network and its prior groups -------------------------------------------------------
class TanhNet:
    def __init__(self, D, H):
        self.D, self.H = D, H
        self.group_names = ["input_weights", "hidden_biases", "output_weights", "output_biases"]
        self.group_sizes = [H * D, H, H, 1]
        self.W = sum(self.group_sizes)
        self.group_of = torch.cat([torch.full((s,), g, dtype=torch.long) for g, s in enumerate(self.group_sizes)])
        self.sizes = torch.tensor(self.group_sizes, dtype=torch.float64)
        self.jac = vmap(jacrev(self.forward_single, argnums=0), in_dims=(None, 0))

    def unpack(self, w):
        H, D = self.H, self.D
        W1t = w[: H * D].reshape(D, H)  # occam's W1 is H x D column-major: its transpose row-major
        return W1t, w[H * D: H * D + H], w[H * D + H: H * D + 2 * H], w[H * D + 2 * H:]

    def forward(self, w, X):
        W1t, b1, W2, b2 = self.unpack(w)
        return torch.tanh(X @ W1t + b1) @ W2 + b2[0]

    def forward_single(self, w, x):
        W1t, b1, W2, b2 = self.unpack(w)
        return torch.tanh(x @ W1t + b1) @ W2 + b2[0]

    def jacobian(self, w, X):
        return self.jac(w, X)  # rows x W

    def initial_weights(self, seed):
        """occam's law (Mlp::initial_params): weights N(0, 1/fan_in), biases zero."""
        g = torch.Generator().manual_seed(seed)
        w = torch.zeros(self.W)
        H, D = self.H, self.D
        w[: H * D] = torch.randn(H * D, generator=g) / math.sqrt(D)
        w[H * D + H: H * D + 2 * H] = torch.randn(H, generator=g) / math.sqrt(H)
        return w

    def energies(self, w):
        """E_W,g = 1/2 sum of w_i^2 over group g."""
        return torch.zeros(len(self.group_sizes)).index_add_(0, self.group_of, 0.5 * w * w)


# --- occam's log-evidence and its gradient in log theta --------------------------------------
def log_evidence_from_parts(net, m, E_D, E_W, log_det_A, alpha, beta):
    """MacKay 1992a, eq. 10, with occam's normalising constants (src/inference/laplace/laplace.cc,
    src/model/likelihood.cc, src/model/prior.cc); the prior's -W/2 log 2pi cancels the Laplace
    +W/2 log 2pi. Works on tensors (differentiable in alpha, beta) and on floats."""
    return (0.5 * m * (torch.log(beta) - LOG_2PI) - beta * E_D
            + (0.5 * net.sizes * torch.log(alpha) - alpha * E_W).sum() - 0.5 * log_det_A)


class Laplace:
    """The Laplace approximation at (w, alpha, beta) with the GGN: A = beta J^T J + diag(alpha)."""

    def __init__(self, net, data, w, alpha, beta, G=None):
        self.w, self.alpha, self.beta = w, alpha, beta
        if G is None:
            J = net.jacobian(w, data.X)
            G = J.T @ J
        A = beta * G
        A.diagonal().add_(alpha[net.group_of])
        self.L, info = torch.linalg.cholesky_ex(A)
        if info.item() != 0:
            raise FloatingPointError("A = beta J^T J + diag(alpha) is not positive definite")
        self.log_det_A = 2.0 * torch.log(self.L.diagonal()).sum().item()
        r = net.forward(w, data.X) - data.y
        self.E_D = 0.5 * torch.dot(r, r).item()
        self.E_W = net.energies(w)
        m = data.m
        self.log_z = log_evidence_from_parts(net, m, self.E_D, self.E_W, self.log_det_A, alpha,
                                             torch.tensor(beta)).item()
        # diag(A^-1) = column norms^2 of L^-1: a triangular solve, no explicit inverse of A.
        L_inv = torch.linalg.solve_triangular(self.L, torch.eye(net.W), upper=False)
        diag_inv = (L_inv * L_inv).sum(dim=0)
        self.gamma = net.sizes - alpha * torch.zeros(len(net.group_sizes)).index_add_(0, net.group_of, diag_inv)
        gamma_total = self.gamma.sum().item()
        # d log Z / d log alpha_g = gamma_g/2 - alpha_g E_W,g; d log Z / d log beta = (m - gamma)/2 - beta E_D
        # (occam's log_evidence_gradient; zero at MacKay's fixed point).
        self.grad_log_alpha = 0.5 * self.gamma - alpha * self.E_W
        self.grad_log_beta = 0.5 * (m - gamma_total) - beta * self.E_D
        self.gamma_total = gamma_total

    def grad_max(self):
        return max(self.grad_log_alpha.abs().max().item(), abs(self.grad_log_beta))

    def mackay_update(self, m):
        alpha = (self.gamma.clamp(min=MIN_HYPER) / (2.0 * self.E_W).clamp(min=sys.float_info.min)).clamp(MIN_HYPER, MAX_HYPER)
        beta = min(max(max(m - self.gamma_total, MIN_HYPER) / max(2.0 * self.E_D, sys.float_info.min), MIN_HYPER), MAX_HYPER)
        return alpha, beta


def predictive(net, data, q):
    """Linearised predictive in the original units: test RMSE, mean test log-likelihood, train RMSE."""
    f = net.forward(q.w, data.X_test)
    Jt = net.jacobian(q.w, data.X_test)
    Z = torch.linalg.solve_triangular(q.L, Jt.T, upper=False)  # g^T A^-1 g = ||L^-1 g||^2
    var = (Z * Z).sum(dim=0) + 1.0 / q.beta
    mean = data.y_mean + data.y_scale * f.numpy()
    var = data.y_scale ** 2 * var.numpy()
    return metrics(data, mean, np.sqrt(var), net.forward(q.w, data.X).numpy())


def metrics(data, mean, sd, train_f):
    r = data.y_test - mean
    train_fit = data.y_mean + data.y_scale * train_f
    return {"test_rmse": float(np.sqrt(np.mean(r * r))),
            "test_ll": float(np.mean(-0.5 * np.log(2.0 * math.pi * sd * sd) - r * r / (2.0 * sd * sd))),
            "train_rmse": float(np.sqrt(np.mean((data.y_raw - train_fit) ** 2)))}


def state_record(net, data, q):
    # ||grad S|| at the reported (w, alpha, beta): whether w is the mode the Laplace formula assumes.
    w = q.w.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(objective(net, data, w, q.alpha, q.beta), w)
    return {"log_evidence": q.log_z - data.m * math.log(data.y_scale),
            "map_grad_norm": g.norm().item(), "w_norm": q.w.norm().item(),
            "log_evidence_standardized": q.log_z,
            "alpha": dict(zip(net.group_names, q.alpha.tolist())), "beta": q.beta,
            "gamma": dict(zip(net.group_names, q.gamma.tolist())), "gamma_total": q.gamma_total,
            "log_evidence_grad_log_alpha": dict(zip(net.group_names, q.grad_log_alpha.tolist())),
            "log_evidence_grad_log_beta": q.grad_log_beta, "log_evidence_grad_max": q.grad_max(),
            **predictive(net, data, q)}


# --- MAP ------------------------------------------------------------------------------------
def objective(net, data, w, alpha, beta):
    """S(w) = beta E_D + sum_g alpha_g E_W,g, the negative log posterior up to constants."""
    r = net.forward(w, data.X) - data.y
    return 0.5 * beta * torch.dot(r, r) + 0.5 * torch.dot(alpha[net.group_of], w * w)


def map_lbfgs(net, data, w0, alpha, beta, deadline, gradient_tolerance=1e-6, function_tolerance=1e-9,
              max_iterations=5000, memory=10):
    """torch L-BFGS with strong Wolfe line search, run 10 iterations at a time between checks of
    occam's stopping rule (the gradient norm, or S changing by <= function_tolerance over 10
    iterations, as occam's L-BFGS; include/occam/map.h)."""
    w = w0.clone().requires_grad_(True)
    opt = torch.optim.LBFGS([w], lr=1.0, max_iter=10, history_size=memory, tolerance_grad=0.0,
                            tolerance_change=0.0, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        s = objective(net, data, w, alpha, beta)
        s.backward()
        return s

    status, previous = "max_iterations", None
    while True:
        # The last chunk stops at the budget exactly (LBFGS reads max_iter from its param group).
        opt.param_groups[0]["max_iter"] = min(10, max_iterations - opt.state[w].get("n_iter", 0))
        opt.step(closure)
        with torch.no_grad():
            s = objective(net, data, w, alpha, beta).item()
        w_grad = w.detach().clone().requires_grad_(True)
        (g,) = torch.autograd.grad(objective(net, data, w_grad, alpha, beta), w_grad)
        iterations = opt.state[w]["n_iter"]
        if g.norm().item() <= gradient_tolerance * max(1.0, w.detach().norm().item()):
            status = "converged (gradient)"
        elif previous is not None and abs(previous - s) <= function_tolerance * max(1.0, abs(s)):
            status = "converged (S unchanged over 10 iterations)"
        elif iterations >= max_iterations:
            status = "max_iterations"
        elif time.perf_counter() > deadline:
            status = "time budget"
        else:
            previous = s
            continue
        return w.detach(), {"status": status, "iterations": iterations, "grad_norm": g.norm().item(), "S": s}


def map_adam(net, data, w0, alpha, beta, steps, lr, gradient_tolerance):
    """Full-batch Adam on S(w)/m (the mean loss, as a training loop would scale it)."""
    w = w0.clone().requires_grad_(True)
    opt = torch.optim.Adam([w], lr=lr)
    status = "max_iterations"
    for step in range(1, steps + 1):
        opt.zero_grad()
        s = objective(net, data, w, alpha, beta) / data.m
        s.backward()
        if step % 50 == 0 and w.grad.norm().item() * data.m <= gradient_tolerance * max(1.0, w.detach().norm().item()):
            status = "converged (gradient)"
            break
        opt.step()
    w_grad = w.detach().clone().requires_grad_(True)
    (g,) = torch.autograd.grad(objective(net, data, w_grad, alpha, beta), w_grad)
    return w.detach(), {"status": status, "iterations": step, "grad_norm": g.norm().item()}


# --- the two variants -----------------------------------------------------------------------
def run_mackay(net, data, args):
    t0, c0 = time.perf_counter(), time.process_time()
    deadline = t0 + args.mackay_seconds
    w = net.initial_weights(args.seed)
    alpha, beta = torch.full((len(net.group_sizes),), ALPHA_START), BETA_START
    rounds, map_iterations, previous_log_z, termination = [], 0, None, None
    while termination is None:
        w, map_info = map_lbfgs(net, data, w, alpha, beta, deadline)
        map_iterations += map_info["iterations"]
        q = Laplace(net, data, w, alpha, beta)
        map_ok = map_info["status"].startswith("converged")
        rounds.append({"log_evidence_standardized": q.log_z, "grad_max": q.grad_max(), "map": map_info,
                       "wall_s": time.perf_counter() - t0})
        if map_ok and args.rule == "gradient" and q.grad_max() <= args.grad_tol:
            termination = "converged: every |d log Z / d log theta| <= %g" % args.grad_tol
        elif (map_ok and args.rule == "evidence-change" and previous_log_z is not None
              and abs(q.log_z - previous_log_z) <= 1e-6 * max(1.0, abs(q.log_z))):
            termination = "converged: log-evidence changed by <= 1e-6 relative"
        elif time.perf_counter() > deadline:
            termination = "time budget of %g s (not converged)" % args.mackay_seconds
        elif len(rounds) >= args.max_rounds:
            termination = "max_rounds (not converged)"
        else:
            previous_log_z = q.log_z
            alpha, beta = q.mackay_update(data.m)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"variant": "torch-mackay", "rule": args.rule, "termination": termination, "wall_s": wall, "cpu_s": cpu,
            "iterations": len(rounds), "map_iterations": map_iterations, "final_map": map_info,
            **state_record(net, data, q), "rounds": rounds}


def run_laplace_torch(net, data, args):
    t0, c0 = time.perf_counter(), time.process_time()
    alpha, beta = torch.full((len(net.group_sizes),), ALPHA_START), BETA_START
    w, map_info = map_adam(net, data, net.initial_weights(args.seed), alpha, beta, args.adam_steps, args.adam_lr,
                           gradient_tolerance=1e-6)
    J = net.jacobian(w, data.X)
    G = J.T @ J
    r = net.forward(w, data.X) - data.y
    E_D, E_W = 0.5 * torch.dot(r, r).item(), net.energies(w)
    log_hyper = torch.cat([alpha.log(), torch.tensor([math.log(beta)])]).requires_grad_(True)
    opt = torch.optim.Adam([log_hyper], lr=args.hyper_lr)
    for _ in range(args.hyper_steps):
        opt.zero_grad()
        a, b = log_hyper[:-1].exp(), log_hyper[-1].exp()
        A = b * G + torch.diag(a[net.group_of])
        log_det_A = 2.0 * torch.log(torch.linalg.cholesky(A).diagonal()).sum()
        (-log_evidence_from_parts(net, data.m, E_D, E_W, log_det_A, a, b)).backward()
        opt.step()
    with torch.no_grad():
        alpha, beta = log_hyper[:-1].exp().clone(), log_hyper[-1].exp().item()
    q = Laplace(net, data, w, alpha, beta, G=G)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"variant": "torch-laplace-style", "termination": "%d hyperparameter steps" % args.hyper_steps,
            "wall_s": wall, "cpu_s": cpu, "iterations": args.hyper_steps, "map_iterations": map_info["iterations"],
            "final_map": map_info, **state_record(net, data, q),
            "note": "w is Adam's MAP at alpha=%g, beta=%g; alpha, beta are then tuned at that fixed w" %
                    (ALPHA_START, BETA_START)}


# --- occam's own fit, evaluated with this file's formula ------------------------------------
def check_occam(net, data, args):
    with open(args.occam_model) as f:
        model = json.load(f)
    s, summary = model["standardizer"], model["summary"]
    layout = [(g["name"], g["blocks"]) for g in model["prior"]["groups"]]
    offsets = np.cumsum([0] + net.group_sizes)
    expected = [(n, [[int(o), int(z)]]) for n, o, z in zip(net.group_names, offsets, net.group_sizes)]
    if layout != expected or model["network"]["layers"] != [net.D, net.H, 1]:
        raise SystemExit("occam's model has another network or prior layout: %s" % layout)
    w = torch.tensor(model["posterior"]["mean"])
    alpha = torch.tensor([g["alpha"] for g in model["prior"]["groups"]])
    beta = float(model["likelihood"]["beta"])
    q = Laplace(net, data, w, alpha, beta)
    record = {"variant": "occam", "termination": summary["termination"] + ": " + summary["message"],
              "iterations": summary["iterations"], "map_iterations": summary["map_iterations"],
              **state_record(net, data, q),
              "occam_log_evidence": summary["log_evidence"],
              "occam_log_evidence_standardized": summary["log_evidence_standardized"],
              "occam_log_det_A": model["posterior"]["log_det_precision"], "peer_log_det_A": q.log_det_A,
              "log_evidence_difference": q.log_z - summary["log_evidence_standardized"],
              "standardizer_max_difference": max(
                  float(np.max(np.abs(np.array(s["x_mean"]) - data.x_mean))),
                  float(np.max(np.abs(np.array(s["x_scale"]) - data.x_scale))),
                  abs(s["y_mean"] - data.y_mean), abs(s["y_scale"] - data.y_scale))}
    if args.occam_seconds:
        record["wall_s"], record["cpu_s"] = args.occam_seconds
    if args.occam_predictions:
        pred = np.genfromtxt(args.occam_predictions, delimiter=",", names=True)
        occam_metrics = metrics(data, pred["mean"], pred["std"], net.forward(w, data.X).numpy())
        record["occam_predict"] = occam_metrics
    return record


# --- the comparison table -------------------------------------------------------------------
def table(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    context = next((r for r in rows if r.get("kind") == "context"), {})
    runs = [r for r in rows if "variant" in r]
    base = next((r for r in runs if r["variant"] == "occam" and "cpu_s" in r), None)
    head = "%-20s %8s %8s %7s %7s %6s %10s %10s %10s %9s %9s %8s  %s" % (
        "", "wall s", "CPU s", "wall x", "CPU x", "iters", "log Z", "log Z std", "max dlogZ", "|grad S|",
        "test RMSE", "test LL", "termination")
    print(head)
    for r in runs:
        ratio = lambda k: ("%.2f" % (r[k] / base[k])) if base and k in r and base[k] > 0 else "-"  # noqa: E731
        seconds = lambda k: ("%.2f" % r[k]) if k in r else "-"  # noqa: E731
        print("%-20s %8s %8s %7s %7s %6d %10.2f %10.2f %10.3g %9.2g %9.3f %8.3f  %s" % (
            r["variant"], seconds("wall_s"), seconds("cpu_s"), ratio("wall_s"), ratio("cpu_s"), r["iterations"],
            r["log_evidence"], r["log_evidence_standardized"], r["log_evidence_grad_max"], r["map_grad_norm"],
            r["test_rmse"], r["test_ll"], r["termination"]))
    print("wall x, CPU x: the row's time over occam's. log Z: occam's Laplace log-evidence (no symmetry term) in "
          "the target's units; log Z std: in standardised units. max dlogZ: the largest |d log Z / d log theta| "
          "over the alphas and beta (0 at the evidence maximum for the row's w). |grad S|: the gradient norm of "
          "S(w) at the row's alpha, beta (0 when w is their MAP, as the Laplace formula assumes).")
    for r in runs:
        if r["variant"] == "occam":
            print("occam's log Z (standardised) as reported %.10g, by this script's formula at its w, alpha, beta "
                  "%.10g (difference %.2e); log|A| %.10g vs %.10g; standardiser max difference %.1e"
                  % (r["occam_log_evidence_standardized"], r["log_evidence_standardized"],
                     r["log_evidence_difference"], r["occam_log_det_A"], r["peer_log_det_A"],
                     r["standardizer_max_difference"]))
            if "occam_predict" in r:
                print("occam predict's own test RMSE %.4f, test LL %.4f (this script's predictive at occam's w: "
                      "%.4f, %.4f)" % (r["occam_predict"]["test_rmse"], r["occam_predict"]["test_ll"],
                                       r["test_rmse"], r["test_ll"]))
    if context:
        print("torch %s (%s), %s thread(s), BLAS %s" % (context.get("torch"), context.get("func_module"),
                                                     context.get("threads"), context.get("blas")))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", default="bostonHousing")
    ap.add_argument("--split", type=int, default=0)
    ap.add_argument("--hidden", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1, help="seed of the initial weights")
    ap.add_argument("--variants", default="mackay,laplace-torch", help="mackay, laplace-torch (comma-separated)")
    ap.add_argument("--rule", choices=["gradient", "evidence-change"], default="gradient",
                    help="mackay: the stopping rule (see the file's docstring)")
    ap.add_argument("--grad-tol", type=float, default=1e-3,
                    help="mackay, --rule gradient: the largest |d log Z / d log theta| accepted as converged")
    ap.add_argument("--mackay-seconds", type=float, default=300.0, help="mackay: wall-time cap")
    ap.add_argument("--max-rounds", type=int, default=200, help="mackay: re-estimation rounds cap (occam's default)")
    ap.add_argument("--adam-steps", type=int, default=5000, help="laplace-torch: full-batch Adam steps for the MAP")
    ap.add_argument("--adam-lr", type=float, default=1e-2, help="laplace-torch: Adam's step size for the MAP")
    ap.add_argument("--hyper-steps", type=int, default=100, help="laplace-torch: Adam steps on log alpha, log beta")
    ap.add_argument("--hyper-lr", type=float, default=0.1, help="laplace-torch: their step size (laplace-torch's)")
    ap.add_argument("--occam-model", help="evaluate this file's log-evidence at the w, alpha, beta of occam's model")
    ap.add_argument("--occam-predictions", help="with --occam-model: `occam predict` output on the test rows")
    ap.add_argument("--occam-seconds", type=float, nargs=2, metavar=("WALL", "CPU"), help="occam fit's times")
    ap.add_argument("--write-csv", metavar="DIR", help="write the split's train.csv and test.csv and exit")
    ap.add_argument("--table", metavar="FILE", help="print the comparison table of a run's JSON lines and exit")
    ap.add_argument("--out", help="append JSON lines to this file")
    args = ap.parse_args()
    if args.table:
        table(args.table)
        return 0
    data = Split(args.dataset, args.split)
    if args.write_csv:
        data.write_csv(args.write_csv)
        return 0
    net = TanhNet(data.D, args.hidden)
    base = {"data": data.name, "m": data.m, "D": data.D, "H": net.H, "W": net.W}
    emit({"kind": "context", **base, "torch": torch.__version__, "func_module": FUNC_MODULE,
          "threads": torch.get_num_threads(), "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS"),
          "blas": blas_name()}, args.out)
    if args.occam_model:
        emit({**base, **check_occam(net, data, args)}, args.out)
    runners = {"mackay": run_mackay, "laplace-torch": run_laplace_torch}
    for name in filter(None, args.variants.split(",")):
        emit({**base, **runners[name](net, data, args)}, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
