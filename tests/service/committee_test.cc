// A committee of Laplace approximations (committee.h): its members are the fits LaplaceMethod
// gives from their own starts, its weights the normalised evidence, and its predictive the
// mixture of theirs, checked against the mixture computed here from the members' own predictions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numbers>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "occam/committee.h"
#include "occam/data.h"
#include "occam/fit.h"
#include "occam/heteroscedastic.h"
#include "occam/io.h"
#include "occam/memory.h"
#include "occam/method_options.h"
#include "testing/bitwise.h"
#include "testing/temp_dir.h"
#include "testing/toy_data.h"

namespace occam {
namespace {

using testing::bitwise_equal;
using testing::TempDir;

Dataset gap_dataset() {
  const testing::ToyData d = testing::gap_data(40, 0.1, 11);
  Dataset data;
  data.X = d.X;
  data.Y = d.Y;
  data.feature_names = {"x"};
  data.target_name = "y";
  return data;
}

ModelSpec small_network() {
  ModelSpec spec;
  spec.network.hidden = {6};
  spec.prior.kind = PriorKind::kGroups;
  return spec;
}

LaplaceMethod quick_laplace() {
  LaplaceMethod method;
  method.evidence.max_outer_iterations = 30;
  method.start.seed = 3;
  method.start.stream = 2;
  return method;
}

Eigen::MatrixXd test_inputs() { return Eigen::VectorXd::LinSpaced(9, -1.4, 1.4); }

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

// Mean, std and interval, bit for bit.
void expect_same_bits(const Prediction& a, const Prediction& b) {
  EXPECT_TRUE(bitwise_equal(a.mean, b.mean));
  EXPECT_TRUE(bitwise_equal(a.std, b.std));
  EXPECT_TRUE(bitwise_equal(a.lower, b.lower));
  EXPECT_TRUE(bitwise_equal(a.upper, b.upper));
}

class CommitteeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    CommitteeOptions options;
    options.members = 4;
    committee_ = new Committee(fit_committee(small_network(), gap_dataset(), quick_laplace(), options));
  }
  static void TearDownTestSuite() {
    delete committee_;
    committee_ = nullptr;
  }
  static Committee* committee_;
};
Committee* CommitteeTest::committee_ = nullptr;

TEST_F(CommitteeTest, MemberOneIsThePlainLaplaceFitAndTheOthersStartElsewhere) {
  const Committee& c = *committee_;
  ASSERT_EQ(c.models.size(), 4u);
  const FittedModel plain = fit(small_network(), gap_dataset(), quick_laplace());
  const Eigen::MatrixXd X = test_inputs();
  EXPECT_TRUE(bitwise_equal(c.models[0].predict(X).mean, plain.predict(X).mean));
  EXPECT_TRUE(bitwise_equal(c.models[0].predict(X).std, plain.predict(X).std));
  // Every member starts from its own weights, so no two end at the same bits.
  for (std::size_t a = 0; a < c.models.size(); ++a) {
    for (std::size_t b = a + 1; b < c.models.size(); ++b) {
      EXPECT_FALSE(bitwise_equal(posterior_mean(c.models[a].posterior), posterior_mean(c.models[b].posterior)))
          << "members " << a + 1 << " and " << b + 1;
    }
  }
  const StartOptions start = quick_laplace().start;
  EXPECT_EQ(committee_member_start(start, 0).seed, start.seed);
  EXPECT_NE(committee_member_start(start, 1).seed, committee_member_start(start, 2).seed);
  EXPECT_NE(committee_member_start(start, 1).seed, start.seed + 1);
}

