#!/usr/bin/env python3
"""The network classifiers' evidence fits from Python with their defaults, timed (docs/BENCHMARKS.md,
"Network classifiers: the evidence fit from Python"): breast cancer with BayesianMLPClassifier()'s
defaults (50 tanh units), or the first 900 rows of digits with 10 units; a stratified 70/30 split
(random_state 0); the network's starting weights from random_state=1 (without it each run starts
elsewhere and two builds' times are not comparable); the CPU seconds of fit, the termination, and
the test log-loss and accuracy.

  PYTHONPATH=build/python OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/classifier_fit_time.py bc|digits
"""
import os
import sys
import time
import warnings

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from sklearn.datasets import load_breast_cancer, load_digits  # noqa: E402
from sklearn.metrics import accuracy_score, log_loss  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

import occam  # noqa: E402

which = sys.argv[1] if len(sys.argv) > 1 else "bc"
if which == "bc":
    X, y = load_breast_cancer(return_X_y=True)
    estimator = occam.BayesianMLPClassifier(random_state=1)
elif which == "digits":
    X, y = load_digits(return_X_y=True)
    X, y = X[:900], y[:900]
    estimator = occam.BayesianMLPClassifier(hidden=(10,), random_state=1)
else:
    sys.exit("usage: classifier_fit_time.py bc|digits")
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
start = time.process_time()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # a ConvergenceWarning is in the termination column
    estimator.fit(X_train, y_train)
cpu = time.process_time() - start
p = estimator.predict_proba(X_test)
print(f"{which}: {len(y_train)} rows; fit CPU s {cpu:.1f}; termination {estimator.termination_}; "
      f"test log-loss {log_loss(y_test, p):.4f}; accuracy {accuracy_score(y_test, estimator.predict(X_test)):.4f}")
