// glm_bench — occam's side of the GLM benchmarks against scikit-learn (bench/glm_compare.sh).
//
// Generates three seeded data sets, writes them as raw float64 files for the peer, and times:
//   ridge      fit_bayesian_ridge, m = 100000, D = 50 (the peer: BayesianRidge)
//   logistic   MAP at a fixed α by Newton/IRLS (the default for a GLM), Levenberg–Marquardt and
//              L-BFGS (the peer: LogisticRegression, same penalty), and the whole MAP + Laplace +
//              evidence fit, m = 100000, D = 50
//   poisson    MAP + Laplace + evidence with a 20x20 graph-Laplacian prior, m = 4000, D = 400
//              (the peer has no smoothing penalty: PoissonRegressor with a ridge penalty)
// Usage: glm_bench OUT_DIR [REPEATS]. Prints one JSON object per line.
#include <chrono>
#include <ctime>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "occam/bayesian_ridge.h"
#include "occam/evidence.h"
#include "occam/likelihood.h"
#include "occam/linear.h"
#include "occam/map.h"
#include "occam/prior.h"
#include "occam/receptive_field.h"
#include "occam/rng.h"

using namespace occam;

namespace {

void write_raw(const std::string& path, const Eigen::MatrixXd& M) {
  // Row-major float64, as numpy.fromfile(...).reshape(rows, cols) reads it.
  const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> R = M;
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(R.data()), static_cast<std::streamsize>(R.size() * sizeof(double)));
}

double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Wall-clock seconds of each repeat; the process CPU seconds of each go to *cpu when given (on a
// shared machine the steadier of the two: compare them with the peer's CPU seconds).
template <class F>
std::vector<double> time_repeats(int repeats, F&& f, std::vector<double>* cpu = nullptr) {
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = cpu_seconds();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (cpu != nullptr) cpu->push_back(cpu_seconds() - cpu_start);
  }
  return t;
}

