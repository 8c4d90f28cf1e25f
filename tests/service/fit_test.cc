// The fit service (fit.h): one ModelSpec, one fit(), one FittedModel for every method, checked
// against closed forms where they exist and for what every front end relies on (original units,
// the model file, the callback, errors that name the field).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "occam/fit.h"
#include "occam/io.h"
#include "testing/linear_gaussian.h"
#include "testing/bitwise.h"
#include "testing/temp_dir.h"
#include "testing/toy_data.h"

namespace occam {
namespace {

using testing::bitwise_equal;
using testing::TempDir;

Dataset dataset(const testing::ToyData& d) {
  Dataset data;
  data.X = d.X;
  data.Y = d.Y;
  for (Index j = 0; j < d.X.cols(); ++j) data.feature_names.push_back(std::string("x").append(std::to_string(j + 1)));
  data.target_name = "y";
  return data;
}

ModelSpec linear_spec(Standardize standardize) {
  ModelSpec spec;
  spec.network.kind = NetworkKind::kLinear;
  spec.prior.kind = PriorKind::kGroups;
  spec.standardize = standardize;
  return spec;
}

LaplaceMethod tight_laplace() {
  LaplaceMethod method;
  method.evidence.map.gradient_tolerance = 1e-12;
  method.evidence.map.function_tolerance = 0.0;
  method.evidence.tolerance = 1e-12;
  method.evidence.max_outer_iterations = 2000;
  return method;
}

TEST(FitService, BayesianLinearRegressionMatchesTheClosedForm) {
  // Without standardisation the fitted model is the textbook one: at the α, β the evidence
  // chose, its log-evidence and its predictive are the closed forms (Bishop 2006, §3.3, §3.5).
  const auto d = testing::linear_data(40, 3, 0.3, 7);
  const FittedModel m = fit(linear_spec(Standardize::kNone), dataset(d), tight_laplace());
  ASSERT_EQ(m.summary.termination, Termination::kConverged) << m.summary.message;
  const Eigen::VectorXd precision = m.prior.precision_diagonal();
  const double beta = m.likelihood->precision();
  const Eigen::MatrixXd Phi = testing::design(d.X);
  const double exact = testing::exact_log_evidence(Phi, d.Y.col(0), precision, beta);
  EXPECT_NEAR(m.summary.log_evidence, exact, 1e-8 * std::abs(exact));
  EXPECT_NEAR(m.report["log_evidence"].get<double>(), exact, 1e-8 * std::abs(exact));

  const auto test = testing::linear_data(10, 3, 0.3, 8);
  const Prediction p = m.predict(test.X);
  const testing::ExactPosterior post = testing::exact_posterior(Phi, d.Y.col(0), precision, beta);
  const Eigen::MatrixXd Phi_test = testing::design(test.X);
  for (Index i = 0; i < test.X.rows(); ++i) {
    const Eigen::VectorXd phi = Phi_test.row(i).transpose();
    EXPECT_NEAR(p.mean[i], phi.dot(post.mean), 1e-8);
    EXPECT_NEAR(p.std[i], std::sqrt(phi.dot(post.covariance * phi) + 1.0 / beta), 1e-8);
  }
}

TEST(FitService, PredictionsComeBackInTheTargetsUnits) {
  // Standardising makes the fit invariant to the target's location and scale: y and 10y + 3 give
  // the same model in standardised units, and predictions (mean, std, interval) and the log-evidence (carrying the
  // Jacobian 1/10 per example) transform as they must.
  const auto d = testing::linear_data(40, 2, 0.3, 4);
  auto shifted = d;
  shifted.Y = (10.0 * d.Y.array() + 3.0).matrix();
  const ModelSpec spec = linear_spec(Standardize::kBoth);
  const FittedModel a = fit(spec, dataset(d), tight_laplace());
  const FittedModel b = fit(spec, dataset(shifted), tight_laplace());
  const Eigen::MatrixXd X = testing::linear_data(7, 2, 0.3, 5).X;
  const Prediction pa = a.predict(X), pb = b.predict(X);
  for (Index i = 0; i < X.rows(); ++i) {
    EXPECT_NEAR(pb.mean[i], 10.0 * pa.mean[i] + 3.0, 1e-6 * (1.0 + std::abs(pb.mean[i])));
    EXPECT_NEAR(pb.std[i], 10.0 * pa.std[i], 1e-6 * pb.std[i]);
    EXPECT_NEAR(pb.lower[i], 10.0 * pa.lower[i] + 3.0, 1e-6 * (1.0 + std::abs(pb.lower[i])));
  }
  EXPECT_NEAR(b.summary.log_evidence, a.summary.log_evidence - 40.0 * std::log(10.0),
              1e-6 * std::abs(a.summary.log_evidence));
  EXPECT_NEAR(b.summary.train_rmse, 10.0 * a.summary.train_rmse, 1e-6 * b.summary.train_rmse);
}

TEST(FitService, EveryMethodPredictsAndRoundTripsThroughTheModelFile) {
  const auto d = testing::gap_data(30, 0.1, 2);
  ModelSpec spec;
  spec.network.hidden = {3};
  VariationalMethod vi;
  vi.variational.family = parse_variational_family("meanfield");
  vi.variational.max_iterations = 300;
  SamplingMethod mcmc;
  mcmc.sampler.chains = 2;
  mcmc.sampler.num_warmup = 60;
  mcmc.sampler.num_draws = 30;
  CrossValidatedMethod cv;
  cv.cv.alphas = {0.1, 1.0, 10.0};
  cv.cv.folds.folds = 3;
  cv.cv.with_evidence = false;
  const std::vector<std::pair<const char*, MethodOptions>> methods = {
      {"laplace", LaplaceMethod{}}, {"vi", vi}, {"mcmc", mcmc}, {"map", MapMethod{}}, {"laplace", cv}};
  const Eigen::MatrixXd X = Eigen::VectorXd::LinSpaced(9, -1.0, 1.0);
  for (const auto& [kind, method] : methods) {
    SCOPED_TRACE(method_name(method));
    const FittedModel m = fit(spec, dataset(d), method);
    EXPECT_NE(m.summary.termination, Termination::kFailure) << m.summary.message;
    EXPECT_STREQ(posterior_kind(m.posterior), kind);
    const Prediction p = m.predict(X);
    ASSERT_EQ(p.mean.size(), X.rows());
    EXPECT_TRUE(p.mean.allFinite() && p.std.allFinite());
    EXPECT_TRUE((p.std.array() > 0.0).all());
    EXPECT_TRUE((p.lower.array() < p.mean.array()).all() && (p.mean.array() < p.upper.array()).all());
    // Where the data are, the predictive mean follows sin(3x) (noise 0.1).
    for (Index i = 0; i < X.rows(); ++i) {
      const double x = std::abs(X(i, 0));
      if (x >= 0.5 && x <= 0.75) {
        EXPECT_NEAR(p.mean[i], std::sin(3.0 * X(i, 0)), 0.25) << "x = " << X(i, 0);
      }
    }

    TempDir dir;
    const std::string path = dir.file(std::string(method_name(method)) + "/model.json");
    std::filesystem::create_directories(dir.file(method_name(method)));
    save_model(path, m);
    const FittedModel loaded = load_model(path);
    EXPECT_STREQ(posterior_kind(loaded.posterior), kind);
    EXPECT_EQ(loaded.spec.to_json(), m.spec.to_json());
    const Prediction q = loaded.predict(X);
    EXPECT_TRUE(bitwise_equal(p.mean, q.mean));
    EXPECT_TRUE(bitwise_equal(p.std, q.std));
    EXPECT_TRUE(bitwise_equal(p.upper, q.upper));
  }
}

TEST(FitService, OneCallbackSeesEveryEngineAndCanStopIt) {
  const auto d = testing::gap_data(30, 0.1, 2);
  ModelSpec spec;
  spec.network.hidden = {3};
  {
    int rounds = 0, map_iterations = 0;
    const FittedModel m = fit(spec, dataset(d), LaplaceMethod{}, [&](const FitProgress& p) {
      if (p.map != nullptr) ++map_iterations;
      if (p.evidence == nullptr) return CallbackReturn::kContinue;
      EXPECT_FALSE(p.describe().empty());
      return ++rounds == 2 ? CallbackReturn::kAbort : CallbackReturn::kContinue;
    });
    EXPECT_EQ(m.summary.termination, Termination::kAborted);
    EXPECT_EQ(rounds, 2);
    EXPECT_GT(map_iterations, 0);
    EXPECT_EQ(m.report["termination"], "aborted");
    EXPECT_TRUE(m.predict(Eigen::MatrixXd::Zero(1, 1)).mean.allFinite());  // a consistent state
  }
  {
    SamplingMethod mcmc;
    mcmc.sampler.chains = 2;
    mcmc.sampler.num_warmup = 20;
    mcmc.sampler.num_draws = 1000;
    mcmc.sampler.threads = 1;
    int calls = 0;
    const FittedModel m = fit(spec, dataset(d), mcmc, [&](const FitProgress& p) {
      if (p.chain < 0) return CallbackReturn::kContinue;
      EXPECT_EQ(p.total, 1020);
      return ++calls >= 100 ? CallbackReturn::kAbort : CallbackReturn::kContinue;
    });
    EXPECT_EQ(m.summary.termination, Termination::kAborted);
    const auto& draws = std::get<PosteriorDraws>(m.posterior);
    EXPECT_GT(draws.weights.rows(), 0);
    EXPECT_LT(draws.weights.rows(), 2000);
  }
}

// first_chain_start moves chain 1's start and only it; a start for every chain is refused.
TEST(FitService, FirstChainStartMovesOnlyTheFirstChain) {
  const auto d = testing::gap_data(20, 0.1, 2);
  ModelSpec spec;
  spec.network.hidden = {2};
  SamplingMethod mcmc;
  mcmc.sampler.chains = 2;
  mcmc.sampler.num_warmup = 10;
  mcmc.sampler.num_draws = 5;
  mcmc.sampler.threads = 1;
  mcmc.chains.init = mcmc::InitKind::kPrior;
  StartOptions start;
  start.seed = 9;
  start.stream = 4;
  const auto chain_draws = [&](std::optional<StartOptions> first) {
    mcmc.first_chain_start = first;
    return fit(spec, dataset(d), mcmc).summary.sampler->draws;
  };
  const std::vector<Eigen::MatrixXd> own = chain_draws(std::nullopt);
  const std::vector<Eigen::MatrixXd> moved = chain_draws(start);
  EXPECT_FALSE(bitwise_equal(own.at(0), moved.at(0)));
  EXPECT_TRUE(bitwise_equal(own.at(1), moved.at(1)));
  EXPECT_TRUE(bitwise_equal(moved.at(0), chain_draws(start).at(0)));
  mcmc.first_chain_start.reset();
  mcmc.chains.start = mcmc::StartStream{.seed = 9, .stream = 4};
  try {
    fit(spec, dataset(d), mcmc);
    ADD_FAILURE() << "a start for every chain was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("SamplingMethod.chains.start"), std::string::npos) << e.what();
  }
}

TEST(FitService, ErrorsNameTheFieldThatIsWrong) {
  const auto d = testing::gap_data(20, 0.1, 2);
  const auto message = [&](const ModelSpec& spec, const Dataset& data) {
    try {
      fit(spec, data);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  ModelSpec spec;
  spec.network.hidden = {4, 0};
  EXPECT_NE(message(spec, dataset(d)).find("ModelSpec.network.hidden[1] = 0"), std::string::npos);
  spec = ModelSpec{};
  spec.likelihood.offset_column = "exposure";
  EXPECT_NE(message(spec, dataset(d)).find("ModelSpec.likelihood.offset_column"), std::string::npos);
  spec = ModelSpec{};
  spec.prior.kind = PriorKind::kLaplacian;
  EXPECT_NE(message(spec, dataset(d)).find("ModelSpec.prior.graph"), std::string::npos);
  Dataset with_offset = dataset(d);
  with_offset.offset = Eigen::VectorXd::Zero(20);
  EXPECT_NE(message(ModelSpec{}, with_offset).find("Dataset.offset"), std::string::npos);
}

TEST(FitService, TrainingDataAreReadAsTheSpecSays) {
  TempDir dir;
  {
    std::ofstream out(dir.file("t.csv"));
    out << "x,exposure,kind\n0.5,1.0,dog\n1.5,0.0,cat\n2.5,2.0,dog\n3.5,1.0,bird\n";
  }
  ModelSpec categorical;
  categorical.likelihood.kind = LikelihoodKind::kCategorical;
  const Dataset c = read_training_data(dir.file("t.csv"), "kind", categorical);
  EXPECT_EQ(c.class_labels, (std::vector<std::string>{"bird", "cat", "dog"}));
  EXPECT_EQ(c.Y.col(0), Eigen::Vector4d(2, 1, 2, 0));
  EXPECT_EQ(c.feature_names, (std::vector<std::string>{"x", "exposure"}));

  {
    std::ofstream out(dir.file("counts.csv"));
    out << "x,exposure,count\n0.5,1.0,3\n1.5,0.0,0\n2.5,2.0,7\n3.5,1.0,1\n";
  }
  ModelSpec poisson;
  poisson.likelihood.kind = LikelihoodKind::kPoisson;
  poisson.likelihood.offset_column = "exposure";
  const Dataset p = read_training_data(dir.file("counts.csv"), "count", poisson);
  EXPECT_EQ(p.feature_names, (std::vector<std::string>{"x"}));
  EXPECT_EQ(p.X.col(0), Eigen::Vector4d(0.5, 1.5, 2.5, 3.5));
  EXPECT_EQ(p.offset, Eigen::Vector4d(1.0, 0.0, 2.0, 1.0));
  EXPECT_EQ(p.source, dir.file("counts.csv"));
}

}  // namespace
}  // namespace occam

namespace occam {
namespace {

// The checkpoint tests' fit: 40 rows of gap data, 6 tanh units in MacKay's groups, the joint
// ascent from seed 3.
struct JointFit {
  Dataset data = dataset(testing::gap_data(40, 0.1, 11));
  ModelSpec spec;
  LaplaceMethod method;
  JointFit() {
    spec.network.hidden = {6};
    spec.prior.kind = PriorKind::kGroups;
    method.evidence.loop = EvidenceLoop::kJoint;
    method.start.seed = 3;
  }
};

// A progress callback that counts the fit's MAP iterations in *count.
FitCallback counting_map_iterations(int* count) {
  return [count](const FitProgress& p) {
    if (p.map != nullptr) ++*count;
    return CallbackReturn::kContinue;
  };
}

// LaplaceMethod::checkpoint: a fit stopped after a few evidence steps, run again with the same
// file, goes on from the last step it saved and ends as the uninterrupted fit does, bit for bit,
// without running the MAPs before that step again. A file written by another fit is refused,
// naming what differs; a damaged one is reported as such.
TEST(FitService, ALaplaceFitStoppedGoesOnFromItsCheckpoint) {
  JointFit problem;
  const Dataset& data = problem.data;
  const ModelSpec& spec = problem.spec;
  LaplaceMethod& method = problem.method;
  const FittedModel whole = fit(spec, data, method);
  ASSERT_TRUE(whole.summary.evidence.has_value());
  const EvidenceSummary& s = *whole.summary.evidence;
  ASSERT_EQ(s.termination, Termination::kConverged) << s.message;
  ASSERT_GE(s.outer_iterations, 4);

  TempDir dir;
  method.checkpoint = dir.file("ascent.json");
  int steps = 0;
  const FittedModel stopped = fit(spec, data, method, [&steps](const FitProgress& p) {
    if (p.evidence != nullptr && ++steps == 4) return CallbackReturn::kAbort;
    return CallbackReturn::kContinue;
  });
  EXPECT_EQ(stopped.summary.termination, Termination::kAborted);
  ASSERT_TRUE(std::filesystem::exists(method.checkpoint));

  int map_iterations_run = 0;
  const FittedModel resumed = fit(spec, data, method, counting_map_iterations(&map_iterations_run));
  ASSERT_TRUE(resumed.summary.evidence.has_value());
  const EvidenceSummary& r = *resumed.summary.evidence;
  EXPECT_EQ(r.termination, Termination::kConverged);
  EXPECT_EQ(resumed.summary.log_evidence, whole.summary.log_evidence);
  EXPECT_TRUE(bitwise_equal(r.alpha, s.alpha));
  EXPECT_EQ(r.beta, s.beta);
  EXPECT_EQ(r.map_iterations, s.map_iterations);
  EXPECT_EQ(r.trace.size(), s.trace.size());
  EXPECT_LT(map_iterations_run, s.map_iterations);  // the MAPs before the checkpoint are not run again
  EXPECT_GT(r.resumed_at_step, 0);
  EXPECT_GE(resumed.summary.seconds, r.seconds);  // the fit counts the time before its checkpoint, as the ascent does
  EXPECT_GT(map_iterations_run, 0);
  const Eigen::MatrixXd x = Eigen::VectorXd::LinSpaced(7, -1.3, 1.3);
  const Prediction a = resumed.predict(x), b = whole.predict(x);
  EXPECT_TRUE(bitwise_equal(a.mean, b.mean));
  EXPECT_TRUE(bitwise_equal(a.std, b.std));

  // Another start, or other data: refused before any fit, naming what differs.
  LaplaceMethod elsewhere = method;
  elsewhere.start.seed = 4;
  Dataset other = data;
  other.Y(3, 0) += 1e-9;
  for (const auto& [with, naming] : {std::pair<bool, std::string>{true, "seed"}, {false, "data.fnv1a64"}}) {
    try {
      fit(spec, with ? data : other, with ? elsewhere : method);
      ADD_FAILURE() << "not refused: " << naming;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(naming), std::string::npos) << e.what();
    }
  }
  write_file_atomic(method.checkpoint, "{\"format\": \"occam-evidence-checkpoint\", \"version\": 1,");
  try {
    fit(spec, data, method);
    ADD_FAILURE() << "a damaged checkpoint was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput) << e.what();
  }
}

// A fit whose ascent ended with no_progress, run again with its checkpoint file, ends at once as
// it did: the file keeps the ending (EvidenceCheckpoint::ended), so the fit run again takes no
// further step, runs no MAP iteration and gives the same model and message.
TEST(FitService, AFitThatEndedWithoutProgressRunAgainFromItsCheckpointEndsAsItDid) {
  JointFit problem;
  const Dataset& data = problem.data;
  const ModelSpec& spec = problem.spec;
  LaplaceMethod& method = problem.method;
  method.evidence.hyper_gradient_tolerance = 1e-300;  // a tolerance no ascent meets
  method.evidence.max_outer_iterations = 1000;        // the collapsed trust region ends it, not the budget
  TempDir dir;
  method.checkpoint = dir.file("ascent.json");
  const FittedModel first = fit(spec, data, method);
  ASSERT_TRUE(first.summary.evidence.has_value());
  const EvidenceSummary& s = *first.summary.evidence;
  ASSERT_EQ(s.termination, Termination::kNoProgress) << s.message;

  int map_iterations_run = 0;
  const FittedModel again = fit(spec, data, method, counting_map_iterations(&map_iterations_run));
  ASSERT_TRUE(again.summary.evidence.has_value());
  const EvidenceSummary& r = *again.summary.evidence;
  EXPECT_EQ(r.termination, Termination::kNoProgress);
  EXPECT_EQ(r.message, s.message);
  EXPECT_EQ(r.outer_iterations, s.outer_iterations);
  EXPECT_EQ(r.resumed_at_step, s.outer_iterations);
  EXPECT_EQ(r.map_iterations, s.map_iterations);
  EXPECT_EQ(map_iterations_run, 0);
  EXPECT_EQ(again.summary.log_evidence, first.summary.log_evidence);
  const Eigen::MatrixXd x = Eigen::VectorXd::LinSpaced(7, -1.3, 1.3);
  const Prediction a = again.predict(x), b = first.predict(x);
  EXPECT_TRUE(bitwise_equal(a.mean, b.mean));
  EXPECT_TRUE(bitwise_equal(a.std, b.std));
}

}  // namespace
}  // namespace occam