TEST_F(CommitteeTest, WeightsAreTheNormalisedEvidenceWithTheSymmetryCount) {
  const Committee& c = *committee_;
  Eigen::VectorXd log_mass(static_cast<Index>(c.models.size()));
  for (std::size_t k = 0; k < c.models.size(); ++k) {
    const FitSummary& s = c.models[k].summary;
    ASSERT_TRUE(std::isfinite(s.log_evidence));
    log_mass[static_cast<Index>(k)] = s.log_evidence + s.symmetry_log_factor;
    EXPECT_EQ(c.members[k].log_evidence, log_mass[static_cast<Index>(k)]);
  }
  const Eigen::VectorXd expected =
      (log_mass.array() - log_mass.maxCoeff()).exp() / (log_mass.array() - log_mass.maxCoeff()).exp().sum();
  EXPECT_NEAR(c.weights.sum(), 1.0, 1e-15);
  for (Index k = 0; k < expected.size(); ++k) {
    EXPECT_NEAR(c.weights[k], expected[k], 1e-14) << "member " << k + 1;
    EXPECT_EQ(c.members[static_cast<std::size_t>(k)].weight, c.weights[k]);
  }
}

TEST_F(CommitteeTest, PredictsTheMixtureOfItsMembers) {
  const Committee& c = *committee_;
  const Eigen::MatrixXd X = test_inputs();
  const Prediction p = c.predict(X);
  const Eigen::VectorXd y = Eigen::VectorXd::LinSpaced(X.rows(), -1.0, 1.0);
  const Eigen::VectorXd log_density = c.log_predictive_density(X, y);
  for (Index r = 0; r < X.rows(); ++r) {
    double mean = 0.0, second = 0.0, density = 0.0, cdf_lower = 0.0, cdf_upper = 0.0;
    for (std::size_t k = 0; k < c.models.size(); ++k) {
      const Prediction q = c.models[k].predict(X);
      const double w = c.weights[static_cast<Index>(k)], mu = q.mean[r], s = q.std[r];
      mean += w * mu;
      second += w * (s * s + mu * mu);
      density += w * std::exp(-0.5 * std::pow((y[r] - mu) / s, 2)) / (s * std::sqrt(2.0 * std::numbers::pi));
      cdf_lower += w * normal_cdf((p.lower[r] - mu) / s);
      cdf_upper += w * normal_cdf((p.upper[r] - mu) / s);
    }
    EXPECT_NEAR(p.mean[r], mean, 1e-12 * (1.0 + std::abs(mean))) << "row " << r;
    EXPECT_NEAR(p.std[r] * p.std[r], second - mean * mean, 1e-10 * second) << "row " << r;
    EXPECT_NEAR(log_density[r], std::log(density), 1e-10) << "row " << r;
    // The interval's ends are the mixture's 2.5% and 97.5% quantiles.
    EXPECT_NEAR(cdf_lower, 0.025, 1e-9) << "row " << r;
    EXPECT_NEAR(cdf_upper, 0.975, 1e-9) << "row " << r;
  }
}

// The committee file: every member's model in one file, read back to predict the same bits, by
// column name too; and the report says how each member ended.
TEST_F(CommitteeTest, TheFileRoundTripsBitForBit) {
  const Committee& c = *committee_;
  TempDir dir;
  const std::string path = dir.file("committee.json");
  save_committee(path, c);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"committee.json"});  // no temporary left behind
  EXPECT_TRUE(is_committee_file(path));
  const Committee loaded = load_committee(path);
  ASSERT_EQ(loaded.models.size(), c.models.size());
  EXPECT_TRUE(bitwise_equal(loaded.weights, c.weights));
  EXPECT_EQ(loaded.options.members, c.options.members);
  EXPECT_EQ(loaded.options.weighting, c.options.weighting);
  for (std::size_t k = 0; k < c.members.size(); ++k) {
    EXPECT_EQ(loaded.members[k].index, c.members[k].index);
    EXPECT_EQ(loaded.members[k].log_evidence, c.members[k].log_evidence);
    EXPECT_EQ(loaded.members[k].weight, c.members[k].weight);
  }
  const Eigen::MatrixXd X = test_inputs();
  const Prediction a = c.predict(X), b = loaded.predict(X);
  expect_same_bits(a, b);
  Table table;
  table.columns = {"unused", "x"};
  table.values.resize(X.rows(), 2);
  table.values << Eigen::VectorXd::Constant(X.rows(), 7.0), X;
  const Prediction by_name = loaded.predict(table);
  EXPECT_TRUE(bitwise_equal(by_name.mean, a.mean));
  EXPECT_TRUE(bitwise_equal(by_name.upper, a.upper));
  // Saved again, the same bytes.
  save_committee(dir.file("again.json"), loaded);
  EXPECT_EQ(read_file(dir.file("again.json")), read_file(path));

  const nlohmann::json report = c.report();
  EXPECT_EQ(report["method"], "committee");
  ASSERT_EQ(report["members"].size(), c.members.size());
  bool all_converged = true;
  for (std::size_t k = 0; k < c.models.size(); ++k) {
    const std::string ended = to_string(c.models[k].summary.termination);
    EXPECT_EQ(report["members"][k]["termination"], ended);
    EXPECT_EQ(report["members"][k]["weight"].get<double>(), c.weights[static_cast<Index>(k)]);
    all_converged = all_converged && ended == "converged";
  }
  EXPECT_EQ(report["termination"] == "converged", all_converged) << report["termination"];
}

