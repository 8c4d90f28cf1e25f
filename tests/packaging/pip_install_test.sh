#!/usr/bin/env bash
# pip_install_test.sh SOURCE WORK — a fresh clone of SOURCE's committed HEAD, in WORK, installed the
# way docs/python.md says, offline:
#   "$python3" -m venv --system-site-packages .venv && .venv/bin/pip install --no-build-isolation .
# Then every file of the clone but the environment is deleted, and the installed package must still
# import, fit and predict, the `occam` command must run, and nothing installed may point back into
# the source tree.
set -euo pipefail
source_dir=$1
work=$2
# Debian's python3, which has the packages scripts/setup.sh installs (a python3 earlier on PATH, e.g.
# pyenv's, may not).
python3=python3
[ -x /usr/bin/python3 ] && python3=/usr/bin/python3
rm -rf "$work"
mkdir -p "$work"
git clone -q --no-hardlinks "$source_dir" "$work/occam"
cd "$work/occam"
"$python3" -m venv --system-site-packages .venv
PIP_DISABLE_PIP_VERSION_CHECK=1 .venv/bin/pip install -q --no-build-isolation .

# Nothing but the environment is left of the clone.
find . -mindepth 1 -maxdepth 1 ! -name .venv -exec rm -rf {} +
[ "$(ls -A)" = ".venv" ]
cd "$work"
if grep -rl --binary-files=without-match "$work/occam/python\|$work/occam/build" occam/.venv/lib/python3*/site-packages \
    2>/dev/null | grep -v '/__pycache__/'; then
  echo "FAIL: the installed files above name the source tree" >&2
  exit 1
fi
occam/.venv/bin/python - <<'PY'
import os, sys
import numpy as np
import occam
site = os.path.realpath(os.path.join(sys.prefix, "lib"))
assert os.path.realpath(occam.__file__).startswith(site), (occam.__file__, site)
assert os.path.realpath(occam._occam.__file__).startswith(site), occam._occam.__file__
rng = np.random.default_rng(1)
X = rng.uniform(-1, 1, size=(50, 1))
y = 2.0 * X[:, 0] + 0.1 * rng.normal(size=50)
model = occam.BayesianLinearRegression().fit(X, y)
mean, std = model.predict(X, return_std=True)
assert abs(model.coef_[0] - 2.0) < 0.1, model.coef_
assert np.all(std > 0)
print("installed occam", occam.__version__, "from", os.path.dirname(occam.__file__))
PY
version=$(occam/.venv/bin/occam --version)
echo "$version"
[[ "$version" == "occam "* ]]
occam/.venv/bin/occam fit --help > /dev/null
