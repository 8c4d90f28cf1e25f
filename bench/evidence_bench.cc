// evidence_bench — the cost of the evidence framework's building blocks on a one-hidden-layer
// tanh network with a Gaussian likelihood and MacKay's four prior groups.
//
// Two sizes, (m, D, H) = (455, 13, 50) and (100000, 13, 100):
//   BM_ValueGradient   log p(w, D) and its gradient (Posterior::evaluate): the MAP/sampler hot path
//   BM_GgnHessian      the Gauss–Newton data Hessian β JᵀJ (Posterior::data_hessian, kGgn)
//   BM_ExactHessian    the exact data Hessian (kExact: JᵀΛJ plus the R-operator term)
//   BM_Eigh            the symmetric eigendecomposition of the W × W data Hessian (dsyevd, or Eigen's)
//   BM_Cholesky        the in-place Cholesky factorisation of A = H + P (dpotrf, or Eigen's LLT)
//   BM_ReestimationStep one MacKay round without the MAP: laplace() (GGN, Cholesky of A),
//                      log_evidence(), γ_g = W_g − α_g tr_g(A⁻¹), α_g = γ_g/2E_W,g, β = (m − γ)/2E_D
//   BM_LmStepReference one Levenberg–Marquardt step the way the previous implementation took it
//   BM_LmStep          one Levenberg–Marquardt step through internal::Curvature (dense or Woodbury
//                      form), and its growth with m and W on synthetic data
//   BM_FitEvidence     (455 only) fit_evidence() with default EvidenceOptions from a seeded init
//   BM_Dgemm           this machine's general matrix product rate (n × n × n, n = 455, one thread):
//                      the yardstick the kernels below are read against
//   BM_CapacitanceGram the Woodbury capacitance matrix K = I + Z D⁻¹ Zᵀ at (455, 751) and (455, 1501):
//                      Z formed at w and K from its layers' factors (layered:1, m²·Σ(fan-in) + n²·Σ(fan-out)
//                      multiply-adds) or from Z in full (layered:0, n²W); flop counters and GFlop/s
//   BM_CapacitanceCholesky  its Cholesky factor, n³/3 flops
//   BM_GaussNewtonDense the dense JᵀΛJ at m ≫ W (synthetic rows, D inputs, H units): the rank-k update
//                      against the layers' products (gauss_newton_layers.cc)
//   BM_Tanh            the hidden layer's tanh at 455 × 50 (the run-time AVX2 kernel where the CPU has it)
//   BM_TotalGradientBlocks  the blocks C_n, E_k of the evidence's total gradient at (455, 751), Woodbury form
//
// At m = 455 the data are the 455 training rows of Boston housing split 0
// (shared/data/uci/bostonHousing), standardised with the training mean and standard deviation;
// if that folder is missing, synthetic data of the same shape are used instead, and the label
// says which. At m = 100000 the data are synthetic: X ~ N(0, 1) from a seeded occam::Rng and
// y = tanh(x₁ + x₂) + ½ tanh(x₃ − 2x₄) + ¼ tanh(x₅) + 0.1ε.
//
// The weights for the single-operation benchmarks are deterministic, w_i = 0.2 sin(0.37 i + 0.1),
// with α = (0.5, 1, 2, 4) for (input weights, hidden biases, output weights, output biases) and
// β = 10, so that bench/torch_peer.py evaluates the same S(w) at the same point; the log_p
// counter lets compare.py check that both compute the same number.
//
// Environment: OCCAM_UCI_DIR overrides the location of the UCI folder.
#include <benchmark/benchmark.h>

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "inference/curvature/curvature.h"
#include "inference/curvature/curvature_kernels.h"
#include "inference/curvature/weighted_jacobian.h"
#include "core/linalg.h"
#include "model/activation_kernels.h"
#include "occam/linear_algebra.h"
#include "occam/evidence.h"
#include "occam/laplace.h"
#include "occam/likelihood.h"
#include "occam/mlp.h"
#include "occam/posterior.h"
#include "occam/prior.h"
#include "occam/rng.h"