// What is not a committee, or not a whole one, is refused with a message that says so.
TEST_F(CommitteeTest, TheFileRefusesWhatIsNotAWholeCommittee) {
  const Committee& c = *committee_;
  TempDir dir;
  const std::string path = dir.file("committee.json");
  save_committee(path, c);
  const nlohmann::json good = nlohmann::json::parse(read_file(path));
  auto refused = [&](nlohmann::json j, const std::string& expected) {
    write_file_atomic(dir.file("bad.json"), j.dump());
    try {
      load_committee(dir.file("bad.json"));
      ADD_FAILURE() << "accepted a file that should fail with '" << expected << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput) << e.what();
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  nlohmann::json j = good;
  j["members"][1]["weight"] = 0.9;  // the weights no longer sum to 1
  refused(j, "sum to 1");
  j = good;
  j["models"].erase(j["models"].begin() + 1);
  refused(j, "3 models");
  j = good;
  j["version"] = 2;
  refused(j, "newer occam");
  j = good;
  j["models"][2]["features"] = {"z"};
  refused(j, "other inputs");
  j = good;
  j["models"][0]["posterior"]["mean"] = {1.0};
  refused(j, "models[0]");
  // A single model's file, and a committee read as one model, each name the right reader.
  save_model(dir.file("one.json"), c.models[0]);
  EXPECT_FALSE(is_committee_file(dir.file("one.json")));
  EXPECT_FALSE(is_committee_file(dir.path().string()));
  EXPECT_FALSE(is_committee_file(dir.file("missing.json")));
  write_file_atomic(dir.file("text.json"), "[\"format\", \"occam-committee\"]");
  EXPECT_FALSE(is_committee_file(dir.file("text.json")));  // not an object
  write_file_atomic(dir.file("nested.json"), R"({"spec": {"format": "occam-committee"}, "version": 1})");
  EXPECT_FALSE(is_committee_file(dir.file("nested.json")));  // not at the top level
  // Read only as far as its format: a committee file cut short is still one (load_committee then
  // says what is wrong with it).
  const std::string text = read_file(path);
  write_file_atomic(dir.file("cut.json"), text.substr(0, text.size() / 2));
  EXPECT_TRUE(is_committee_file(dir.file("cut.json")));
  EXPECT_THROW(load_committee(dir.file("cut.json")), Error);
  try {
    load_committee(dir.file("one.json"));
    ADD_FAILURE() << "a model file was read as a committee";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("load_model"), std::string::npos) << e.what();
  }
  // load_model reads a committee file as the one model of its mixture (committee_model).
  const FittedModel as_model = load_model(path);
  ASSERT_NE(as_model.committee(), nullptr);
  EXPECT_STREQ(posterior_kind(as_model.posterior), "committee");
  EXPECT_EQ(as_model.committee()->models.size(), load_committee(path).models.size());
}

