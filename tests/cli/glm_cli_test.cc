// The GLM parts of the command line end to end: classifier and count models fitted, saved and
// used for prediction; string class labels; the offset; `occam cv`; bad targets refused by row.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <algorithm>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>
#include <string>

#include "occam/rng.h"
#include "testing/cli_runner.h"
#include "testing/temp_dir.h"

namespace occam {
namespace {

using testing::TempDir;
using testing::CliRun;
using testing::occam;
using testing::quote;
using testing::read_text;
namespace fs = std::filesystem;

// x1, x2 ~ N(0, 1); a class from the logits (x1, x2, −x1 − x2) with labels words; a 0/1 target
// from σ(1.5 x1 − x2); a count ~ Poisson(e^{0.5 x1 + log exposure}).
void write_tables(const TempDir& dir, int m) {
  Rng rng(3);
  std::ofstream cls(dir.file("classes.csv")), bin(dir.file("binary.csv")), counts(dir.file("counts.csv"));
  cls << "x1,x2,animal\n";
  bin << "x1,x2,y\n";
  counts << "x1,x2,log_exposure,count\n";
  const char* labels[] = {"cat", "dog", "bird"};
  for (int n = 0; n < m; ++n) {
    const double x1 = rng.normal(), x2 = rng.normal();
    const double f[3] = {2 * x1, 2 * x2, -2 * (x1 + x2)};
    double z = 0;
    for (double v : f) z += std::exp(v);
    double u = rng.uniform() * z;
    int k = 0;
    while (k < 2 && u > std::exp(f[k])) u -= std::exp(f[k++]);
    cls << x1 << "," << x2 << "," << labels[k] << "\n";
    bin << x1 << "," << x2 << "," << (rng.uniform() < 1 / (1 + std::exp(-(1.5 * x1 - x2))) ? 1 : 0) << "\n";
    const double log_exposure = std::log(0.5 + 2 * rng.uniform());
    const double rate = std::exp(0.5 * x1 + log_exposure);
    int count = 0;
    for (double p = std::exp(-rate), c = p, v = rng.uniform(); v > c; c += (p *= rate / ++count)) {
    }
    counts << x1 << "," << x2 << "," << log_exposure << "," << count << "\n";
  }
}

TEST(GlmCli, CategoricalWithWordLabelsPredictsOneProbabilityColumnPerLabel) {
  TempDir dir;
  write_tables(dir, 200);
  CliRun fit =
      occam(dir, "fit --data classes.csv --target animal --model linear --likelihood categorical --out m.json");
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  EXPECT_NE(fit.out.find("accuracy"), std::string::npos);
  const auto model = nlohmann::json::parse(read_text(dir.file("m.json")));
  EXPECT_EQ(model["likelihood"]["labels"], nlohmann::json({"bird", "cat", "dog"}));
  CliRun pred = occam(dir, "predict --model m.json --data classes.csv --out p.csv");
  ASSERT_EQ(pred.exit_code, 0) << pred.err;
  const std::string csv = read_text(dir.file("p.csv"));
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "p_bird,p_cat,p_dog");
  // Each row's probabilities sum to one.
  std::istringstream rows(csv.substr(csv.find('\n') + 1));
  std::string line;
  int count = 0;
  while (std::getline(rows, line)) {
    double a, b, c;
    char comma;
    std::istringstream(line) >> a >> comma >> b >> comma >> c;
    EXPECT_NEAR(a + b + c, 1.0, 1e-12);
    ++count;
  }
  EXPECT_EQ(count, 200);
}

TEST(GlmCli, BernoulliWritesP0P1AndRefusesABadTargetByRow) {
  TempDir dir;
  write_tables(dir, 100);
  CliRun fit =
      occam(dir, "fit --data binary.csv --target y --model linear --likelihood bernoulli --prior ard --out b.json");
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  EXPECT_NE(fit.out.find("relevance"), std::string::npos) << fit.out;
  CliRun pred = occam(dir, "predict --model b.json --data binary.csv");
  ASSERT_EQ(pred.exit_code, 0) << pred.err;
  EXPECT_EQ(pred.out.substr(0, pred.out.find('\n')), "p_0,p_1");
  CliRun bad = occam(dir, "fit --data counts.csv --target x1 --model linear --likelihood bernoulli");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("counts.csv:2: column 'x1' (1): the target is"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("a bernoulli likelihood expects 0 or 1"), std::string::npos) << bad.err;
}

TEST(GlmCli, PoissonWithOffsetNeedsTheOffsetToPredict) {
  TempDir dir;
  write_tables(dir, 150);
  CliRun fit = occam(dir,
                     "fit --data counts.csv --target count --model linear --likelihood poisson "
                     "--offset log_exposure --hyper empirical-bayes --out c.json --report r.json");
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  const auto model = nlohmann::json::parse(read_text(dir.file("c.json")));
  EXPECT_EQ(model["offset"], "log_exposure");
  EXPECT_EQ(model["features"], nlohmann::json({"x1", "x2"}));
  CliRun pred = occam(dir, "predict --model c.json --data counts.csv");
  ASSERT_EQ(pred.exit_code, 0) << pred.err;
  EXPECT_EQ(pred.out.substr(0, pred.out.find('\n')), "mean,std,lower,upper");
  std::ofstream(dir.file("no_offset.csv")) << "x1,x2\n0.1,0.2\n";
  CliRun missing = occam(dir, "predict --model c.json --data no_offset.csv");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("log_exposure"), std::string::npos) << missing.err;
  CliRun wrong = occam(dir, "fit --data counts.csv --target x1 --model linear --likelihood poisson");
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_NE(wrong.err.find("counts.csv:2: column 'x1' (1): the target is"), std::string::npos) << wrong.err;
  EXPECT_NE(wrong.err.find("a poisson likelihood expects a non-negative integer count"), std::string::npos)
      << wrong.err;
}