#ifndef OCCAM_SOURCE_DIR
#define OCCAM_SOURCE_DIR "."
#endif

namespace {

using occam::Index;

constexpr Index kInputs = 13;
constexpr double kBeta = 10.0;
// α per default group of a one-hidden-layer Mlp, by name (the same values in torch_peer.py).
const std::map<std::string, double> kAlphaByGroup = {
    {"input_weights", 0.5}, {"hidden_biases", 1.0}, {"output_weights", 2.0}, {"output_biases", 4.0}};

struct Data {
  Eigen::MatrixXd X, Y;
  std::string source;
};

std::filesystem::path uci_dir() {
  if (const char* env = std::getenv("OCCAM_UCI_DIR"); env != nullptr && *env != '\0') return env;
  return std::filesystem::path(OCCAM_SOURCE_DIR) / ".." / "shared" / "data" / "uci";
}

std::vector<double> read_numbers(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<double> out;
  double v;
  while (in >> v) out.push_back(v);
  return out;
}

// The synthetic regression problem of the large case (and the fallback of the small one).
Data synthetic(Index m, Index D, std::uint64_t seed) {
  occam::Rng rng(seed);
  Data d;
  d.X.resize(m, D);
  d.Y.resize(m, 1);
  for (Index n = 0; n < m; ++n) {
    for (Index j = 0; j < D; ++j) d.X(n, j) = rng.normal();
  }
  for (Index n = 0; n < m; ++n) {
    const auto x = d.X.row(n);
    d.Y(n, 0) =
        std::tanh(x[0] + x[1]) + 0.5 * std::tanh(x[2] - 2.0 * x[3]) + 0.25 * std::tanh(x[4]) + 0.1 * rng.normal();
  }
  d.source = "synthetic";
  return d;
}

// The first m training rows of Boston split 0, standardised with the training mean and
// (population) standard deviation as in the PBP / MC-dropout protocol; synthetic if absent.
Data boston_or_synthetic(Index m) {
  const auto dir = uci_dir() / "bostonHousing";
  const auto raw = read_numbers(dir / "data.txt");
  const auto features = read_numbers(dir / "index_features.txt");
  const auto target = read_numbers(dir / "index_target.txt");
  const auto train = read_numbers(dir / "index_train_0.txt");
  const Index cols = static_cast<Index>(features.size()) + 1;
  if (raw.empty() || target.size() != 1 || static_cast<Index>(features.size()) != kInputs ||
      static_cast<Index>(train.size()) < m || raw.size() % static_cast<std::size_t>(cols) != 0) {
    Data d = synthetic(m, kInputs, 455);
    d.source = "synthetic (no " + dir.string() + ")";
    return d;
  }
  const Index rows = static_cast<Index>(raw.size()) / cols;
  Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> table(raw.data(), rows,
                                                                                                 cols);
  Data d;
  d.X.resize(m, kInputs);
  d.Y.resize(m, 1);
  for (Index n = 0; n < m; ++n) {
    const auto r = static_cast<Index>(train[static_cast<std::size_t>(n)]);
    for (Index j = 0; j < kInputs; ++j) d.X(n, j) = table(r, static_cast<Index>(features[static_cast<std::size_t>(j)]));
    d.Y(n, 0) = table(r, static_cast<Index>(target[0]));
  }
  auto standardise = [](Eigen::MatrixXd* M) {
    for (Index j = 0; j < M->cols(); ++j) {
      const double mean = M->col(j).mean();
      double sd = std::sqrt((M->col(j).array() - mean).square().mean());
      if (!(sd > 0.0)) sd = 1.0;
      M->col(j) = (M->col(j).array() - mean) / sd;
    }
  };
  standardise(&d.X);
  standardise(&d.Y);
  d.source = "boston split 0";
  return d;
}

std::unique_ptr<occam::Posterior> make_posterior(const Data& data, Index hidden, double alpha, double beta) {
  auto net = std::make_unique<occam::Mlp>(kInputs, std::vector<Index>{hidden}, occam::Activation::kTanh);
  occam::Prior prior = occam::Prior::from_network(*net, occam::AlphaGroups::kDefault, alpha);
  return std::make_unique<occam::Posterior>(std::move(net), std::make_unique<occam::GaussianLikelihood>(beta),
                                            std::move(prior), data.X, data.Y);
}

// One benchmark problem, built once per (m, H) and shared by every benchmark of that size.
struct Case {
  Data data;
  std::unique_ptr<occam::Posterior> posterior;
  Eigen::VectorXd w;
  Eigen::VectorXd alpha;
  double log_p = 0.0;
  Eigen::MatrixXd ggn;  // the GGN data Hessian at w, built on first use (BM_Eigh)
};

Case& get_case(Index m, Index hidden) {
  static std::map<std::pair<Index, Index>, std::unique_ptr<Case>> cache;
  auto& slot = cache[{m, hidden}];
  if (slot) return *slot;
  slot = std::make_unique<Case>();
  Case& c = *slot;
  c.data = m == 455 ? boston_or_synthetic(m) : synthetic(m, kInputs, 100000);
  c.posterior = make_posterior(c.data, hidden, 1.0, kBeta);
  const auto& groups = c.posterior->prior().groups();
  c.alpha.resize(static_cast<Index>(groups.size()));
  for (std::size_t g = 0; g < groups.size(); ++g) c.alpha[static_cast<Index>(g)] = kAlphaByGroup.at(groups[g].name);
  c.posterior->prior().set_alpha(c.alpha);
  c.w.resize(c.posterior->dim());
  for (Index i = 0; i < c.w.size(); ++i) c.w[i] = 0.2 * std::sin(0.37 * static_cast<double>(i) + 0.1);
  Eigen::VectorXd grad;
  c.posterior->evaluate(c.w, &c.log_p, &grad);
  return c;
}

void set_common(benchmark::State& state, const Case& c) {
  state.counters["m"] = static_cast<double>(c.data.X.rows());
  state.counters["W"] = static_cast<double>(c.posterior->dim());
  state.SetLabel(c.data.source);
}

void BM_ValueGradient(benchmark::State& state) {
  Case& c = get_case(state.range(0), state.range(1));
  double log_p = 0.0;
  Eigen::VectorXd grad(c.posterior->dim());
  for (auto _ : state) {
    c.posterior->evaluate(c.w, &log_p, &grad);
    benchmark::DoNotOptimize(log_p);
    benchmark::DoNotOptimize(grad.data());
  }
  set_common(state, c);
  state.counters["log_p"] = log_p;
  state.counters["grad_norm"] = grad.norm();
}

void data_hessian_bench(benchmark::State& state, occam::HessianKind kind) {
  Case& c = get_case(state.range(0), state.range(1));
  Eigen::MatrixXd H;
  for (auto _ : state) {
    H = c.posterior->data_hessian(c.w, kind);
    benchmark::DoNotOptimize(H.data());
  }
  set_common(state, c);
  state.counters["trace"] = H.trace();
}

void BM_GgnHessian(benchmark::State& state) { data_hessian_bench(state, occam::HessianKind::kGgn); }
void BM_ExactHessian(benchmark::State& state) { data_hessian_bench(state, occam::HessianKind::kExact); }

// The symmetric eigendecomposition occam uses (internal::symmetric_eigen: LAPACK's dsyevd through
// OpenBLAS, or Eigen's SelfAdjointEigenSolver in a build with OCCAM_LAPACK=OFF).
void BM_Eigh(benchmark::State& state) {
  Case& c = get_case(state.range(0), state.range(1));
  if (c.ggn.size() == 0) c.ggn = c.posterior->data_hessian(c.w, occam::HessianKind::kGgn);
  Eigen::VectorXd values;
  Eigen::MatrixXd vectors;
  for (auto _ : state) {
    occam::internal::symmetric_eigen(c.ggn, &values, &vectors);
    benchmark::DoNotOptimize(values.data());
  }
  set_common(state, c);
  state.counters["lambda_max"] = values[values.size() - 1];
  state.SetLabel(c.data.source + "; " + occam::linear_algebra_backend());
}

// The Cholesky factorisation of A = H + P (W × W) in place (internal::cholesky_lower_in_place).
void BM_Cholesky(benchmark::State& state) {
  Case& c = get_case(state.range(0), state.range(1));
  if (c.ggn.size() == 0) c.ggn = c.posterior->data_hessian(c.w, occam::HessianKind::kGgn);
  Eigen::MatrixXd A = c.ggn;
  c.posterior->prior().add_precision_to(&A);
  Eigen::MatrixXd F;
  for (auto _ : state) {
    state.PauseTiming();
    F = A;
    state.ResumeTiming();
    occam::internal::cholesky_lower_in_place(&F);
    benchmark::DoNotOptimize(F.data());
  }
  set_common(state, c);
  state.SetLabel(c.data.source + "; " + occam::linear_algebra_backend());
}

// One round of MacKay's outer loop at a fixed w (the MAP run excluded), as fit_evidence does it:
// Laplace at w with the GGN, the log-evidence, then γ and the α, β updates (MacKay 1992a,
// eqs. 4.9–4.11). α and β are reset before each round so that every round does the same work.
void BM_ReestimationStep(benchmark::State& state) {
  Case& c = get_case(state.range(0), state.range(1));
  occam::Posterior& post = *c.posterior;
  const double m = static_cast<double>(post.Y().size());
  double log_z = 0.0, gamma_total = 0.0;
  for (auto _ : state) {
    post.prior().set_alpha(c.alpha);
    post.likelihood().set_precision(kBeta);
    const occam::LaplaceApproximation q = occam::laplace(post, c.w, occam::HessianKind::kGgn);
    log_z = occam::log_evidence(post, q);
    const Eigen::VectorXd gamma = occam::well_determined_parameters(post.prior(), q);
    const Eigen::VectorXd E_W = post.prior().energies(c.w);
    Eigen::MatrixXd F;
    post.network().forward(c.w, post.X(), &F);
    const double E_D = occam::GaussianLikelihood::data_error(F, post.Y());
    post.prior().set_alpha((gamma.array() / (2.0 * E_W.array())).max(1e-10).matrix());
    post.likelihood().set_precision((m - gamma.sum()) / (2.0 * E_D));
    gamma_total = gamma.sum();
    benchmark::DoNotOptimize(log_z);
  }
  post.prior().set_alpha(c.alpha);
  post.likelihood().set_precision(kBeta);
  set_common(state, c);
  state.counters["log_evidence"] = log_z;
  state.counters["gamma"] = gamma_total;
}

// The whole evidence fit: default EvidenceOptions (kEvidence, GGN, L-BFGS MAP), from the
// CLI's starting point (α = 1 per group, β = 10, initial_params with seed 1).
void BM_FitEvidence(benchmark::State& state) {
  Case& c = get_case(state.range(0), state.range(1));
  occam::EvidenceResult result;
  for (auto _ : state) {
    state.PauseTiming();
    auto post = make_posterior(c.data, state.range(1), 1.0, 10.0);
    occam::Rng rng(1);
    Eigen::VectorXd w = post->network().initial_params(rng);
    state.ResumeTiming();
    result = occam::fit_evidence(post.get(), occam::EvidenceOptions{}, &w);
    benchmark::DoNotOptimize(w.data());
  }
  set_common(state, c);
  const occam::EvidenceSummary& s = result.summary;
  state.counters["outer_iterations"] = s.outer_iterations;
  state.counters["map_iterations"] = s.map_iterations;
  state.counters["log_evidence"] = s.log_evidence;
  state.counters["gamma"] = s.gamma_total;
  state.counters["converged"] = s.termination == occam::Termination::kConverged ? 1.0 : 0.0;
  state.counters["us_per_map_iteration"] = s.map_iterations > 0 ? 1e6 * s.seconds / s.map_iterations : 0.0;
  state.SetLabel(c.data.source + "; " + occam::to_string(s.termination));
}

// One Levenberg–Marquardt step at w, as the previous implementation took it, all in Eigen: the
// W × W GGN from Jacobian blocks of 2048 rows (Eigen's rankUpdate, then mirrored), the prior
// added, a damped copy, its Cholesky factorisation (Eigen::LLT, another copy) and the solve. The
// reference for BM_LmStep, kept here so that both are measured in the same run.
constexpr double kDamping = 1e-3;

Eigen::VectorXd reference_lm_step(const occam::Posterior& post, const Eigen::VectorXd& w, const Eigen::VectorXd& g) {
  constexpr Index kBlockRows = 2048;
  const Index W = post.dim(), m = post.num_data();
  Eigen::MatrixXd A = Eigen::MatrixXd::Zero(W, W), F, J;
  occam::OutputDerivatives d;
  for (Index start = 0; start < m; start += kBlockRows) {
    const Index rows = std::min(kBlockRows, m - start);
    const auto Xb = post.X().middleRows(start, rows);
    post.network().forward(w, Xb, &F);
    post.likelihood().neg_log_derivatives(F, post.Y().middleRows(start, rows), &d);
    post.network().jacobian(w, Xb, &J);
    const Eigen::MatrixXd scaled = d.hessian.col(0).cwiseSqrt().asDiagonal() * J;
    A.selfadjointView<Eigen::Lower>().rankUpdate(scaled.transpose());
  }
  A.triangularView<Eigen::StrictlyUpper>() = A.transpose();
  post.prior().add_precision_to(&A);
  Eigen::MatrixXd damped = A;
  damped.diagonal().array() += kDamping;
  Eigen::LLT<Eigen::MatrixXd> llt(damped);
  return llt.solve(-g);
}

void BM_LmStepReference(benchmark::State& state) {
  Case& c = get_case(state.range(0), state.range(1));
  Eigen::VectorXd g, step;
  double log_p;
  c.posterior->evaluate(c.w, &log_p, &g);
  for (auto _ : state) {
    step = reference_lm_step(*c.posterior, c.w, g);
    benchmark::DoNotOptimize(step.data());
  }
  set_common(state, c);
  state.counters["step_norm"] = step.norm();
}

// One Levenberg–Marquardt step through internal::Curvature: the curvature formed at w (the
// Jacobians), A factored at the damping, and the solve; form 0 = dense (one W × W triangle),
// 1 = Woodbury (n × n), 2 = the automatic choice. step_difference is the relative difference
// from the reference step.
void BM_LmStep(benchmark::State& state) {
  Case& c = get_case(state.range(0), state.range(1));
  const occam::CurvatureForm forms[] = {occam::CurvatureForm::kDense, occam::CurvatureForm::kWoodbury,
                                        occam::CurvatureForm::kAuto};
  const occam::CurvatureForm form = forms[state.range(2)];
  Eigen::VectorXd g, step;
  double log_p;
  c.posterior->evaluate(c.w, &log_p, &g);
  occam::internal::Curvature curvature(*c.posterior, c.w, {.form = form});
  for (auto _ : state) {
    curvature.form(c.w);
    if (!curvature.factor(kDamping)) state.SkipWithError("the damped system is not positive definite");
    step = curvature.solve(-g);
    benchmark::DoNotOptimize(step.data());
  }
  set_common(state, c);
  const Eigen::VectorXd reference = reference_lm_step(*c.posterior, c.w, g);
  state.counters["step_difference"] = (step - reference).norm() / reference.norm();
  state.SetLabel(c.data.source + "; " + occam::to_string(curvature.form()));
}

// The dense Gauss–Newton matrix JᵀΛJ (upper triangle) at m ≫ W, on synthetic rows with D inputs and
// H units (the shapes of kin8nm, naval and protein: D = 8, 16, 9): layers:0 one symmetric rank-k
// update of J per block of rows, m·W² flops; layers:1 from the layers' factors (each layer's block
// from its distinct values, gauss_newton_layers.cc), whose flops are counted apart. GFlops is
// m·W² over the time: the rank-k update's work, so the two rows compare directly.
void BM_GaussNewtonDense(benchmark::State& state) {
  const Index m = state.range(0), D = state.range(1), H = state.range(2);
  const bool layers = state.range(3) != 0;
  occam::Rng rng(7);
  Eigen::MatrixXd X(m, D), Y(m, 1);
  for (Index j = 0; j < D; ++j) X.col(j) = rng.normal_vector(m);
  Y.col(0) = rng.normal_vector(m);
  auto net = std::make_unique<occam::Mlp>(D, std::vector<Index>{H}, occam::Activation::kTanh);
  occam::Prior prior = occam::Prior::from_network(*net, occam::AlphaGroups::kDefault, 1.0);
  const occam::Posterior post(std::move(net), std::make_unique<occam::GaussianLikelihood>(kBeta), std::move(prior), X,
                              Y);
  Eigen::VectorXd w(post.dim());
  for (Index i = 0; i < w.size(); ++i) w[i] = 0.2 * std::sin(0.37 * static_cast<double>(i) + 0.1);
  Eigen::MatrixXd M;
  for (auto _ : state) {
    if (layers) {
      occam::internal::accumulate_gauss_newton_from_layers(post, w, 2048, &M);
    } else {
      occam::internal::accumulate_gauss_newton_upper(post, w, 2048, &M, /*from_layers=*/false);
    }
    benchmark::DoNotOptimize(M.data());
  }
  const double W = static_cast<double>(post.dim());
  state.counters["W"] = W;
  state.counters["trace"] = M.trace();
  state.counters["GFlops"] =
      benchmark::Counter(static_cast<double>(m) * W * W * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["chosen"] = occam::internal::gauss_newton_from_layers_pays(post) ? 1 : 0;
}

void BM_Dgemm(benchmark::State& state) {
  const Index n = state.range(0);
  occam::Rng rng(3);
  Eigen::MatrixXd A(n, n), B(n, n), C(n, n);
  for (Index j = 0; j < n; ++j) {
    A.col(j) = rng.normal_vector(n);
    B.col(j) = rng.normal_vector(n);
  }
  for (auto _ : state) {
    occam::internal::multiply(A, false, B, 0.0, C);
    benchmark::DoNotOptimize(C.data());
  }
  state.counters["GFlops"] = benchmark::Counter(2.0 * n * n * n * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(occam::linear_algebra_backend());
}

// Forming the capacitance matrix at w, as each MAP iteration does: Z at w, then K at the prior's α
// and β (form() and one factor() without the Cholesky step).
void BM_CapacitanceGram(benchmark::State& state) {
  Case& c = get_case(state.range(0), state.range(1));
  const bool layered = state.range(2) == 1;
  const occam::Posterior& post = *c.posterior;
  auto Z = occam::internal::make_weighted_jacobian(post, layered);
  const Eigen::VectorXd d_inverse = post.prior().precision_diagonal().cwiseInverse();
  Eigen::MatrixXd K;
  for (auto _ : state) {
    if (!Z->form(post, c.w)) state.SkipWithError("an output Hessian is not positive semi-definite");
    Z->gram_lower(d_inverse, 1.0, &K);
    benchmark::DoNotOptimize(K.data());
  }
  // Multiply-adds of the products (a symmetric rank-k update counts half of a general product).
  const auto& sizes = dynamic_cast<const occam::Mlp&>(post.network()).layer_sizes();
  const double m = static_cast<double>(post.num_data()), W = static_cast<double>(post.dim());
  double fan_in = 0.0, fan_out = 0.0;
  for (std::size_t l = 1; l < sizes.size(); ++l) {
    fan_in += static_cast<double>(sizes[l - 1]);
    fan_out += static_cast<double>(sizes[l]);
  }
  const double flops = layered ? m * m * (fan_in + fan_out) : m * m * W;
  state.counters["flops"] = flops;
  state.counters["GFlops"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(c.data.source + (layered ? "; layered" : "; Z in full"));
}

void BM_CapacitanceCholesky(benchmark::State& state) {
  Case& c = get_case(state.range(0), state.range(1));
  const occam::Posterior& post = *c.posterior;
  auto Z = occam::internal::make_weighted_jacobian(post, c.w, true);
  Eigen::MatrixXd K, L;
  Z->gram_lower(post.prior().precision_diagonal().cwiseInverse(), 1.0, &K);
  for (auto _ : state) {
    L = K;
    if (!occam::internal::cholesky_lower_in_place(&L)) state.SkipWithError("K is not positive definite");
    benchmark::DoNotOptimize(L.data());
  }
  const double n = static_cast<double>(K.rows());
  state.counters["GFlops"] = benchmark::Counter(n * n * n / 3.0 * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// The blocks of the evidence's total gradient (tr(A⁻¹ dA[u_k]), total_gradient.cc) in the Woodbury
// form at (455, 751): C_n and E_k from the rows' Gram matrices for one direction u_k per
// hyperparameter (MacKay's four groups and β: 5), each central-differencing the layers' factors.
void BM_TotalGradientBlocks(benchmark::State& state) {
  Case& c = get_case(state.range(0), state.range(1));
  const occam::Posterior& post = *c.posterior;
  occam::internal::Curvature curvature(post, c.w, {.form = occam::CurvatureForm::kWoodbury});
  if (!curvature.factor(0.0)) state.SkipWithError("A is not positive definite");
  const Index directions = post.prior().num_hyperparameters() + 1;
  occam::Rng rng(5);
  Eigen::MatrixXd U(post.dim(), directions), C;
  for (Index k = 0; k < directions; ++k) U.col(k) = rng.normal_vector(post.dim());
  std::vector<Eigen::MatrixXd> E;
  for (auto _ : state) {
    if (!curvature.inverse_jacobian_blocks(c.w, U, 1e-5, &C, &E)) state.SkipWithError("not the layered form");
    benchmark::DoNotOptimize(C.data());
  }
  set_common(state, c);
  state.counters["directions"] = static_cast<double>(directions);
  state.counters["E_norm"] = E.empty() ? 0.0 : E.back().norm();
}

// The hidden layer's tanh on Boston's 455 rows × 50 units (every forward pass's activation): the
// run-time AVX2 kernel where the CPU has it, else the portable one (model/activation_kernels.h).
void BM_Tanh(benchmark::State& state) {
  const Index n = state.range(0);
  occam::Rng rng(7);
  const Eigen::VectorXd input = 2.0 * rng.normal_vector(n);
  Eigen::VectorXd x(n);
  for (auto _ : state) {
    x = input;
    occam::internal::tanh_in_place(x.data(), n);
    benchmark::DoNotOptimize(x.data());
  }
  state.SetItemsProcessed(state.iterations() * n);  // items_per_second: elements a second
}

// The small case repeats five times and reports the median (with mean, stddev and cv); the large
// one runs the expensive operations once or a few times so that the whole program stays within
// minutes.
void Small(benchmark::internal::Benchmark* b) {
  b->ArgNames({"m", "H"})->Args({455, 50})->Repetitions(5)->ReportAggregatesOnly(true);
}
void Large(benchmark::internal::Benchmark* b) { b->ArgNames({"m", "H"})->Args({100000, 100}); }

}  // namespace

BENCHMARK(BM_ValueGradient)->Apply(Small)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ValueGradient)->Apply(Large)->Unit(benchmark::kMillisecond)->Repetitions(3)->ReportAggregatesOnly(true);
BENCHMARK(BM_GgnHessian)->Apply(Small)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GgnHessian)->Apply(Large)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_ExactHessian)->Apply(Small)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ExactHessian)->Apply(Large)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_Eigh)->Apply(Small)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Eigh)->Apply(Large)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_Cholesky)->Apply(Small)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Cholesky)
    ->ArgNames({"m", "H"})
    ->Args({455, 100})
    ->Repetitions(5)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReestimationStep)->Apply(Small)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReestimationStep)->Apply(Large)->Unit(benchmark::kMillisecond)->Iterations(1);
