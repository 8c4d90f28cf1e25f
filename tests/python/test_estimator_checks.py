"""scikit-learn's own estimator checks, each a test, for every occam estimator. A check that
cannot apply is named, with the reason, in the estimator's _more_tags()["_xfail_checks"]."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from occam import (BayesianLinearRegression, BayesianLogisticRegression, BayesianMLPClassifier, BayesianMLPRegressor,
                   BayesianPoissonRegressor)

# Small networks keep the suite quick; the checks' data sets have at most a few hundred rows.
ESTIMATORS = [
    BayesianMLPRegressor(hidden=(5,), random_state=0),
    BayesianLinearRegression(),
    BayesianLogisticRegression(),
    BayesianMLPClassifier(hidden=(5,), random_state=0),
    BayesianPoissonRegressor(),
]


@parametrize_with_checks(ESTIMATORS)
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)
