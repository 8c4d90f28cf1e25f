// types.cc — every enum's names, one table per enum (types.h). Each enum's parse_* and to_string
// are one-line calls into its table; the command line builds its lists of choices from them.

#include "occam/types.h"

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
#include "occam/vi.h"

namespace occam {

namespace internal {
void throw_unknown_name(const char* what, std::string_view name, const std::vector<std::string>& known) {
  std::string list;
  for (std::size_t i = 0; i < known.size(); ++i) list += (i > 0 ? ", " : "") + known[i];
  throw Error(ErrorKind::kInvalidArgument,
              "unknown " + std::string(what) + " '" + std::string(name) + "' (known: " + list + ")");
}
}  // namespace internal

// The table of one enum, made once.
#define OCCAM_ENUM_NAMES(Enum, what, ...)                     \
  template <>                                                 \
  const EnumNames<Enum>& enum_names<Enum>() {                 \
    static const EnumNames<Enum> kNames{what, {__VA_ARGS__}}; \
    return kNames;                                            \
  }

OCCAM_ENUM_NAMES(Activation, "activation", {Activation::kTanh, "tanh"}, {Activation::kRelu, "relu"},
                 {Activation::kSigmoid, "sigmoid"}, {Activation::kSoftplus, "softplus"},
                 {Activation::kIdentity, "identity"})
OCCAM_ENUM_NAMES(AlphaGroups, "alpha groups", {AlphaGroups::kDefault, "default"}, {AlphaGroups::kSingle, "single"})
OCCAM_ENUM_NAMES(CommitteeWeighting, "committee weighting", {CommitteeWeighting::kEvidence, "evidence"},
                 {CommitteeWeighting::kEqual, "equal"})
OCCAM_ENUM_NAMES(CurvatureForm, "curvature form", {CurvatureForm::kAuto, "auto"}, {CurvatureForm::kDense, "dense"},
                 {CurvatureForm::kWoodbury, "woodbury"})
OCCAM_ENUM_NAMES(EvidenceGradient, "evidence gradient", {EvidenceGradient::kNone, "none"},
                 {EvidenceGradient::kModeHeld, "mode_held"}, {EvidenceGradient::kTotal, "total"},
                 {EvidenceGradient::kQuick, "quick"})
OCCAM_ENUM_NAMES(EvidenceLoop, "evidence loop", {EvidenceLoop::kJoint, "joint"}, {EvidenceLoop::kOuter, "outer"},
                 {EvidenceLoop::kOnline, "online"}, {EvidenceLoop::kAuto, "auto"})
OCCAM_ENUM_NAMES(HessianKind, "hessian", {HessianKind::kGgn, "ggn"}, {HessianKind::kExact, "exact"})
OCCAM_ENUM_NAMES(HyperStrategy, "hyper", {HyperStrategy::kFixed, "fixed"}, {HyperStrategy::kEvidence, "evidence"},
                 {HyperStrategy::kPeriodic, "periodic"}, {HyperStrategy::kQuick, "quick"},
                 {HyperStrategy::kIntegrate, "integrate"})
OCCAM_ENUM_NAMES(LearningRateSchedule, "learning-rate schedule", {LearningRateSchedule::kConstant, "constant"},
                 {LearningRateSchedule::kCosine, "cosine"})
OCCAM_ENUM_NAMES(LikelihoodKind, "likelihood", {LikelihoodKind::kGaussian, "gaussian"},
                 {LikelihoodKind::kBernoulli, "bernoulli"}, {LikelihoodKind::kPoisson, "poisson"},
                 {LikelihoodKind::kCategorical, "categorical"}, {LikelihoodKind::kHetero, "hetero"})
OCCAM_ENUM_NAMES(NetworkKind, "network kind", {NetworkKind::kMlp, "mlp"}, {NetworkKind::kLinear, "linear"})
OCCAM_ENUM_NAMES(Optimizer, "optimizer", {Optimizer::kAuto, "auto"}, {Optimizer::kLevenbergMarquardt, "lm"},
                 {Optimizer::kNewton, "newton"}, {Optimizer::kLbfgs, "lbfgs"}, {Optimizer::kAdam, "adam"},
                 {Optimizer::kSgd, "sgd"})
OCCAM_ENUM_NAMES(PredictiveMethod, "predictive", {PredictiveMethod::kAuto, "auto"},
                 {PredictiveMethod::kLinearized, "linearized"}, {PredictiveMethod::kLinearized, "linearised"},
                 {PredictiveMethod::kLinearized, "probit"}, {PredictiveMethod::kMonteCarlo, "mc"},
                 {PredictiveMethod::kLinearizedMonteCarlo, "linearized-mc"},
                 {PredictiveMethod::kLinearizedMonteCarlo, "linearised-mc"},
                 {PredictiveMethod::kLaplaceBridge, "bridge"}, {PredictiveMethod::kPlugIn, "plug-in"})
OCCAM_ENUM_NAMES(PriorKind, "prior", {PriorKind::kRidge, "ridge"}, {PriorKind::kGroups, "groups"},
                 {PriorKind::kArd, "ard"}, {PriorKind::kLaplacian, "laplacian"})
OCCAM_ENUM_NAMES(Standardize, "standardize", {Standardize::kBoth, "both"}, {Standardize::kInputs, "inputs"},
                 {Standardize::kNone, "none"}, {Standardize::kCenter, "center"})
OCCAM_ENUM_NAMES(Termination, "termination", {Termination::kConverged, "converged"},
                 {Termination::kMaxIterations, "maximum_iterations"}, {Termination::kFailure, "failure"},
                 {Termination::kNoProgress, "no_progress"}, {Termination::kAborted, "aborted"})
// "elbo" and "elbo-closed" are the command line's names for them (--method vi --hyper ...).
OCCAM_ENUM_NAMES(VariationalHyper, "variational hyper", {VariationalHyper::kFixed, "fixed"},
                 {VariationalHyper::kGradient, "gradient"}, {VariationalHyper::kClosedForm, "closed-form"},
                 {VariationalHyper::kGradient, "elbo"}, {VariationalHyper::kClosedForm, "elbo-closed"})
OCCAM_ENUM_NAMES(mcmc::InitKind, "initialisation", {mcmc::InitKind::kPrior, "prior"}, {mcmc::InitKind::kMap, "map"},
                 {mcmc::InitKind::kLaplace, "laplace"})
OCCAM_ENUM_NAMES(mcmc::IsokineticIntegrator, "integrator", {mcmc::IsokineticIntegrator::kLeapfrog, "leapfrog"},
                 {mcmc::IsokineticIntegrator::kMinimalNorm, "minimal_norm"})
OCCAM_ENUM_NAMES(mcmc::MetricKind, "metric", {mcmc::MetricKind::kUnit, "unit"}, {mcmc::MetricKind::kDiagonal, "diag"},
                 {mcmc::MetricKind::kDense, "dense"})
OCCAM_ENUM_NAMES(mcmc::SamplerKind, "sampler", {mcmc::SamplerKind::kNuts, "nuts"}, {mcmc::SamplerKind::kHmc, "hmc"},
                 {mcmc::SamplerKind::kMetropolis, "metropolis"}, {mcmc::SamplerKind::kSgld, "sgld"},
                 {mcmc::SamplerKind::kSghmc, "sghmc"}, {mcmc::SamplerKind::kMclmc, "mclmc"},
                 {mcmc::SamplerKind::kMams, "mams"})

#undef OCCAM_ENUM_NAMES

}  // namespace occam
