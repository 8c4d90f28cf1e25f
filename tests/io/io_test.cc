// The model file: a bit-identical round trip, and clear refusals of corrupt and future files.
#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "occam/io.h"
#include "occam/linear.h"
#include "occam/mlp.h"
#include "occam/status.h"
#include "inference/laplace/structured/precision_factors.h"
#include "testing/bitwise.h"
#include "testing/temp_dir.h"

namespace occam {
namespace {

using testing::bitwise_equal;
using testing::TempDir;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// A model with awkward numbers (no short decimal forms) in every field; no fit is needed.
ModelFile example_model() {
  ModelFile m;
  m.network = std::make_unique<Mlp>(2, std::vector<Index>{3}, Activation::kTanh, 1);
  m.likelihood = std::make_unique<GaussianLikelihood>(1.0 / 0.0123);
  const Index W = m.network->num_params();
  Rng rng(42);
  m.prior = Prior::from_network(*m.network, AlphaGroups::kDefault, 1.0);
  m.prior.set_alpha(rng.normal_vector(m.prior.num_groups()).array().exp().matrix());

  Dataset d;
  d.X = Eigen::MatrixXd::Random(10, 2);
  d.Y = Eigen::MatrixXd::Random(10, 1);
  m.standardizer = Standardizer::fit(d, Standardize::kBoth);
  m.feature_names = {"x1", "x2"};
  m.target_name = "y";

  LaplaceApproximation q;
  q.mean = rng.normal_vector(W) / 3.0;
  const Eigen::MatrixXd B = Eigen::MatrixXd::Random(W, W);
  const Eigen::MatrixXd A = B * B.transpose() + Eigen::MatrixXd::Identity(W, W) / 7.0;
  const Eigen::MatrixXd L = A.llt().matrixL();
  q.precision = std::make_shared<internal::DensePrecision>(L, 2.0 * L.diagonal().array().log().sum());
  m.posterior = std::move(q);
  m.report = {{"termination", "converged"}, {"log_evidence", -12.345678901234567}};
  return m;
}

TEST(ModelFile, RoundTripIsBitIdentical) {
  TempDir dir;
  const ModelFile original = example_model();
  const std::string path = dir.file("model.json");
  save_model(path, original);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"model.json"});  // no temporary left behind

  const ModelFile loaded = load_model(path);
  EXPECT_EQ(loaded.network->to_json(), original.network->to_json());
  EXPECT_EQ(loaded.likelihood->to_json(), original.likelihood->to_json());
  EXPECT_EQ(loaded.likelihood->precision(), original.likelihood->precision());
  EXPECT_TRUE(bitwise_equal(loaded.prior.alpha(), original.prior.alpha()));
  EXPECT_EQ(loaded.prior.group_of(), original.prior.group_of());
  EXPECT_EQ(loaded.standardizer.mode, original.standardizer.mode);
  EXPECT_TRUE(bitwise_equal(loaded.standardizer.x_mean, original.standardizer.x_mean));
  EXPECT_TRUE(bitwise_equal(loaded.standardizer.x_scale, original.standardizer.x_scale));
  EXPECT_EQ(loaded.standardizer.y_mean, original.standardizer.y_mean);
  EXPECT_EQ(loaded.standardizer.y_scale, original.standardizer.y_scale);
  EXPECT_EQ(loaded.feature_names, original.feature_names);
  EXPECT_EQ(loaded.target_name, original.target_name);
  const auto& loaded_q = std::get<LaplaceApproximation>(loaded.posterior);
  const auto& original_q = std::get<LaplaceApproximation>(original.posterior);
  EXPECT_TRUE(bitwise_equal(loaded_q.mean, original_q.mean));
  EXPECT_TRUE(bitwise_equal(loaded_q.precision_as<internal::DensePrecision>()->cholesky(),
                            original_q.precision_as<internal::DensePrecision>()->cholesky()));
  EXPECT_EQ(loaded.report, original.report);

  // Saved again, the file is the same byte for byte.
  const std::string again = dir.file("again.json");
  save_model(again, loaded);
  EXPECT_EQ(read_text(again), read_text(path));

  // And it predicts bit-identically, in the original units.
  const Eigen::MatrixXd X = Eigen::MatrixXd::Random(6, 2);
  PredictOptions options;
  const Prediction a = predict(original, X, options);
  const Prediction b = predict(loaded, X, options);
  EXPECT_TRUE(bitwise_equal(a.mean, b.mean));
  EXPECT_TRUE(bitwise_equal(a.std, b.std));
  EXPECT_TRUE(bitwise_equal(a.lower, b.lower));
  EXPECT_TRUE(bitwise_equal(a.upper, b.upper));
}

// The report's termination comes back as it was: a fit that ended without progress must not load
// as converged.
TEST(ModelFile, EveryTerminationIsReadBack) {
  TempDir dir;
  for (Termination t : {Termination::kConverged, Termination::kMaxIterations, Termination::kFailure,
                        Termination::kNoProgress, Termination::kAborted}) {
    ModelFile m = example_model();
    m.report["termination"] = to_string(t);
    save_model(dir.file("m.json"), m);
    EXPECT_EQ(load_model(dir.file("m.json")).summary.termination, t) << to_string(t);
  }
}

TEST(ModelFile, LinearModelRoundTrip) {
  TempDir dir;
  ModelFile m = example_model();
  m.network = std::make_unique<Linear>(2, 1, /*intercept=*/false);
  m.prior = Prior::from_network(*m.network, AlphaGroups::kSingle, 0.5);
  LaplaceApproximation q;
  q.mean.resize(2);
  q.mean << 0.25, -1.5;
  q.precision = std::make_shared<internal::DensePrecision>(Eigen::Matrix2d::Identity(), 0.0);
  m.posterior = std::move(q);
  save_model(dir.file("m.json"), m);
  const ModelFile loaded = load_model(dir.file("m.json"));
  EXPECT_EQ(loaded.network->to_json(), m.network->to_json());
  EXPECT_EQ(loaded.network->num_params(), 2);
}

