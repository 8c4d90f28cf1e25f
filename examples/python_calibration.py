"""Calibration of a Bayesian classifier on real data, beside scikit-learn's: softmax regression on
handwritten digits (the first 900 rows of scikit-learn's digits, 630 to train), α by the evidence,
with each of occam's predictives for predict_proba, and LogisticRegressionCV. Prints each one's
test log-loss, accuracy and expected calibration error (15 bins of the top class's probability),
and draws their reliability diagrams. Run with /usr/bin/python3 (docs/python.md); writes
python_calibration.png, or the path given."""

import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.linear_model import LogisticRegressionCV  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from occam import BayesianLogisticRegression  # noqa: E402

BINS = 15


def reliability(p, y, bins=BINS):
    """Per bin of the top class's probability: its mean confidence, its accuracy and its share."""
    confidence, correct = p.max(axis=1), (p.argmax(axis=1) == y)
    which = np.clip(np.digitize(confidence, np.linspace(0, 1, bins + 1)[1:-1]), 0, bins - 1)
    rows = [(confidence[which == b].mean(), correct[which == b].mean(), np.mean(which == b))
            for b in range(bins) if np.any(which == b)]
    return np.array(rows)


def summary(p, y):
    r = reliability(p, y)
    ece = float(np.sum(r[:, 2] * np.abs(r[:, 1] - r[:, 0])))
    log_loss = float(-np.mean(np.log(p[np.arange(len(y)), y])))
    return log_loss, float(np.mean(p.argmax(axis=1) == y)), ece


X, y = load_digits(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X[:900], y[:900], train_size=630, random_state=0,
                                                    stratify=y[:900])
bayes = BayesianLogisticRegression(random_state=0).fit(X_train, y_train)
sk = make_pipeline(StandardScaler(), LogisticRegressionCV(max_iter=5000)).fit(X_train, y_train)

curves = {f"occam, {name}": bayes.predict_proba(X_test, predictive=name)
          for name in ("bridge", "probit", "linearized-mc", "plug-in")}
curves["scikit-learn LogisticRegressionCV"] = sk.predict_proba(X_test)
print(f"digits: {len(y_train)} train, {len(y_test)} test rows; occam's evidence alpha {bayes.alpha_['all']:.3g} "
      f"({bayes.termination_}); the default predictive is {bayes.predictive!r} (the bridge)")
print(f"{'predictive':36s} {'log-loss':>9s} {'accuracy':>9s} {'ECE':>7s}")
for name, p in curves.items():
    log_loss, accuracy, ece = summary(p, y_test)
    print(f"{name:36s} {log_loss:9.4f} {accuracy:9.4f} {ece:7.4f}")

fig, ax = plt.subplots(figsize=(6, 5))
ax.plot([0, 1], [0, 1], "k:", label="perfect calibration")
for (name, p), marker in zip(curves.items(), "osd^v"):
    # Drawn with 8 bins, and only those that hold at least 5 of the 270 rows (the ECE above uses 15).
    r = reliability(p, y_test, bins=8)
    r = r[r[:, 2] * len(y_test) >= 5]
    ax.plot(r[:, 0], r[:, 1], marker=marker, label=f"{name} (ECE {summary(p, y_test)[2]:.3f})")
ax.set_xlabel("predicted probability of the top class (8 bins, those with 5 or more rows)")
ax.set_ylabel("fraction correct")
ax.set_title("Digits (630 train, 270 test): reliability of predict_proba")
ax.legend(loc="lower right", fontsize=7)
fig.tight_layout()
fig.savefig(sys.argv[1] if len(sys.argv) > 1 else "python_calibration.png", dpi=100)
