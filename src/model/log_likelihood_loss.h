// log_likelihood_loss.h (internal) — log p(Y | F) as a Network::OutputLoss: the value log p(Y|F)
// and the gradient ∂ log p / ∂F, for Network::value_gradient. Y must outlive the loss.
#pragma once

#include <Eigen/Core>

#include "occam/likelihood.h"
#include "occam/network.h"

namespace occam::internal {

class LogLikelihoodLoss final : public OutputLoss {
 public:
  LogLikelihoodLoss(const Likelihood& likelihood, const Eigen::MatrixXd& Y) : likelihood_(likelihood), Y_(Y) {}
  double operator()(const Eigen::MatrixXd& F, Eigen::MatrixXd* dF) const override {
    return likelihood_.log_likelihood(F, Y_, dF);
  }

 private:
  const Likelihood& likelihood_;
  const Eigen::MatrixXd& Y_;
};

}  // namespace occam::internal
