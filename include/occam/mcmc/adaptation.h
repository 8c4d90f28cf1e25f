// adaptation.h — Stan's warm-up: dual-averaging step size and windowed metric adaptation.
//
// Dual averaging (Nesterov 2009; Hoffman & Gelman 2014, Alg. 5) drives the mean acceptance
// statistic toward a target δ. The metric is estimated from the draws of doubling windows
// between an initial fast buffer (75) and a terminal fast buffer (50) (Stan Reference Manual,
// "HMC algorithm parameters": 75 / 25 / 50), regularised toward 10⁻³·I as Stan does.
//
//   occam::mcmc::DualAveraging da({.target = 0.8}); da.restart(step);
//   step = da.update(info.accept_stat);  ...  step = da.final_step_size();
//   occam::mcmc::WindowedAdaptation w(1000, occam::mcmc::MetricKind::kDiagonal, d);
#pragma once

#include <Eigen/Core>

#include "occam/mcmc/metric.h"

namespace occam::mcmc {

struct DualAveragingOptions {
  double target = 0.8;  // δ, the target acceptance statistic
  double gamma = 0.05;  // regularisation scale
  double t0 = 10.0;     // stabilises the first iterations
  double kappa = 0.75;  // the iterate-averaging decay
};

class DualAveraging {
 public:
  explicit DualAveraging(DualAveragingOptions options = {}) : options_(options) {}
  // Starts afresh around μ = log(10 ε) (Stan restarts at each metric update).
  void restart(double step_size);
  // Feeds one acceptance statistic and returns the next step size exp(x_t).
  double update(double accept_stat);
  // exp(x̄), the averaged step size used after warm-up.
  double final_step_size() const;

  // Everything update() depends on, to checkpoint and resume a chain exactly.
  struct State {
    double mu = 0.0, s_bar = 0.0, x_bar = 0.0;
    int counter = 0;
  };
  State state() const { return {mu_, s_bar_, x_bar_, counter_}; }
  void restore(const State& state);

 private:
  DualAveragingOptions options_;
  double mu_ = 0.0, s_bar_ = 0.0, x_bar_ = 0.0;
  int counter_ = 0;
};

// The windowed schedule with a running (co)variance estimate of the positions.
class WindowedAdaptation {
 public:
  // Stan's defaults; when warm-up is shorter than their sum they become 15% / 75% / 10% of it.
  WindowedAdaptation(int num_warmup, MetricKind kind, Eigen::Index dim, int init_buffer = 75, int term_buffer = 50,
                     int base_window = 25);
  // Records q at warm-up iteration `iteration` (0-based) when it falls in a slow window. Returns
  // true when that window has just ended: *metric then holds the new estimate.
  bool observe(int iteration, const Eigen::VectorXd& q, Metric* metric);
  bool adapting_metric() const { return kind_ != MetricKind::kUnit && window_size_ > 0; }

  // The schedule's position and the running moments of the current window, to checkpoint and
  // resume a chain exactly (the buffers follow from the constructor's arguments).
  struct State {
    int window_size = 0, window_end = 0;
    long long n = 0;
    Eigen::VectorXd mean;
    Eigen::MatrixXd m2;  // diagonal: one column; dense: dim × dim
  };
  State state() const;
  // Throws Error(kInvalidArgument) when the state's sizes do not fit this adaptation's.
  void restore(const State& state);

 private:
  void reset_estimator();

  MetricKind kind_;
  Eigen::Index dim_;
  int num_warmup_, init_buffer_, term_buffer_;
  int window_size_ = 0, window_end_ = 0;
  // Welford's running mean and sum of squared deviations.
  long long n_ = 0;
  Eigen::VectorXd mean_;
  Eigen::VectorXd m2_;       // diagonal
  Eigen::MatrixXd m2_full_;  // dense
};

}  // namespace occam::mcmc