// fit() is the one entry point: LaplaceMethod::committee gives the committee fit_committee
// gives, as a FittedModel whose posterior is the members' mixture, which predicts, reports,
// saves and loads as any model does, bit for bit.
TEST_F(CommitteeTest, FitWithTheCommitteeOptionIsTheCommitteeAsOneModel) {
  const Committee& c = *committee_;
  LaplaceMethod method = quick_laplace();
  method.committee = CommitteeOptions{};
  method.committee->members = 4;
  const FittedModel m = fit(small_network(), gap_dataset(), method);
  ASSERT_NE(m.committee(), nullptr);
  EXPECT_STREQ(posterior_kind(m.posterior), "committee");
  const Committee& mc = *m.committee();
  ASSERT_EQ(mc.models.size(), c.models.size());
  EXPECT_TRUE(bitwise_equal(mc.weights, c.weights));
  const Eigen::MatrixXd X = test_inputs();
  const Prediction expected = c.predict(X);
  expect_same_bits(m.predict(X), expected);
  // By column name as well.
  Table inputs;
  inputs.columns = {"x"};
  inputs.values = X;
  EXPECT_TRUE(bitwise_equal(m.predict(inputs).upper, expected.upper));
  EXPECT_EQ(m.summary.termination, c.termination());
  EXPECT_EQ(m.report.at("method"), "committee");
  EXPECT_EQ(m.report.at("members").size(), 4u);
  EXPECT_EQ(fit_report(m), m.report);
  EXPECT_EQ(brief_report(m), c.brief_report());
  EXPECT_EQ(m.feature_names, c.models[0].feature_names);
  EXPECT_EQ(m.network->num_params(), c.models[0].network->num_params());
  // The mixture's mean over the weights: Σ π_k w_k.
  Eigen::VectorXd mean = Eigen::VectorXd::Zero(m.network->num_params());
  for (std::size_t k = 0; k < c.models.size(); ++k)
    mean += c.weights[static_cast<Index>(k)] * posterior_mean(c.models[k].posterior);
  EXPECT_TRUE(posterior_mean(m.posterior).isApprox(mean, 1e-14));
  // A copy shares the committee; save_model writes the committee file, load_model reads it back.
  const FittedModel copy = m;
  EXPECT_EQ(copy.committee(), m.committee());
  TempDir dir;
  save_model(dir.file("m.json"), m);
  EXPECT_TRUE(is_committee_file(dir.file("m.json")));
  const FittedModel loaded = load_model(dir.file("m.json"));
  ASSERT_NE(loaded.committee(), nullptr);
  expect_same_bits(loaded.predict(X), expected);
  EXPECT_EQ(loaded.summary.termination, m.summary.termination);
  // Its method options, and what does not go with a committee, as fit() sees them.
  const nlohmann::json options = method_to_json(method);
  EXPECT_EQ(options.at("committee"), 4);
  EXPECT_EQ(options.at("committee_weighting"), "evidence");
  EXPECT_FALSE(method_to_json(quick_laplace()).contains("committee"));
  const MethodOptions read =
      method_from_json({{"method", "laplace"}, {"committee", 3}, {"committee_weighting", "equal"}});
  ASSERT_TRUE(std::get<LaplaceMethod>(read).committee.has_value());
  EXPECT_EQ(std::get<LaplaceMethod>(read).committee->members, 3);
  EXPECT_EQ(std::get<LaplaceMethod>(read).committee->weighting, CommitteeWeighting::kEqual);
  EXPECT_THROW(method_from_json({{"method", "laplace"}, {"committee_weighting", "equal"}}), Error);
  EXPECT_THROW(method_from_json({{"method", "vi"}, {"committee", 2}}), Error);
  EXPECT_THROW(method_from_json({{"method", "laplace"}, {"committee", 2}, {"noise_model", "network"}}), Error);
  PredictOptions draws;
  draws.keep_draws = true;
  EXPECT_THROW(m.predict(X, draws), Error);
  LaplaceMethod with_noise = method;
  with_noise.noise_model = HeteroscedasticOptions{};
  EXPECT_THROW(fit(small_network(), gap_dataset(), with_noise), Error);
}