// One LM step at Boston's 455 rows with W = 751 and 1501 (Woodbury's regime), in each form.
BENCHMARK(BM_LmStepReference)
    ->ArgNames({"m", "H"})
    ->Args({455, 50})
    ->Args({455, 100})
    ->Repetitions(5)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LmStep)
    ->ArgNames({"m", "H", "form"})
    ->ArgsProduct({{455}, {50, 100}, {0, 1}})
    ->Repetitions(5)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kMillisecond);
// Growth of one LM step with m (W = 751, m ≥ W: the dense form) and with W (m = 4000).
BENCHMARK(BM_LmStep)
    ->ArgNames({"m", "H", "form"})
    ->ArgsProduct({{2000, 4000, 8000, 16000, 32000}, {50}, {2}})
    ->Repetitions(3)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LmStep)
    ->ArgNames({"m", "H", "form"})
    ->ArgsProduct({{4000}, {25, 50, 100, 200}, {2}})
    ->Repetitions(3)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kMillisecond);
// Growth with m where m < W (H = 200, W = 3001: the Woodbury form): the layers' Grams grow as
// m²·Σ(fan-in + fan-out) = 414 m², the Cholesky factor of K as m³/3, the passes as m·W.
BENCHMARK(BM_LmStep)
    ->ArgNames({"m", "H", "form"})
    ->ArgsProduct({{250, 500, 1000, 2000}, {200}, {2}})
    ->Repetitions(3)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kMillisecond);

