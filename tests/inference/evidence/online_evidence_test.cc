// The online evidence loop (EvidenceLoop::kOnline, src/inference/evidence/online.cc): the closed-form
// hyper-gradient against finite differences of the structured log-evidence recomputed from scratch, the noise level and α recovered on a teacher
// network, termination that is never `converged` when the full-batch conditions fail, and the same
// numbers for one and two threads.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "inference/evidence/online.h"
#include "occam/evidence.h"
#include "occam/minibatch_map.h"
#include "occam/mlp.h"
#include "occam/rng.h"
#include "testing/toy_data.h"

namespace occam {
namespace {

const HessianStructure kKron{HessianStructureKind::kKronecker};
const HessianStructure kDiag{HessianStructureKind::kDiagonal};
const HessianStructure kLastLayer{HessianStructureKind::kLastLayer};

// A 3-input teacher with 6 tanh units and fixed weights; y = teacher(x) + noise_sd·ε.
testing::ToyData teacher_data(Index m, double noise_sd, std::uint64_t seed) {
  const Mlp teacher(3, {6}, Activation::kTanh, 1);
  Rng weights_rng(99);
  const Eigen::VectorXd teacher_w = 1.5 * weights_rng.normal_vector(teacher.num_params());
  Rng rng(seed);
  testing::ToyData d{Eigen::MatrixXd(m, 3), Eigen::MatrixXd(m, 1)};
  for (Index i = 0; i < m; ++i)
    for (Index j = 0; j < 3; ++j) d.X(i, j) = rng.normal();
  Eigen::MatrixXd F;
  teacher.forward(teacher_w, d.X, &F);
  for (Index i = 0; i < m; ++i) d.Y(i, 0) = F(i, 0) + noise_sd * rng.normal();
  return d;
}

// A student mlp with a Gaussian likelihood (β) or a Bernoulli one on the signs of the targets, the
// default prior groups at distinct α, and `threads` threads for the full-batch sums.
struct Student {
  std::unique_ptr<Posterior> posterior;
  Eigen::VectorXd w;
};
Student student(const testing::ToyData& d, std::vector<Index> hidden, bool gaussian, double beta, int threads = 1,
                std::uint64_t seed = 3) {
  auto net = std::make_unique<Mlp>(d.X.cols(), std::move(hidden), Activation::kTanh, 1);
  Rng rng(seed);
  Student s;
  s.w = net->initial_params(rng);
  Prior prior = Prior::from_network(*net, AlphaGroups::kDefault, 1.0);
  Eigen::VectorXd alpha = prior.alpha();
  for (Index g = 0; g < alpha.size(); ++g) alpha[g] = 0.5 + 0.7 * static_cast<double>(g);
  prior.set_alpha(alpha);
  std::unique_ptr<Likelihood> likelihood;
  Eigen::MatrixXd Y = d.Y;
  if (gaussian) {
    likelihood = std::make_unique<GaussianLikelihood>(beta);
  } else {
    likelihood = std::make_unique<BernoulliLikelihood>();
    Y = (d.Y.array() > 0.0).cast<double>();
  }
  DataShard shard;
  shard.threads = threads;
  shard.block_rows = 64;  // several blocks even on small data, so that threads share the sums
  s.posterior = std::make_unique<Posterior>(std::move(net), std::move(likelihood), std::move(prior), d.X, Y, shard);
  return s;
}

// The structured log-evidence recomputed from scratch (curvature, factors, log|A|) at θ = exp(φ).
double structured_log_evidence(Posterior* posterior, const Eigen::VectorXd& w, const HessianStructure& structure,
                               const Eigen::VectorXd& phi) {
  evidence::set_all_hyperparameters(posterior, phi.array().exp().matrix());
  return log_evidence(*posterior, laplace(*posterior, w, HessianKind::kGgn, structure));
}

// ∂L/∂φ_j in closed form (FixedModeEvidence, built at φ0) at a point φ1 ≠ φ0, against central
// differences of the log-evidence recomputed from scratch around φ1 — so the β-scaling of the
// curvature is checked too — and the change of L between φ0 and φ1 against the recomputed one.
void expect_gradient_matches_finite_differences(bool gaussian, const HessianStructure& structure) {
  const auto d = teacher_data(120, 0.3, 5);
  Student s = student(d, {5, 4}, gaussian, 4.0);
  Posterior& post = *s.posterior;
  s.w *= 0.8;
  const Eigen::VectorXd phi0 = evidence::all_hyperparameters(post).array().log().matrix();
  const evidence::FixedModeEvidence closed_form(post, laplace(post, s.w, HessianKind::kGgn, structure));
  Eigen::VectorXd phi1 = phi0;
  for (Index j = 0; j < phi1.size(); ++j) phi1[j] += 0.3 * std::sin(1.0 + static_cast<double>(j));
  Eigen::VectorXd gradient;
  const double L1 = closed_form.evaluate(phi1, &gradient);
  Eigen::VectorXd unused;
  const double L0 = closed_form.evaluate(phi0, &unused);
  const double Z0 = structured_log_evidence(&post, s.w, structure, phi0);
  const double Z1 = structured_log_evidence(&post, s.w, structure, phi1);
  EXPECT_NEAR(L1 - L0, Z1 - Z0, 1e-8 * std::max(1.0, std::abs(Z1 - Z0))) << to_string(structure);
  constexpr double h = 1e-4;
  for (Index j = 0; j < phi1.size(); ++j) {
    Eigen::VectorXd up = phi1, down = phi1;
    up[j] += h;
    down[j] -= h;
    const double fd =
        (structured_log_evidence(&post, s.w, structure, up) - structured_log_evidence(&post, s.w, structure, down)) /
        (2.0 * h);
    // Central differences: error O(h²·L''') ≈ 1e-8 relative, plus the rounding of L (~1e-13·|L|/h).
    EXPECT_NEAR(gradient[j], fd, 1e-6 * std::max(1.0, std::abs(fd))) << to_string(structure) << ", entry " << j;
  }
}

TEST(OnlineEvidence, HyperGradientEqualsFiniteDifferencesKron) {
  expect_gradient_matches_finite_differences(true, kKron);
}
TEST(OnlineEvidence, HyperGradientEqualsFiniteDifferencesDiag) {
  expect_gradient_matches_finite_differences(true, kDiag);
}
TEST(OnlineEvidence, HyperGradientEqualsFiniteDifferencesLastLayer) {
  expect_gradient_matches_finite_differences(true, kLastLayer);
}
TEST(OnlineEvidence, HyperGradientEqualsFiniteDifferencesWithoutBeta) {
  expect_gradient_matches_finite_differences(false, kKron);
}

EvidenceOptions online_options(const HessianStructure& structure, int epochs) {
  EvidenceOptions o;
  o.structure = structure;
  o.loop = EvidenceLoop::kOnline;
  o.online.minibatch.epochs = epochs;
  o.online.minibatch.batch_size = 50;
  o.online.minibatch.learning_rate = 1e-2;
  o.online.minibatch.schedule = LearningRateSchedule::kCosine;
  o.online.minibatch.final_learning_rate = 1e-3;
  o.online.burn_in = 5;
  o.online.evidence_every = 5;
  o.online.hyper_steps = 50;
  return o;
}

// A teacher of 6 tanh units with noise s.d. 0.1, fitted by a 12-unit student from β = 1 (s.d. 1):
// the online loop must find the noise level, and α near the structure's own fixed point.
TEST(OnlineEvidence, RecoversTheTeachersNoiseLevelAndASensibleAlpha) {
  constexpr double kNoise = 0.1;
  const auto d = teacher_data(1500, kNoise, 7);
  Student s = student(d, {12}, true, 1.0);
  const EvidenceResult r = fit_evidence(s.posterior.get(), online_options(kKron, 120), &s.w);
  const EvidenceSummary& e = r.summary;
  ASSERT_NE(e.termination, Termination::kFailure) << e.message;
  EXPECT_EQ(e.outer_iterations, 24);  // rounds after epochs 5, 10, …, 120
  // The noise s.d. from β: m = 1500 residuals give it to about 1/√(2m) ≈ 2% relative; the
  // student's misfit and the finite epochs add a little; 15% would flag a wrong β update.
  const double noise_sd = 1.0 / std::sqrt(e.beta);
  EXPECT_NEAR(noise_sd, kNoise, 0.15 * kNoise) << e.brief_report();
  // Sensible α: every group's α within a factor of 2 of MacKay's γ_g/2E_W,g at the returned w
  // (the stationary point of the structure's evidence in α at that w), and far from the bounds.
  for (Index g = 0; g < e.alpha.size(); ++g) {
    const double fixed_point = e.gamma[g] / (2.0 * e.E_W[g]);
    EXPECT_GT(e.alpha[g], 0.5 * fixed_point) << e.group_names[static_cast<std::size_t>(g)];
    EXPECT_LT(e.alpha[g], 2.0 * fixed_point) << e.group_names[static_cast<std::size_t>(g)];
    EXPECT_GT(e.alpha[g], 1e-4);
    EXPECT_LT(e.alpha[g], 1e4);
  }
}

// The data part of each structure's curvature is a sum over rows (kron: Q = Σ a aᵀ with G a mean;
// diag and last-layer sums), so the curvature of the rows taken twice is twice theirs: the
// closed-form evidence of the doubled data equals the one of the single copy with data_scale 2 —
// value, gradient and γ — which is how a subsample of n rows stands for all m (scale m/n).
TEST(OnlineEvidence, TheDataScaleOfASubsampleIsTheCurvatureOfItsRowsRepeated) {
  const auto d = teacher_data(90, 0.3, 5);
  testing::ToyData twice{Eigen::MatrixXd(180, 3), Eigen::MatrixXd(180, 1)};
  twice.X << d.X, d.X;
  twice.Y << d.Y, d.Y;
  for (const HessianStructure& structure : {kKron, kDiag, kLastLayer}) {
    Student one = student(d, {5, 4}, true, 4.0);
    Student two = student(twice, {5, 4}, true, 4.0);
    const Eigen::VectorXd w = 0.8 * one.w;
    const Eigen::VectorXd phi = evidence::all_hyperparameters(*two.posterior).array().log().matrix();
    const evidence::FixedModeEvidence doubled(*two.posterior, laplace(*two.posterior, w, HessianKind::kGgn, structure));
    const evidence::FixedModeEvidence scaled(*two.posterior, laplace(*one.posterior, w, HessianKind::kGgn, structure),
                                             2.0);
    Eigen::VectorXd g_doubled, g_scaled;
    const double L_doubled = doubled.evaluate(phi, &g_doubled), L_scaled = scaled.evaluate(phi, &g_scaled);
    EXPECT_NEAR(L_scaled, L_doubled, 1e-10 * std::abs(L_doubled)) << to_string(structure);
    EXPECT_LT((g_scaled - g_doubled).norm(), 1e-10 * g_doubled.norm()) << to_string(structure);
    const Eigen::VectorXd gamma_doubled = doubled.well_determined(phi), gamma_scaled = scaled.well_determined(phi);
    EXPECT_LT((gamma_scaled - gamma_doubled).norm(), 1e-10 * gamma_doubled.norm()) << to_string(structure);
    // γ as the Laplace approximation computes it, over the doubled rows.
    const Eigen::VectorXd gamma_laplace =
        well_determined_parameters(two.posterior->prior(), laplace(*two.posterior, w, HessianKind::kGgn, structure));
    EXPECT_LT((gamma_doubled - gamma_laplace).norm(), 1e-9 * gamma_laplace.norm()) << to_string(structure);
  }
}

// The teacher fitted with each round's curvature from a fresh quarter of the rows: the noise
// level as well recovered as from all rows (the same bound), and a sample of m rows or more is
// the full pass, bit for bit.
TEST(OnlineEvidence, RecoversTheTeachersNoiseLevelFromASubsampledCurvature) {
  constexpr double kNoise = 0.1;
  const auto d = teacher_data(1500, kNoise, 7);
  Student s = student(d, {12}, true, 1.0);
  EvidenceOptions options = online_options(kKron, 120);
  options.online.curvature_rows = 375;
  const EvidenceResult r = fit_evidence(s.posterior.get(), options, &s.w);
  const EvidenceSummary& e = r.summary;
  ASSERT_NE(e.termination, Termination::kFailure) << e.message;
  EXPECT_EQ(e.outer_iterations, 24);
  EXPECT_NEAR(1.0 / std::sqrt(e.beta), kNoise, 0.15 * kNoise) << e.brief_report();
  for (Index g = 0; g < e.alpha.size(); ++g) {
    EXPECT_GT(e.alpha[g], 1e-4);
    EXPECT_LT(e.alpha[g], 1e4);
  }

  Student all = student(d, {12}, true, 1.0), at_m = student(d, {12}, true, 1.0);
  options = online_options(kKron, 12);
  const EvidenceResult full = fit_evidence(all.posterior.get(), options, &all.w);
  options.online.curvature_rows = 1500;
  const EvidenceResult sample_of_m = fit_evidence(at_m.posterior.get(), options, &at_m.w);
  EXPECT_TRUE(all.w == at_m.w);
  EXPECT_EQ(full.summary.beta, sample_of_m.summary.beta);
}

// Three epochs cannot meet the full-batch conditions: the fit says what it is (the epochs were
// spent), never converged, and converged appears only with both conditions met.
TEST(OnlineEvidence, NeverConvergedWhenTheFullBatchConditionsFail) {
  const auto d = teacher_data(400, 0.1, 8);
  Student s = student(d, {8}, true, 1.0);
  EvidenceOptions o = online_options(kKron, 3);
  o.online.burn_in = 1;
  o.online.evidence_every = 1;
  const EvidenceResult r = fit_evidence(s.posterior.get(), o, &s.w);
  const EvidenceSummary& e = r.summary;
  EXPECT_EQ(e.termination, Termination::kMaxIterations) << e.message;
  EXPECT_GT(e.gradient_norm, e.gradient_tolerance);
  EXPECT_TRUE(std::isfinite(e.hyper_gradient_norm));
  EXPECT_EQ(e.last_map.iterations, 3);
  EXPECT_NE(e.message.find("3 epochs"), std::string::npos) << e.message;
}

// With the full-batch outer loop after the epochs (polish), the conditions can be met: then, and
// only then, the fit says converged.
TEST(OnlineEvidence, PolishReachesConvergedWhenBothConditionsHold) {
  const auto d = teacher_data(300, 0.1, 9);
  Student s = student(d, {4}, true, 1.0);
  EvidenceOptions o = online_options(kDiag, 40);
  o.online.polish = true;  // the full-batch outer loop after the epochs
  o.max_outer_iterations = 100;
  const EvidenceResult r = fit_evidence(s.posterior.get(), o, &s.w);
  const EvidenceSummary& e = r.summary;
  const bool hold = e.gradient_norm <= e.gradient_tolerance && e.hyper_gradient_norm <= e.hyper_gradient_tolerance;
  EXPECT_TRUE(hold) << e.brief_report();
  EXPECT_EQ(e.termination, Termination::kConverged) << e.brief_report();
  EXPECT_GT(e.outer_iterations, 8);  // the 8 online rounds (epochs 5, …, 40), then the outer loop's
}

// The same seed gives the same numbers, bit for bit, with one and two threads.
TEST(OnlineEvidence, SameNumbersForOneAndTwoThreads) {
  const auto d = teacher_data(500, 0.1, 10);
  std::vector<EvidenceResult> results;
  std::vector<Eigen::VectorXd> weights;
  for (int threads : {1, 2}) {
    Student s = student(d, {8}, true, 1.0, threads);
    results.push_back(fit_evidence(s.posterior.get(), online_options(kKron, 20), &s.w));
    weights.push_back(s.w);
  }
  EXPECT_EQ(weights[0], weights[1]);
  EXPECT_EQ(results[0].summary.alpha, results[1].summary.alpha);
  EXPECT_EQ(results[0].summary.beta, results[1].summary.beta);
  EXPECT_EQ(results[0].summary.log_evidence, results[1].summary.log_evidence);
  EXPECT_EQ(results[0].summary.gradient_norm, results[1].summary.gradient_norm);
}

TEST(OnlineEvidence, RefusesAStructureWithoutClosedForm) {
  const auto d = teacher_data(100, 0.1, 11);
  Student s = student(d, {4}, true, 1.0);
  EvidenceOptions o = online_options(HessianStructure{}, 2);
  EXPECT_THROW(fit_evidence(s.posterior.get(), o, &s.w), Error);
  o = online_options(kKron, 2);
  o.online.evidence_every = 0;
  try {
    fit_evidence(s.posterior.get(), o, &s.w);
    ADD_FAILURE() << "evidence_every = 0 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("evidence_every"), std::string::npos) << e.what();
  }
}

// EvidenceLoop::kAuto: the joint loop up to kOnlineLoopCost multiply-adds for one full-batch
// curvature (n·W·min(n, W), n = m·K), the online loop beyond where it applies, with kron in place
// of the full structure; the reason names the loop and the cost.
TEST(AutomaticEvidenceLoop, TakesTheOnlineLoopBeyondTheCostOfAFullBatchCurvature) {
  const EvidenceOptions automatic;
  ASSERT_EQ(automatic.loop, EvidenceLoop::kAuto);  // the default
  EvidenceLoopFacts naval;                         // 10,741 rows, W = 901: 8.7e9
  naval.rows = 10741;
  naval.weights = 901;
  std::string reason;
  EvidenceOptions chosen = choose_evidence_loop(automatic, naval, &reason);
  EXPECT_EQ(chosen.loop, EvidenceLoop::kOnline);
  EXPECT_EQ(chosen.structure.kind, HessianStructureKind::kKronecker);
  EXPECT_TRUE(reason.starts_with("online: ")) << reason;
  EXPECT_NE(reason.find("8.7e+09"), std::string::npos) << reason;
  EXPECT_NE(reason.find("kron in place of the full curvature"), std::string::npos) << reason;
  chosen.validate();  // an online loop the engine accepts

  EvidenceLoopFacts kin8nm;  // 7,373 rows, W = 501: 1.9e9
  kin8nm.rows = 7373;
  kin8nm.weights = 501;
  chosen = choose_evidence_loop(automatic, kin8nm, &reason);
  EXPECT_EQ(chosen.loop, EvidenceLoop::kJoint);
  EXPECT_TRUE(chosen.structure.full());
  EXPECT_TRUE(reason.starts_with("joint: one full-batch")) << reason;

  // Every output is a row of J: ten classes on 5,000 rows of W = 301 are 4.5e9; one output 4.5e8.
  EvidenceLoopFacts classes;
  classes.rows = 5000;
  classes.outputs = 10;
  classes.weights = 301;
  EXPECT_EQ(choose_evidence_loop(automatic, classes).loop, EvidenceLoop::kOnline);
  classes.outputs = 1;
  EXPECT_EQ(choose_evidence_loop(automatic, classes).loop, EvidenceLoop::kJoint);
}

TEST(AutomaticEvidenceLoop, StaysJointWhereTheOnlineLoopDoesNotApplyAndSaysWhy) {
  EvidenceLoopFacts large;
  large.rows = 100000;
  large.weights = 1000;
  const EvidenceOptions automatic;
  const auto joint_because = [&](const EvidenceOptions& options, const EvidenceLoopFacts& facts, const char* why) {
    std::string reason;
    const EvidenceOptions chosen = choose_evidence_loop(options, facts, &reason);
    EXPECT_EQ(chosen.loop, EvidenceLoop::kJoint) << why;
    EXPECT_EQ(chosen.structure.kind, options.structure.kind) << why;
    EXPECT_NE(reason.find(why), std::string::npos) << reason;
  };
  EvidenceLoopFacts f = large;
  f.linear_gaussian = true;
  joint_because(automatic, f, "solved exactly");
  f = large;
  f.linear_in_weights = true;  // a Bernoulli or Poisson GLM
  joint_because(automatic, f, "convex");
  f = large;
  f.group_diagonal = false;
  joint_because(automatic, f, "group-diagonal prior");
  EvidenceOptions exact = automatic;
  exact.hessian = HessianKind::kExact;
  joint_because(exact, large, "Gauss–Newton");
  EvidenceOptions lowrank = automatic;
  lowrank.structure = parse_hessian_structure("lowrank:20");
  joint_because(lowrank, large, "kron, diag or last-layer");
  // A loop given is kept as given; a strategy without a loop to choose says nothing.
  EvidenceOptions given = automatic;
  given.loop = EvidenceLoop::kOuter;
  std::string reason = "unchanged";
  EXPECT_EQ(choose_evidence_loop(given, large, &reason).loop, EvidenceLoop::kOuter);
  EXPECT_EQ(reason, "unchanged");
  EvidenceOptions fixed = automatic;
  fixed.strategy = HyperStrategy::kFixed;
  EXPECT_EQ(choose_evidence_loop(fixed, large, &reason).loop, EvidenceLoop::kJoint);
  EXPECT_EQ(reason, "");
}

// Spread over processes no full curvature is formed: the online loop at any cost where it applies,
// and the joint loop with a structure given, which the processes form together.
TEST(AutomaticEvidenceLoop, TakesTheOnlineLoopWhenTheRowsAreSpreadOverProcesses) {
  EvidenceLoopFacts small;  // Boston: 1.6e8
  small.rows = 455;
  small.weights = 751;
  small.spread = true;
  std::string reason;
  const EvidenceOptions automatic;
  const EvidenceOptions chosen = choose_evidence_loop(automatic, small, &reason);
  EXPECT_EQ(chosen.loop, EvidenceLoop::kOnline);
  EXPECT_EQ(chosen.structure.kind, HessianStructureKind::kKronecker);
  EXPECT_NE(reason.find("spread over processes"), std::string::npos) << reason;
  EvidenceOptions kron = automatic;
  kron.structure = parse_hessian_structure("kron");
  EXPECT_EQ(choose_evidence_loop(kron, small).loop, EvidenceLoop::kJoint);
  small.spread = false;
  EXPECT_EQ(choose_evidence_loop(automatic, small).loop, EvidenceLoop::kJoint);
}

TEST(AutomaticEvidenceLoop, KeepsAStructureItTakesAndTheMinibatchOptimizerGiven) {
  EvidenceLoopFacts large;
  large.rows = 100000;
  large.weights = 1000;
  EvidenceOptions options;
  options.structure = kLastLayer;
  options.map.optimizer = Optimizer::kSgd;
  const EvidenceOptions chosen = choose_evidence_loop(options, large);
  EXPECT_EQ(chosen.loop, EvidenceLoop::kOnline);
  EXPECT_EQ(chosen.structure.kind, HessianStructureKind::kLastLayer);
  EXPECT_EQ(chosen.online.minibatch.optimizer, Optimizer::kSgd);
  EXPECT_EQ(chosen.map.optimizer, Optimizer::kAuto);  // the polish's, full-batch
  // A prior whose groups are not one per layer (ard) does not factor as kron: diag then.
  large.layer_groups = false;
  std::string reason;
  EXPECT_EQ(choose_evidence_loop(EvidenceOptions{}, large, &reason).structure.kind, HessianStructureKind::kDiagonal);
  EXPECT_NE(reason.find("not per layer"), std::string::npos) << reason;
}

// The facts from a posterior, and fit_evidence with its default options above the cost: a
// 3-40-40-1 student (W = 1,841) on 1,500 rows is 1500·1841·1500 = 4.1e9 multiply-adds, so the
// default fit runs the online loop with kron and says so.
TEST(AutomaticEvidenceLoop, TheDefaultFitOfAPosteriorBeyondTheCostRunsOnline) {
  const auto d = teacher_data(1500, 0.1, 7);
  Student s = student(d, {40, 40}, true, 1.0);
  const EvidenceLoopFacts facts = evidence_loop_facts(*s.posterior);
  EXPECT_EQ(facts.rows, 1500);
  EXPECT_EQ(facts.weights, 1841);
  EXPECT_EQ(facts.outputs, 1);
  EXPECT_FALSE(facts.linear_gaussian);
  EXPECT_FALSE(facts.linear_in_weights);
  EXPECT_FALSE(facts.spread);
  EXPECT_TRUE(facts.group_diagonal && facts.layer_groups);
  EvidenceOptions options;
  options.online.minibatch.epochs = 20;
  const EvidenceResult r = fit_evidence(s.posterior.get(), options, &s.w);
  EXPECT_EQ(r.summary.loop, EvidenceLoop::kOnline) << r.summary.brief_report();
  EXPECT_EQ(r.summary.hessian_structure.kind, HessianStructureKind::kKronecker);
  EXPECT_TRUE(r.summary.loop_choice.starts_with("online: ")) << r.summary.loop_choice;
  EXPECT_EQ(r.summary.outer_iterations, 3);  // rounds after epochs 10, 15 and 20
}

}  // namespace
}  // namespace occam