TEST(Committee, ThreadsGiveTheSameCommitteeAndEqualWeightsAreEqual) {
  CommitteeOptions options;
  options.members = 3;
  const Committee serial = fit_committee(small_network(), gap_dataset(), quick_laplace(), options);
  options.threads = 2;
  options.weighting = CommitteeWeighting::kEqual;
  const Committee threaded = fit_committee(small_network(), gap_dataset(), quick_laplace(), options);
  ASSERT_EQ(serial.models.size(), threaded.models.size());
  for (std::size_t k = 0; k < serial.models.size(); ++k) {
    EXPECT_TRUE(
        bitwise_equal(posterior_mean(serial.models[k].posterior), posterior_mean(threaded.models[k].posterior)));
    EXPECT_DOUBLE_EQ(threaded.weights[static_cast<Index>(k)], 1.0 / 3.0);
  }
}

// reweight_committee gives, without fitting, the committee fit_committee returns with the other
// weighting: its weights, the members' weights and its predictions the same to the last bit.
TEST(Committee, ReweightingIsTheCommitteeFittedWithThatWeighting) {
  CommitteeOptions options;
  options.members = 3;
  const Committee by_evidence = fit_committee(small_network(), gap_dataset(), quick_laplace(), options);
  options.weighting = CommitteeWeighting::kEqual;
  const Committee equal = fit_committee(small_network(), gap_dataset(), quick_laplace(), options);
  ASSERT_FALSE(bitwise_equal(by_evidence.weights, equal.weights));

  Committee reweighted = by_evidence;
  reweight_committee(&reweighted, CommitteeWeighting::kEqual);
  EXPECT_EQ(reweighted.options.weighting, CommitteeWeighting::kEqual);
  EXPECT_TRUE(bitwise_equal(reweighted.weights, equal.weights));
  for (std::size_t k = 0; k < equal.members.size(); ++k)
    EXPECT_EQ(reweighted.members[k].weight, equal.members[k].weight);
  const Prediction a = reweighted.predict(test_inputs()), b = equal.predict(test_inputs());
  EXPECT_TRUE(bitwise_equal(a.mean, b.mean));
  EXPECT_TRUE(bitwise_equal(a.std, b.std));

  reweight_committee(&reweighted, CommitteeWeighting::kEvidence);
  EXPECT_TRUE(bitwise_equal(reweighted.weights, by_evidence.weights));
  EXPECT_TRUE(bitwise_equal(reweighted.predict(test_inputs()).mean, by_evidence.predict(test_inputs()).mean));

  // No finite log-evidence: the evidence weighting is refused and the committee left as it was.
  Committee none = equal;
  for (CommitteeMember& m : none.members) m.log_evidence = std::nan("");
  EXPECT_THROW(reweight_committee(&none, CommitteeWeighting::kEvidence), Error);
  EXPECT_TRUE(bitwise_equal(none.weights, equal.weights));
  EXPECT_EQ(none.options.weighting, CommitteeWeighting::kEqual);
}

TEST(Committee, AnAbortStopsTheRunningMemberAndSkipsTheRest) {
  CommitteeOptions options;
  options.members = 3;
  int calls = 0;
  const FitCallback stop_early = [&calls](const FitProgress& p) {
    EXPECT_EQ(p.member, 0);
    return ++calls >= 3 ? CallbackReturn::kAbort : CallbackReturn::kContinue;
  };
  const Committee c = fit_committee(small_network(), gap_dataset(), quick_laplace(), options, stop_early);
  EXPECT_TRUE(c.interrupted);
  ASSERT_EQ(c.members.size(), 1u);
  EXPECT_EQ(c.models[0].summary.termination, Termination::kAborted);
  EXPECT_EQ(c.weights.size(), 1);
}