BENCHMARK(BM_TotalGradientBlocks)
    ->ArgNames({"m", "H"})
    ->Args({455, 50})
    ->Repetitions(5)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Tanh)->ArgName("n")->Arg(455 * 50)->Repetitions(5)->ReportAggregatesOnly(true)->Unit(
    benchmark::kMicrosecond);
// The kernels of the Woodbury form against this machine's matrix product rate, in the same run.
BENCHMARK(BM_GaussNewtonDense)
    ->ArgNames({"m", "D", "H", "layers"})
    ->ArgsProduct({{10741}, {4, 8, 9, 12, 16, 32}, {50, 100}, {0, 1}})
    ->Repetitions(3)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Dgemm)->ArgName("n")->Arg(455)->Repetitions(5)->ReportAggregatesOnly(true)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CapacitanceGram)
    ->ArgNames({"m", "H", "layered"})
    ->ArgsProduct({{455}, {50, 100}, {0, 1}})
    ->Repetitions(5)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CapacitanceCholesky)
    ->ArgNames({"m", "H"})
    ->Args({455, 50})
    ->Repetitions(5)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kMillisecond);

// One complete fit per run: with the default options it can take minutes (see docs/BENCHMARKS.md).
BENCHMARK(BM_FitEvidence)->ArgNames({"m", "H"})->Args({455, 50})->Unit(benchmark::kMillisecond)->Iterations(1);

BENCHMARK_MAIN();
