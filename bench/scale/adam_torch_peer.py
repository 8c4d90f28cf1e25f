#!/usr/bin/python3
"""The PyTorch peer of bench/scale/online_evidence_bench.sh: plain Adam training of the same network.

A 20-H-H-1 tanh MLP in float64 on the standardised columns of the CSV occam fits, a Gaussian
likelihood and a ridge prior held fixed (beta = 10, alpha = 1, standardised units: no
hyperparameter learning, no curvature), trained as occam's online loop trains its weights: Adam
(torch.optim.Adam, its defaults beside the step size) on minibatches of --batch-size rows from a
permutation drawn per epoch, the loss (m/b)·(beta/2)·sum_B (y - f)^2 + (alpha/2)·|w|^2 (the
minibatch estimate of S(w)), the step size cosine-annealed to 0 over the run's steps (or constant).
One thread (torch.set_num_threads(1), OPENBLAS_NUM_THREADS=1).

Prints one JSON object: the process CPU seconds of the whole script (reading the CSV included) and
of the training loop alone, the seconds of each epoch, and the test RMSE against the noise-free
targets of --test when given (the same scoring as occam's run in the bench script).

Usage: /usr/bin/python3 bench/scale/adam_torch_peer.py TRAIN.csv [--test TEST.csv] [--epochs 30]
           [--batch-size 128] [--hidden 256] [--learning-rate 1e-3] [--lr-schedule cosine|constant]
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
parser.add_argument("--test")
parser.add_argument("--epochs", type=int, default=30)
parser.add_argument("--batch-size", type=int, default=128)
parser.add_argument("--hidden", type=int, default=256)
parser.add_argument("--learning-rate", type=float, default=1e-3)
parser.add_argument("--lr-schedule", choices=["cosine", "constant"], default="cosine")
args = parser.parse_args()

table = np.loadtxt(args.data, delimiter=",", skiprows=1)
x_mean, x_sd = table[:, :-1].mean(0), table[:, :-1].std(0, ddof=1)
y_mean, y_sd = table[:, -1].mean(), table[:, -1].std(ddof=1)
X = torch.from_numpy((table[:, :-1] - x_mean) / x_sd)
y = torch.from_numpy((table[:, -1] - y_mean) / y_sd).unsqueeze(1)
del table
m, D = X.shape
H, b, beta, alpha = args.hidden, args.batch_size, 10.0, 1.0
gen = torch.Generator().manual_seed(1)
shapes = [(D, H), (H,), (H, H), (H,), (H, 1), (1,)]
params = [(torch.randn(s, generator=gen) / math.sqrt(s[0])).requires_grad_() for s in shapes]
optimizer = torch.optim.Adam(params, lr=args.learning_rate)
steps_per_epoch = math.ceil(m / b)
total_steps = steps_per_epoch * args.epochs


def network(inputs):
    hidden = torch.tanh(inputs @ params[0] + params[1])
    hidden = torch.tanh(hidden @ params[2] + params[3])
    return hidden @ params[4] + params[5]


def step(rows, k):
    if args.lr_schedule == "cosine":  # Loshchilov & Hutter 2017, annealed to 0 over the run
        for group in optimizer.param_groups:
            group["lr"] = 0.5 * args.learning_rate * (1.0 + math.cos(math.pi * k / total_steps))
    optimizer.zero_grad(set_to_none=True)
    f = network(X[rows])
    loss = 0.5 * beta * (m / len(rows)) * ((y[rows] - f) ** 2).sum() + 0.5 * alpha * sum((p ** 2).sum() for p in params)
    loss.backward()
    optimizer.step()


train_start = time.process_time()
seconds, k = [], 0
for epoch in range(args.epochs):
    start = time.process_time()
    for rows in torch.randperm(m, generator=gen).split(b):
        step(rows, k)
        k += 1
    seconds.append(time.process_time() - start)
train_seconds = time.process_time() - train_start
result = {"peer": "torch " + torch.__version__, "rows": m, "inputs": D, "hidden": [H, H], "batch_size": b,
          "epochs": args.epochs, "steps": k, "train_cpu_seconds": train_seconds, "epoch_cpu_seconds": seconds}
if args.test:
    test = np.loadtxt(args.test, delimiter=",", skiprows=1)
    with torch.no_grad():
        mean = network(torch.from_numpy((test[:, :-1] - x_mean) / x_sd)).squeeze(1).numpy() * y_sd + y_mean
    result["test_rmse_vs_f"] = float(np.sqrt(np.mean((mean - test[:, -1]) ** 2)))
result["process_cpu_seconds"] = time.process_time()
print(json.dumps(result))