// The names of the files in a folder, sorted.
std::vector<std::string> names_in(const std::string& folder) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(folder)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// A committee stopped after its first member, then run again into its folder, is the committee one
// uninterrupted run gives, bit for bit: the member kept is read back, not fitted, the stopped one
// and the rest are fitted, and the time counts the member read back at its own fitting time.
TEST(Committee, AFolderKeepsEachMemberAndARunAgainContinuesWhereItStopped) {
  CommitteeOptions options;
  options.members = 3;
  const Committee whole = fit_committee(small_network(), gap_dataset(), quick_laplace(), options);

  TempDir dir;
  options.directory = dir.file("members");
  int member_one_calls = 0;
  const FitCallback stop_in_member_two = [&](const FitProgress& p) {
    if (p.member == 0) ++member_one_calls;
    return p.member == 1 ? CallbackReturn::kAbort : CallbackReturn::kContinue;
  };
  const Committee stopped = fit_committee(small_network(), gap_dataset(), quick_laplace(), options, stop_in_member_two);
  EXPECT_TRUE(stopped.interrupted);
  ASSERT_GT(member_one_calls, 0);
  // Member 1 kept, member 2 (stopped) not, member 3 never started.
  EXPECT_EQ(names_in(options.directory), std::vector<std::string>{"member_1.json"});

  int calls_in_member_one = 0;
  const FitCallback watch = [&](const FitProgress& p) {
    if (p.member == 0) ++calls_in_member_one;
    return CallbackReturn::kContinue;
  };
  const Committee resumed = fit_committee(small_network(), gap_dataset(), quick_laplace(), options, watch);
  EXPECT_EQ(calls_in_member_one, 0);  // read back, not fitted
  EXPECT_FALSE(resumed.interrupted);
  ASSERT_EQ(resumed.members.size(), whole.members.size());
  ASSERT_EQ(resumed.models.size(), whole.models.size());
  for (std::size_t k = 0; k < whole.members.size(); ++k) {
    EXPECT_EQ(resumed.members[k].read_back, k == 0);
    EXPECT_EQ(resumed.members[k].log_evidence, whole.members[k].log_evidence);
    EXPECT_EQ(resumed.members[k].weight, whole.members[k].weight);
    EXPECT_EQ(resumed.models[k].summary.termination, whole.models[k].summary.termination);
    EXPECT_EQ(resumed.models[k].summary.num_data, whole.models[k].summary.num_data);
    EXPECT_TRUE(bitwise_equal(posterior_mean(resumed.models[k].posterior), posterior_mean(whole.models[k].posterior)));
  }
  EXPECT_TRUE(bitwise_equal(resumed.weights, whole.weights));
  expect_same_bits(resumed.predict(test_inputs()), whole.predict(test_inputs()));
  EXPECT_EQ(read_back_seconds(resumed), resumed.models[0].summary.seconds);
  EXPECT_GE(resumed.seconds, read_back_seconds(resumed));
  EXPECT_EQ(read_back_seconds(whole), 0.0);
  EXPECT_EQ(resumed.report()["members"][0]["read_back"], true);
  EXPECT_EQ(names_in(options.directory), (std::vector<std::string>{"member_1.json", "member_2.json", "member_3.json"}));

  // Every member read back: nothing fitted, the same committee.
  int calls = 0;
  const Committee again =
      fit_committee(small_network(), gap_dataset(), quick_laplace(), options, [&calls](const FitProgress&) {
        ++calls;
        return CallbackReturn::kContinue;
      });
  EXPECT_EQ(calls, 0);
  expect_same_bits(again.predict(test_inputs()), whole.predict(test_inputs()));

  // Other data, another network or another start: refused before any fit, naming what differs.
  Dataset other = gap_dataset();
  other.Y(3, 0) += 1e-9;
  ModelSpec wider = small_network();
  wider.network.hidden = {7};
  LaplaceMethod elsewhere = quick_laplace();
  elsewhere.start.seed = 4;
  const auto refused = [&](const ModelSpec& spec, const Dataset& data, const LaplaceMethod& method,
                           const std::string& naming) {
    try {
      fit_committee(spec, data, method, options);
      ADD_FAILURE() << "not refused: " << naming;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(naming), std::string::npos) << e.what();
    }
  };
  refused(small_network(), other, quick_laplace(), "data.fnv1a64");
  refused(wider, gap_dataset(), quick_laplace(), "spec.network.hidden");
  refused(small_network(), gap_dataset(), elsewhere, "seed");

  // A damaged member file is reported as such.
  write_file_atomic(options.directory + "/member_2.json", "{\"format\": \"occam-committee-member\", \"version\": 1,");
  try {
    fit_committee(small_network(), gap_dataset(), quick_laplace(), options);
    ADD_FAILURE() << "a damaged member file was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput) << e.what();
    EXPECT_NE(std::string(e.what()).find("member_2.json"), std::string::npos) << e.what();
  }
}

