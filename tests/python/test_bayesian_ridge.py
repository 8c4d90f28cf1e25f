"""BayesianLinearRegression and scikit-learn's BayesianRidge compute the same fixed point of the
evidence on scikit-learn's diabetes data: α, β and the coefficients agree to 1e-8.

The two name the hyperparameters the opposite way round: occam's α (the weights' prior
precision) is BayesianRidge's lambda_, occam's β (the noise precision) is its alpha_. BayesianRidge
puts Gamma(alpha_1, alpha_2) and Gamma(lambda_1, lambda_2) hyperpriors on them (1e-6 by default)
and stops when the coefficients change by less than tol in one MacKay update; with the
hyperpriors at 0 (the evidence alone, as occam maximises it) and its loop run until it stands
still, both land on the stationary point of log p(y | α, β) with a flat intercept.
"""

import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.linear_model import BayesianRidge

from occam import BayesianLinearRegression


def fitted_pair():
    X, y = load_diabetes(return_X_y=True)
    ours = BayesianLinearRegression(tol=1e-9).fit(X, y)
    theirs = BayesianRidge(n_iter=100000, tol=1e-300, alpha_1=0.0, alpha_2=0.0, lambda_1=0.0, lambda_2=0.0,
                           fit_intercept=True).fit(X, y)
    return X, ours, theirs


def test_alpha_beta_and_coefficients_agree_with_bayesian_ridge_to_1e_8():
    X, ours, theirs = fitted_pair()
    assert ours.termination_ == "converged", ours.report_["message"]
    np.testing.assert_allclose(ours.alpha_, theirs.lambda_, rtol=1e-8, atol=0)
    np.testing.assert_allclose(ours.beta_, theirs.alpha_, rtol=1e-8, atol=0)
    np.testing.assert_allclose(ours.coef_, theirs.coef_, rtol=1e-8, atol=0)
    np.testing.assert_allclose(ours.intercept_, theirs.intercept_, rtol=1e-8, atol=0)
    # sigma_: the weights' posterior covariance (αI + βXᵀX)⁻¹ on centred X, in both.
    np.testing.assert_allclose(ours.sigma_, theirs.sigma_, rtol=1e-7, atol=0)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=1e-8, atol=0)
