// Enum names (types.h): one table per enum, from which each enum's parse_* and to_string, its error
// message and the command line's lists of choices are made.
#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>

#include "occam/committee.h"
#include "occam/data.h"
#include "occam/evidence.h"
#include "occam/map.h"
#include "occam/mcmc/isokinetic.h"
#include "occam/mcmc/metric.h"
#include "occam/mcmc/network_model.h"
#include "occam/mcmc/sampler.h"
#include "occam/minibatch_map.h"
#include "occam/mlp.h"
#include "occam/model_spec.h"
#include "occam/posterior.h"
#include "occam/predict.h"
#include "occam/prior.h"
#include "occam/status.h"
#include "occam/types.h"
#include "occam/vi.h"

namespace occam {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    return e.what();
  }
  return "no error";
}

// Every name and alias parses to its value, every value prints as its first name, the names a
// front end offers are distinct, and an unknown name is refused with the known ones listed.
template <typename Enum>
void check_table(const char* unknown_name) {
  const EnumNames<Enum>& t = enum_names<Enum>();
  SCOPED_TRACE(t.what);
  ASSERT_FALSE(t.entries.empty());
  for (const EnumName<Enum>& e : t.entries) {
    EXPECT_EQ(t.parse(e.name), e.value) << e.name;
    EXPECT_EQ(t.parse(t.name(e.value)), e.value) << e.name;
  }
  const std::vector<std::string> names = t.names();
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
  std::string known;
  for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
  EXPECT_EQ(error_of([&] { t.parse(unknown_name); }),
            "unknown " + std::string(t.what) + " '" + unknown_name + "' (known: " + known + ")");
}

TEST(EnumNames, EveryTableParsesWhatItPrintsAndListsItsNamesWhenItRefuses) {
  check_table<Activation>("cosine");
  check_table<AlphaGroups>("pairs");
  check_table<CommitteeWeighting>("bagged");
  check_table<CurvatureForm>("sparse");
  check_table<EvidenceGradient>("partial");
  check_table<EvidenceLoop>("inner");
  check_table<HessianKind>("fisher");
  check_table<HyperStrategy>("sampled");
  check_table<LearningRateSchedule>("step");
  check_table<LikelihoodKind>("gamma");
  check_table<NetworkKind>("cnn");
  check_table<Optimizer>("rmsprop");
  check_table<PredictiveMethod>("exact");
  check_table<PriorKind>("horseshoe");
  check_table<Standardize>("minmax");
  check_table<Termination>("stalled");
  check_table<VariationalHyper>("adam");
  check_table<mcmc::InitKind>("zero");
  check_table<mcmc::IsokineticIntegrator>("yoshida");
  check_table<mcmc::MetricKind>("block");
  check_table<mcmc::SamplerKind>("gibbs");
}

// The public parse_* and to_string go through the tables: their messages are the table's, and an
// alias prints as its value's name.
TEST(EnumNames, ParseAndToStringAreTheTables) {
  EXPECT_EQ(error_of([] { parse_activation("cosine"); }),
            "unknown activation 'cosine' (known: tanh, relu, sigmoid, softplus, identity)");
  EXPECT_EQ(error_of([] { mcmc::parse_sampler_kind("gibbs"); }),
            "unknown sampler 'gibbs' (known: nuts, hmc, metropolis, sgld, sghmc, mclmc, mams)");
  EXPECT_EQ(error_of([] { parse_predictive_method("exact"); }),
            "unknown predictive 'exact' (known: auto, linearized, mc, linearized-mc, bridge, plug-in)");
  EXPECT_EQ(parse_predictive_method("probit"), PredictiveMethod::kLinearized);
  EXPECT_STREQ(to_string(parse_predictive_method("linearised-mc")), "linearized-mc");
  EXPECT_STREQ(to_string(parse_variational_hyper("elbo-closed")), "closed-form");
  EXPECT_STREQ(to_string(Termination::kMaxIterations), "maximum_iterations");
  EXPECT_STREQ(to_string(EvidenceGradient::kModeHeld), "mode_held");
  // A metric parses by the names a user types and prints, in files, by Stan's.
  EXPECT_EQ(mcmc::parse_metric_kind("diag"), mcmc::MetricKind::kDiagonal);
  EXPECT_STREQ(mcmc::to_string(mcmc::MetricKind::kDiagonal), "diag_e");
  EXPECT_EQ(enum_names<Standardize>().names_except({Standardize::kCenter}),
            (std::vector<std::string>{"both", "inputs", "none"}));
}

}  // namespace
}  // namespace occam