TEST(ModelFile, PredictionsAreInTheOriginalUnits) {
  const ModelFile m = example_model();
  const Eigen::MatrixXd X = Eigen::MatrixXd::Random(4, 2);
  const Prediction original = predict(m, X, PredictOptions{});
  const Prediction standardised = predict(*m.network, *m.likelihood, std::get<LaplaceApproximation>(m.posterior),
                                          m.standardizer.transform_inputs(X), PredictOptions{});
  const Standardizer& s = m.standardizer;
  for (Index n = 0; n < X.rows(); ++n) {
    EXPECT_DOUBLE_EQ(original.mean[n], s.y_mean + s.y_scale * standardised.mean[n]);
    EXPECT_DOUBLE_EQ(original.std[n], s.y_scale * standardised.std[n]);
    EXPECT_DOUBLE_EQ(original.lower[n], s.y_mean + s.y_scale * standardised.lower[n]);
    EXPECT_DOUBLE_EQ(original.upper[n], s.y_mean + s.y_scale * standardised.upper[n]);
  }
  EXPECT_THROW(predict(m, Eigen::MatrixXd::Zero(2, 3), PredictOptions{}), Error);
}

// load_model's error on a file holding `text`, which must be kInvalidInput and name the file.
std::string load_error(const std::string& text) {
  TempDir dir;
  const std::string path = dir.file("model.json");
  write_text(path, text);
  try {
    load_model(path);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput) << e.what();
    const std::string message = e.what();
    EXPECT_EQ(message.rfind(path, 0), 0u) << "the message does not start with the file name: " << message;
    return message.substr(path.size());
  }
  ADD_FAILURE() << "load_model accepted:\n" << text.substr(0, 400);
  return "";
}

nlohmann::json example_json() {
  TempDir dir;
  save_model(dir.file("m.json"), example_model());
  return nlohmann::json::parse(read_text(dir.file("m.json")));
}

TEST(ModelFile, RefusesAFutureVersion) {
  nlohmann::json j = example_json();
  j["version"] = kModelFormatVersion + 1;
  EXPECT_EQ(load_error(j.dump()), " was written by a newer occam (format version " +
                                      std::to_string(kModelFormatVersion + 1) + "); this occam reads version " +
                                      std::to_string(kModelFormatVersion));
}

TEST(ModelFile, RefusesTruncatedJson) {
  const std::string text = example_json().dump(1);
  const std::string message = load_error(text.substr(0, text.size() / 2));
  EXPECT_NE(message.find("is not a valid occam model file: JSON parse error"), std::string::npos) << message;
}

TEST(ModelFile, RefusesSomethingElse) {
  EXPECT_NE(load_error("[1, 2, 3]").find("not a JSON object"), std::string::npos);
  EXPECT_NE(load_error(R"({"format": "other"})").find("\"format\": \"occam-model\""), std::string::npos);
  EXPECT_NE(load_error("").find("JSON parse error"), std::string::npos);
}

TEST(ModelFile, RefusesAMissingField) {
  for (const char* name :
       {"version", "network", "likelihood", "prior", "standardizer", "features", "target", "posterior"}) {
    nlohmann::json j = example_json();
    j.erase(name);
    EXPECT_NE(load_error(j.dump()).find(std::string("missing field '") + name + "'"), std::string::npos) << name;
  }
}

TEST(ModelFile, RefusesWrongSizes) {
  nlohmann::json j = example_json();
  j["features"] = {"x1"};
  EXPECT_NE(load_error(j.dump()).find("'features' has 1 entries but the network needs 2"), std::string::npos);

  j = example_json();
  j["standardizer"]["x_mean"].push_back(1.0);
  j["standardizer"]["x_scale"].push_back(1.0);
  EXPECT_NE(load_error(j.dump()).find("'standardizer' x_mean has 3 entries but the network needs 2"),
            std::string::npos);

  // A posterior for another network: every size check, whichever fires first, names the field.
  j = example_json();
  j["network"] = Mlp(2, {4}, Activation::kTanh, 1).to_json();
  const std::string message = load_error(j.dump());
  EXPECT_TRUE(message.find("'prior'") != std::string::npos || message.find("'posterior'") != std::string::npos)
      << message;
}

TEST(ModelFile, RefusesMalformedFields) {
  nlohmann::json j = example_json();
  j["target"] = 3;
  EXPECT_NE(load_error(j.dump()).find("field 'target'"), std::string::npos);
  j = example_json();
  j["features"] = "x1,x2";
  EXPECT_NE(load_error(j.dump()).find("field 'features'"), std::string::npos);
  j = example_json();
  j["standardizer"]["y_scale"] = -1.0;
  EXPECT_NE(load_error(j.dump()).find("field 'standardizer'"), std::string::npos);
  j = example_json();
  j["version"] = "1";
  EXPECT_NE(load_error(j.dump()).find("'version' is not a positive integer"), std::string::npos);
}

TEST(ModelFile, MissingFileIsAnIoError) {
  TempDir dir;
  try {
    load_model(dir.file("absent.json"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_NE(std::string(e.what()).find("absent.json"), std::string::npos);
  }
}

TEST(ModelFile, UnwritablePathIsAnIoErrorAndWritesNothing) {
  TempDir dir;
  try {
    save_model(dir.file("no/dir/model.json"), example_model());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
  }
  EXPECT_TRUE(dir.entries().empty());
}

}  // namespace
}  // namespace occam
