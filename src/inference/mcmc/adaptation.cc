#include "occam/mcmc/adaptation.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "occam/status.h"

namespace occam::mcmc {

void DualAveraging::restart(double step_size) {
  mu_ = std::log(10.0 * step_size);
  s_bar_ = 0.0;
  x_bar_ = 0.0;
  counter_ = 0;
}

// Hoffman & Gelman (2014), Alg. 5, eq. (6), as in Stan's stepsize_adaptation::learn_stepsize.
double DualAveraging::update(double accept_stat) {
  ++counter_;
  accept_stat = std::min(1.0, accept_stat);
  const double t = static_cast<double>(counter_);
  const double eta = 1.0 / (t + options_.t0);
  s_bar_ = (1.0 - eta) * s_bar_ + eta * (options_.target - accept_stat);
  const double x = mu_ - s_bar_ * std::sqrt(t) / options_.gamma;
  const double x_eta = std::pow(t, -options_.kappa);
  x_bar_ = (1.0 - x_eta) * x_bar_ + x_eta * x;
  return std::exp(x);
}

double DualAveraging::final_step_size() const { return std::exp(x_bar_); }

void DualAveraging::restore(const State& state) {
  if (state.counter < 0) throw Error(ErrorKind::kInvalidArgument, "dual averaging: the iteration counter is negative");
  mu_ = state.mu;
  s_bar_ = state.s_bar;
  x_bar_ = state.x_bar;
  counter_ = state.counter;
}

WindowedAdaptation::State WindowedAdaptation::state() const {
  State s;
  s.window_size = window_size_;
  s.window_end = window_end_;
  s.n = n_;
  s.mean = mean_;
  s.m2 = kind_ == MetricKind::kDense ? m2_full_ : Eigen::MatrixXd(m2_);
  return s;
}

void WindowedAdaptation::restore(const State& state) {
  const bool dense = kind_ == MetricKind::kDense;
  const bool empty = state.mean.size() == 0 && state.m2.size() == 0;
  const bool sized = state.mean.size() == dim_ && state.m2.rows() == dim_ && state.m2.cols() == (dense ? dim_ : 1);
  // An adaptation that never adapts (short warm-up, unit metric) has no moments.
  if (!(sized || (empty && !adapting_metric())) || state.n < 0 || state.window_size < 0) {
    throw Error(ErrorKind::kInvalidArgument, "windowed adaptation: the saved state does not fit a " +
                                                 std::string(to_string(kind_)) + " metric of dimension " +
                                                 std::to_string(dim_));
  }
  window_size_ = state.window_size;
  window_end_ = state.window_end;
  n_ = state.n;
  if (empty) return;
  mean_ = state.mean;
  if (dense) {
    m2_full_ = state.m2;
  } else {
    m2_ = state.m2.col(0);
  }
}

WindowedAdaptation::WindowedAdaptation(int num_warmup, MetricKind kind, Eigen::Index dim, int init_buffer,
                                       int term_buffer, int base_window)
    : kind_(kind), dim_(dim), num_warmup_(num_warmup), init_buffer_(init_buffer), term_buffer_(term_buffer) {
  // Stan's windowed_adaptation::set_window_params.
  if (num_warmup < 20) {
    window_size_ = 0;  // too short to adapt the metric
    return;
  }
  if (init_buffer + base_window + term_buffer > num_warmup) {
    init_buffer_ = static_cast<int>(0.15 * num_warmup);
    term_buffer_ = static_cast<int>(0.1 * num_warmup);
    base_window = num_warmup - (init_buffer_ + term_buffer_);
  }
  window_size_ = base_window;
  window_end_ = init_buffer_ + window_size_;
  reset_estimator();
}

void WindowedAdaptation::reset_estimator() {
  n_ = 0;
  mean_ = Eigen::VectorXd::Zero(dim_);
  if (kind_ == MetricKind::kDense) {
    m2_full_ = Eigen::MatrixXd::Zero(dim_, dim_);
  } else {
    m2_ = Eigen::VectorXd::Zero(dim_);
  }
}

bool WindowedAdaptation::observe(int iteration, const Eigen::VectorXd& q, Metric* metric) {
  if (!adapting_metric()) return false;
  if (iteration < init_buffer_ || iteration >= num_warmup_ - term_buffer_) return false;
  // Welford's update.
  ++n_;
  const Eigen::VectorXd delta = q - mean_;
  mean_ += delta / static_cast<double>(n_);
  if (kind_ == MetricKind::kDense) {
    m2_full_.noalias() += delta * (q - mean_).transpose();
  } else {
    m2_ += delta.cwiseProduct(q - mean_);
  }
  if (iteration + 1 != window_end_) return false;

  // Stan's regularisation: shrink toward 10⁻³·I with weight 5/(n + 5).
  const double n = static_cast<double>(n_);
  const double w = n / (n + 5.0);
  const double shrink = 1e-3 * 5.0 / (n + 5.0);
  if (kind_ == MetricKind::kDense) {
    Eigen::MatrixXd covariance = m2_full_ / (n - 1.0);
    covariance = 0.5 * (covariance + covariance.transpose()).eval();
    covariance *= w;
    covariance.diagonal().array() += shrink;
    *metric = Metric::dense(covariance);
  } else {
    Eigen::VectorXd variance = m2_ / (n - 1.0);
    variance = (w * variance.array() + shrink).matrix();
    *metric = Metric::diagonal(variance);
  }
  // The next window doubles; the last one stretches to the terminal buffer.
  window_size_ *= 2;
  window_end_ = iteration + 1 + window_size_;
  const int next_end = window_end_ + 2 * window_size_;
  if (next_end > num_warmup_ - term_buffer_) window_end_ = num_warmup_ - term_buffer_;
  reset_estimator();
  return true;
}

}  // namespace occam::mcmc