std::string json_list(const std::vector<double>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s.append(i ? "," : "").append(std::to_string(v[i]));
  return s + "]";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: glm_bench OUT_DIR [REPEATS]\n";
    return 1;
  }
  const std::string dir = argv[1];
  const int repeats = argc > 2 ? std::stoi(argv[2]) : 3;
  const Index m = 100000, D = 50;
  Rng rng(1);
  Eigen::MatrixXd X(m, D);
  for (Index j = 0; j < D; ++j)
    for (Index n = 0; n < m; ++n) X(n, j) = rng.normal();
  const Eigen::VectorXd w_true = rng.normal_vector(D) / std::sqrt(static_cast<double>(D));
  Eigen::VectorXd y_gauss(m), y_bern(m);
  const BernoulliLikelihood bern;
  for (Index n = 0; n < m; ++n) {
    const double f = X.row(n).dot(w_true);
    y_gauss[n] = f + 2.0 * rng.normal();
    y_bern[n] = bern.sample(2.0 * f + 0.3, rng);
  }
  write_raw(dir + "/X.f64", X);
  write_raw(dir + "/y_gauss.f64", y_gauss);
  write_raw(dir + "/y_bern.f64", y_bern);

  // 1. Bayesian ridge (no intercept: the data have none, and so the peer's m and ours agree).
  BayesianRidgeOptions ridge_options;
  ridge_options.fit_intercept = false;
  BayesianRidgeResult ridge;
  const auto t_ridge = time_repeats(repeats, [&] { ridge = fit_bayesian_ridge(X, y_gauss, ridge_options); });
  std::printf(
      "{\"bench\": \"ridge\", \"m\": %lld, \"D\": %lld, \"seconds\": %s, \"alpha\": %.17g, \"beta\": %.17g, "
      "\"iterations\": %d, \"termination\": \"%s\"}\n",
      static_cast<long long>(m), static_cast<long long>(D), json_list(t_ridge).c_str(), ridge.alpha, ridge.beta,
      ridge.iterations, to_string(ridge.termination));

  // 2. Logistic regression: MAP at a fixed α on the weights (intercept practically unpenalised,
  // as in scikit-learn), then the whole evidence fit.
  const Linear net(D, 1, true);
  const double alpha_fixed = 1.0;
  Eigen::VectorXd w_fixed;
  MapSummary map_summary;
  auto map_at_fixed_alpha = [&](Optimizer optimizer) {
    Prior prior = Prior::from_network(net, AlphaGroups::kDefault, alpha_fixed);
    prior.set_alpha(Eigen::Vector2d(alpha_fixed, 1e-10));
    Posterior post(net.clone(), std::make_unique<BernoulliLikelihood>(), prior, X, y_bern);
    w_fixed = Eigen::VectorXd::Zero(D + 1);
    MapOptions map;
    map.optimizer = optimizer;
    map.gradient_tolerance = 1e-8;
    map_summary = find_map(post, map, &w_fixed);
  };
  const auto t_map_lbfgs = time_repeats(repeats, [&] { map_at_fixed_alpha(Optimizer::kLbfgs); });
  const auto t_map_lm = time_repeats(repeats, [&] { map_at_fixed_alpha(Optimizer::kLevenbergMarquardt); });
  const int lm_iterations = map_summary.iterations;
  // The default for a GLM: Newton/IRLS.
  std::vector<double> cpu_map;
  const auto t_map = time_repeats(
      repeats, [&] { map_at_fixed_alpha(Optimizer::kAuto); }, &cpu_map);
  write_raw(dir + "/w_logistic.f64", w_fixed);
  EvidenceSummary evidence;
  const auto t_evidence = time_repeats(repeats, [&] {
    PriorSpec spec;
    spec.kind = PriorKind::kRidge;
    Posterior post(net.clone(), std::make_unique<BernoulliLikelihood>(), make_prior(net, spec), X, y_bern);
    Eigen::VectorXd w = Eigen::VectorXd::Zero(D + 1);
    evidence = fit_evidence(&post, EvidenceOptions{}, &w).summary;
  });
  std::printf(
      "{\"bench\": \"logistic\", \"m\": %lld, \"D\": %lld, \"alpha_fixed\": %g, \"map_seconds\": %s, "
      "\"map_cpu_seconds\": %s, \"map_iterations\": %d, \"map_gradient_norm\": %.3g, \"map_termination\": \"%s\", "
      "\"map_lm_seconds\": %s, \"map_lm_iterations\": %d, "
      "\"map_lbfgs_seconds\": %s, \"evidence_seconds\": %s, \"evidence_alpha\": %.17g, \"evidence_rounds\": %d}\n",
      static_cast<long long>(m), static_cast<long long>(D), alpha_fixed, json_list(t_map).c_str(),
      json_list(cpu_map).c_str(), map_summary.iterations, map_summary.gradient_norm, to_string(map_summary.termination),
      json_list(t_map_lm).c_str(), lm_iterations, json_list(t_map_lbfgs).c_str(), json_list(t_evidence).c_str(),
      evidence.alpha[0], evidence.outer_iterations);

  // 3. Poisson GLM on a 20x20 receptive field with the graph-Laplacian prior.
  ReceptiveFieldOptions rf_options;
  rf_options.rows = 20;
  rf_options.cols = 20;
  rf_options.samples = 4000;
  const ReceptiveField rf = simulate_receptive_field(rf_options);
  write_raw(dir + "/X_rf.f64", rf.X);
  write_raw(dir + "/y_rf.f64", rf.Y);
  const Linear rf_net(400, 1, true);
  EvidenceSummary smooth;
  double error = 0.0;
  const auto t_poisson = time_repeats(repeats, [&] {
    PriorSpec spec;
    spec.kind = PriorKind::kLaplacian;
    spec.graph = rf.graph;
    Posterior post(rf_net.clone(), std::make_unique<PoissonLikelihood>(), make_prior(rf_net, spec), rf.X, rf.Y);
    Eigen::VectorXd w = Eigen::VectorXd::Zero(401);
    smooth = fit_evidence(&post, EvidenceOptions{}, &w).summary;
    error = (w.head(400) - rf.filter).norm() / rf.filter.norm();
  });
  std::printf(
      "{\"bench\": \"poisson_laplacian\", \"m\": 4000, \"D\": 400, \"seconds\": %s, \"filter_error\": %.4f, "
      "\"rounds\": %d, \"termination\": \"%s\"}\n",
      json_list(t_poisson).c_str(), error, smooth.outer_iterations, to_string(smooth.termination));
  return 0;
}