// Member 1 kept in a folder is the plain Laplace fit: read back, it is the mean a heteroscedastic
// fit starts from, and that fit is the one fit_heteroscedastic makes from the spec, bit for bit.
// Members running the joint ascent keep its checkpoint in the folder while they run: a member
// stopped part-way goes on from its last step, not from its start, and the committee ends as the
// uninterrupted one, bit for bit; the checkpoint is removed once the member's own file is written.
TEST(Committee, AMemberStoppedPartWayGoesOnFromItsCheckpoint) {
  LaplaceMethod method = quick_laplace();
  method.evidence.loop = EvidenceLoop::kJoint;
  CommitteeOptions options;
  options.members = 2;
  const Committee whole = fit_committee(small_network(), gap_dataset(), method, options);
  ASSERT_EQ(whole.models.size(), 2u);
  const int member_two_iterations = whole.models[1].summary.evidence->map_iterations;

  TempDir dir;
  options.directory = dir.file("members");
  int steps = 0;
  const Committee stopped = fit_committee(small_network(), gap_dataset(), method, options, [&](const FitProgress& p) {
    return p.member == 1 && p.evidence != nullptr && ++steps == 3 ? CallbackReturn::kAbort : CallbackReturn::kContinue;
  });
  EXPECT_TRUE(stopped.interrupted);
  EXPECT_EQ(names_in(options.directory), (std::vector<std::string>{"member_1.json", "member_2.checkpoint.json"}));

  int iterations_in_member_two = 0;
  const Committee resumed = fit_committee(small_network(), gap_dataset(), method, options, [&](const FitProgress& p) {
    if (p.member == 1 && p.map != nullptr) ++iterations_in_member_two;
    return CallbackReturn::kContinue;
  });
  EXPECT_GT(iterations_in_member_two, 0);
  EXPECT_LT(iterations_in_member_two, member_two_iterations);  // from its checkpoint, not its start
  ASSERT_EQ(resumed.models.size(), whole.models.size());
  for (std::size_t k = 0; k < whole.models.size(); ++k) {
    EXPECT_EQ(resumed.members[k].log_evidence, whole.members[k].log_evidence);
    EXPECT_TRUE(bitwise_equal(posterior_mean(resumed.models[k].posterior), posterior_mean(whole.models[k].posterior)));
  }
  expect_same_bits(resumed.predict(test_inputs()), whole.predict(test_inputs()));
  EXPECT_EQ(names_in(options.directory), (std::vector<std::string>{"member_1.json", "member_2.json"}));

  // One checkpoint for a whole committee is refused: the folder keeps one a member.
  method.checkpoint = dir.file("ascent.json");
  EXPECT_THROW(fit_committee(small_network(), gap_dataset(), method, options), Error);
}

