#!/usr/bin/python3
"""The PyTorch peer of bench/sgmcmc_bench.sh: SGHMC epochs on the same data and network.

A 20-256-256-1 tanh MLP in float64, a Gaussian likelihood (beta = 10) and a ridge prior
(alpha = 1), on the standardised columns of the CSV that occam samples from. Each step is what
occam's SGHMC step does: a minibatch of --batch-size rows from a permutation drawn per epoch,
the gradient of log p(w) + (m/b) sum_B log p(y|x, w) by autograd, and the update
v <- (1 - hC) v + h grad + sqrt(2Ch) xi, w <- w + h v. One thread (torch.set_num_threads(1),
OPENBLAS_NUM_THREADS=1). Prints the seconds of each epoch after a warm-up of 20 steps, as JSON.

Usage: /usr/bin/python3 bench/sgmcmc_torch_peer.py DATA.csv [--epochs 2] [--batch-size 128]
"""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)

parser = argparse.ArgumentParser()
parser.add_argument("data")
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--batch-size", type=int, default=128)
parser.add_argument("--hidden", type=int, default=256)
parser.add_argument("--step-size", type=float, default=1e-4)
parser.add_argument("--friction", type=float, default=100.0)
args = parser.parse_args()

table = np.loadtxt(args.data, delimiter=",", skiprows=1)
X = (table[:, :-1] - table[:, :-1].mean(0)) / table[:, :-1].std(0, ddof=1)
y = (table[:, -1] - table[:, -1].mean()) / table[:, -1].std(ddof=1)
X, y = torch.from_numpy(X), torch.from_numpy(y).unsqueeze(1)
m, D = X.shape
H, b, beta, alpha = args.hidden, args.batch_size, 10.0, 1.0
gen = torch.Generator().manual_seed(1)
shapes = [(D, H), (H,), (H, H), (H,), (H, 1), (1,)]
params = [(torch.randn(s, generator=gen) / math.sqrt(s[0])).requires_grad_() for s in shapes]
velocity = [torch.zeros_like(p) for p in params]
h, C = args.step_size, args.friction


def step(rows):
    for p in params:
        p.grad = None
    hidden = torch.tanh(X[rows] @ params[0] + params[1])
    hidden = torch.tanh(hidden @ params[2] + params[3])
    f = hidden @ params[4] + params[5]
    log_p = -0.5 * beta * (m / b) * ((y[rows] - f) ** 2).sum() - 0.5 * alpha * sum((p ** 2).sum() for p in params)
    log_p.backward()
    with torch.no_grad():
        for p, v in zip(params, velocity):
            v.mul_(1.0 - h * C).add_(p.grad, alpha=h).add_(torch.randn(p.shape, generator=gen), alpha=math.sqrt(2 * C * h))
            p.add_(v, alpha=h)


for rows in torch.randperm(m, generator=gen)[: 20 * b].split(b):
    step(rows)
per_epoch = m // b
seconds = []
for epoch in range(args.epochs):
    permutation = torch.randperm(m, generator=gen)
    start = time.perf_counter()
    for k in range(per_epoch):
        step(permutation[k * b:(k + 1) * b])
    seconds.append(time.perf_counter() - start)
print(json.dumps({"peer": "torch " + torch.__version__, "rows": m, "inputs": D, "hidden": [H, H], "batch_size": b,
                  "steps_per_epoch": per_epoch, "epoch_seconds": seconds}))
