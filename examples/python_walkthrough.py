"""occam from Python: a Bayesian network and Bayesian linear regression on noisy samples of
sin(πx) with a gap in x, hyperparameters by the evidence, predictions with error bars and a
plot. Run with /usr/bin/python3 (docs/python.md); writes python_walkthrough.png."""

import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from occam import BayesianLinearRegression, BayesianMLPRegressor  # noqa: E402

# 60 points, none in (-0.3, 0.3).
rng = np.random.default_rng(1)
x = np.where(np.arange(60) % 2 == 0, -1.0, 0.3) + 0.7 * rng.uniform(size=60)
data = pd.DataFrame({"x": x, "y": np.sin(np.pi * x) + 0.1 * rng.normal(size=60)})

net = BayesianMLPRegressor(hidden=(50,), prior="ridge", random_state=1).fit(data[["x"]], data["y"])
line = BayesianLinearRegression().fit(data[["x"]], data["y"])
print(f"termination {net.termination_}, log-evidence: network {net.log_evidence_:.1f}, "
      f"linear {line.log_evidence_:.1f}")
print("alpha per group:", {group: f"{value:.3g}" for group, value in net.alpha_.items()})
print(f"beta {net.beta_:.4g} (standardised units), gamma {net.gamma_:.2f} of {net.model_.num_params}")

grid = pd.DataFrame({"x": np.linspace(-1.5, 1.5, 301)})
mean, std = net.predict(grid, return_std=True)
lower, upper = net.predict_interval(grid, level=0.95)
for value in (-1.5, 0.0, 1.5):
    i = int(np.argmin(np.abs(grid["x"].to_numpy() - value)))
    print(f"x = {value:5.2f}: y = {mean[i]:6.3f} ± {2 * std[i]:.3f}")

fig, ax = plt.subplots(figsize=(7, 4))
ax.fill_between(grid["x"], lower, upper, alpha=0.3, label="95% predictive interval")
ax.plot(grid["x"], mean, label="predictive mean (50 tanh units)")
ax.plot(grid["x"], line.predict(grid), "--", label="Bayesian linear regression")
ax.plot(data["x"], data["y"], "k.", label="data")
ax.set_xlabel("x")
ax.set_ylabel("y")
ax.legend(loc="lower right", fontsize=8)
fig.tight_layout()
fig.savefig(sys.argv[1] if len(sys.argv) > 1 else "python_walkthrough.png", dpi=100)