TEST(Committee, TheKeptMemberOneIsTheMeanOfAHeteroscedasticFit) {
  TempDir dir;
  CommitteeOptions options;
  options.members = 2;
  options.directory = dir.file("members");
  const LaplaceMethod method = quick_laplace();
  fit_committee(small_network(), gap_dataset(), method, options);
  EXPECT_FALSE(read_committee_member(options.directory, 2, small_network(), gap_dataset(), method).has_value());
  std::optional<FittedModel> mean = read_committee_member(options.directory, 0, small_network(), gap_dataset(), method);
  ASSERT_TRUE(mean.has_value());
  const double mean_seconds = mean->summary.seconds;
  HeteroscedasticOptions noise = heteroscedastic_options_like(method);
  noise.weighted_refits = 0;
  const FittedModel from_spec = fit_heteroscedastic(small_network(), gap_dataset(), method, noise);
  const FittedModel from_mean = fit_heteroscedastic(std::move(*mean), gap_dataset(), method, noise);
  ASSERT_TRUE(from_spec.noise && from_mean.noise);
  EXPECT_TRUE(bitwise_equal(from_mean.noise->weights, from_spec.noise->weights));
  expect_same_bits(from_mean.predict(test_inputs()), from_spec.predict(test_inputs()));
  EXPECT_GE(from_mean.summary.seconds, mean_seconds);
  // With a refit the same too.
  noise.weighted_refits = 1;
  const FittedModel refit_spec = fit_heteroscedastic(small_network(), gap_dataset(), method, noise);
  const FittedModel refit_mean =
      fit_heteroscedastic(*read_committee_member(options.directory, 0, small_network(), gap_dataset(), method),
                          gap_dataset(), method, noise);
  expect_same_bits(refit_mean.predict(test_inputs()), refit_spec.predict(test_inputs()));
  // Another start is another member: refused, naming it.
  LaplaceMethod elsewhere = method;
  elsewhere.start.seed = 9;
  EXPECT_THROW(read_committee_member(options.directory, 0, small_network(), gap_dataset(), elsewhere), Error);
}

// Refused before the first fit when the members at once and the kept factors exceed the limit,
// though one fit alone would not.
TEST(Committee, RefusesACommitteeThatWouldNotFitInMemory) {
  // 200 units (W = 601): megabytes of W × W matrices, which the estimate counts.
  ModelSpec wide = small_network();
  wide.network.hidden = {200};
  LaplaceMethod method = quick_laplace();
  const MemoryEstimate one = estimate_fit_memory(fit_memory_request(wide, gap_dataset(), method));
  ASSERT_GT(one.bytes, 1e6);
  method.memory.max_bytes = 1.5 * one.bytes;
  EXPECT_NO_THROW(check_fit_memory(one, method.memory.max_bytes));  // one fit alone is allowed
  CommitteeOptions options;
  options.members = 3;
  options.threads = 3;
  int calls = 0;
  try {
    fit_committee(wide, gap_dataset(), method, options, [&calls](const FitProgress&) {
      ++calls;
      return CallbackReturn::kContinue;
    });
    ADD_FAILURE() << "a committee of three at once was accepted in 1.5 fits' memory";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("3 fits at once"), std::string::npos) << e.what();
  }
  EXPECT_EQ(calls, 0) << "a member started before the refusal";
  // The request: three fits at once and three kept factors; a structured approximation keeps none.
  const FitMemoryRequest request = committee_memory_request(wide, gap_dataset(), method, options);
  EXPECT_EQ(request.fits_at_once, 3);
  EXPECT_EQ(request.models_kept, 3);
  method.evidence.structure = parse_hessian_structure("diag");
  EXPECT_EQ(committee_memory_request(wide, gap_dataset(), method, options).models_kept, 0);
}

TEST(Committee, RefusesWhatItCannotMix) {
  ModelSpec counts = small_network();
  counts.likelihood.kind = LikelihoodKind::kPoisson;
  try {
    fit_committee(counts, gap_dataset(), quick_laplace());
    FAIL() << "a Poisson committee was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("gaussian or hetero"), std::string::npos) << e.what();
  }
  CommitteeOptions none;
  none.members = 0;
  EXPECT_THROW(fit_committee(small_network(), gap_dataset(), quick_laplace(), none), Error);
  EXPECT_EQ(parse_committee_weighting("equal"), CommitteeWeighting::kEqual);
  EXPECT_THROW(parse_committee_weighting("best"), Error);
}

}  // namespace
}  // namespace occam