// VI shares the predictive with the Laplace posterior, so a variational classifier and a
// variational count model answer in the same columns, and the Laplacian prior is refused.
TEST(GlmCli, VariationalFitsServeEveryLikelihood) {
  TempDir dir;
  write_tables(dir, 150);
  CliRun fit = occam(dir,
                     "fit --data binary.csv --target y --model linear --likelihood bernoulli --method vi "
                     "--family meanfield --vi-iterations 2000 --out b.json");
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  CliRun pred = occam(dir, "predict --model b.json --data binary.csv");
  ASSERT_EQ(pred.exit_code, 0) << pred.err;
  std::istringstream lines(pred.out);
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line, "p_0,p_1");
  int count = 0;
  while (std::getline(lines, line)) {
    double p0 = 0.0, p1 = 0.0;
    char comma = 0;
    std::istringstream(line) >> p0 >> comma >> p1;
    EXPECT_NEAR(p0 + p1, 1.0, 1e-12) << line;
    ++count;
  }
  EXPECT_EQ(count, 150);

  CliRun counts = occam(dir,
                        "fit --data counts.csv --target count --model linear --likelihood poisson "
                        "--offset log_exposure --method vi --family fullrank --vi-iterations 2000 --out c.json");
  ASSERT_EQ(counts.exit_code, 0) << counts.err;
  CliRun cpred = occam(dir, "predict --model c.json --data counts.csv");
  ASSERT_EQ(cpred.exit_code, 0) << cpred.err;
  EXPECT_EQ(cpred.out.substr(0, cpred.out.find('\n')), "mean,std,lower,upper");

  CliRun smooth = occam(dir,
                        "fit --data counts.csv --target count --model linear --likelihood poisson "
                        "--prior laplacian --grid 3 --method vi");
  EXPECT_EQ(smooth.exit_code, 2);
  EXPECT_NE(smooth.err.find("smoothing prior"), std::string::npos) << smooth.err;
}

TEST(GlmCli, CvWritesCsvAndMarksBothChoices) {
  TempDir dir;
  write_tables(dir, 120);
  CliRun cv = occam(dir,
                    "cv --data binary.csv --target y --model linear --likelihood bernoulli --alphas 1e-2:1e2:5 "
                    "--folds 4 --out-dir out");
  ASSERT_EQ(cv.exit_code, 0) << cv.err;
  EXPECT_NE(cv.out.find("<- CV"), std::string::npos) << cv.out;
  EXPECT_NE(cv.out.find("<- evidence"), std::string::npos) << cv.out;
  const std::string csv = read_text(dir.file("out/cv.csv"));
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "alpha,test_log_likelihood,test_log_likelihood_se,accuracy,accuracy_se,brier,brier_se,log_evidence,"
            "best_cv,best_evidence");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 6);
  // Same seed, same folds, same numbers.
  CliRun again = occam(dir,
                       "cv --data binary.csv --target y --model linear --likelihood bernoulli --alphas 1e-2:1e2:5 "
                       "--folds 4 --out-dir out2 --quiet");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(read_text(dir.file("out2/cv.csv")), csv);
}

TEST(GlmCli, OptionsThatDoNotFitTheLikelihoodAreRefused) {
  TempDir dir;
  write_tables(dir, 20);
  CliRun beta = occam(dir, "fit --data binary.csv --target y --likelihood bernoulli --beta 3");
  EXPECT_EQ(beta.exit_code, 2);
  EXPECT_NE(beta.err.find("--beta applies to --likelihood gaussian only"), std::string::npos) << beta.err;
  CliRun grid = occam(dir, "fit --data binary.csv --target y --likelihood bernoulli --prior laplacian");
  EXPECT_EQ(grid.exit_code, 2);
  EXPECT_NE(grid.err.find("--prior laplacian needs exactly one of --grid and --edges"), std::string::npos);
  CliRun nodes =
      occam(dir, "fit --data binary.csv --target y --model linear --likelihood bernoulli --prior laplacian --grid 3");
  EXPECT_EQ(nodes.exit_code, 2);
  EXPECT_NE(nodes.err.find("the smoothing graph has 3 nodes but the network has 2 inputs"), std::string::npos)
      << nodes.err;
}

}  // namespace
}  // namespace occam
