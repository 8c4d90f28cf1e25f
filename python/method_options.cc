// method_options.cc — the Python module's method options as the library's MethodOptions. The
// keys are the command line's flags with '_' for '-' (occam fit, occam sample), so that one
// table in docs/python.md maps both, and the values are parsed by the library's own parse_*.

#include "method_options.h"

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "occam/status.h"

namespace occam::python {
namespace {

// The keys of one options object, each read at most once; what is left over is a misspelt or
// misplaced key, refused with the keys that would have been read.
class Keys {
 public:
  explicit Keys(const nlohmann::json& j) : j_(j) {
    if (!j.is_object()) throw Error(ErrorKind::kInvalidArgument, "method options: not a JSON object");
  }

  template <typename T>
  T get(const std::string& key, T fallback) {
    known_.insert(key);
    if (!j_.contains(key) || j_.at(key).is_null()) return fallback;
    try {
      return j_.at(key).get<T>();
    } catch (const nlohmann::json::exception&) {
      throw Error(ErrorKind::kInvalidArgument, "method options: '" + key + "' = " + j_.at(key).dump() + " has the wrong type");
    }
  }

  void check_all_read(const std::string& method) const {
    for (const auto& [key, value] : j_.items()) {
      if (known_.count(key) == 0) {
        std::string names;
        for (const std::string& k : known_) names += (names.empty() ? "" : ", ") + k;
        throw Error(ErrorKind::kInvalidArgument,
                    "method options: '" + key + "' does not apply to method '" + method + "' (it takes " + names + ")");
      }
    }
  }

 private:
  const nlohmann::json& j_;
  std::set<std::string> known_;
};

// optimizer "adam" | "sgd" and evidence_loop "online" (as `occam fit --optimizer adam|sgd`,
// `--evidence-loop online`): the minibatch and online keys, read only there.
void apply_minibatch_keys(Keys& keys, EvidenceOptions* options) {
  const bool online = options->loop == EvidenceLoop::kOnline;
  if (!online && !is_minibatch(options->map.optimizer)) return;
  MinibatchOptions& m = options->online.minibatch;
  if (is_minibatch(options->map.optimizer)) m.optimizer = options->map.optimizer;
  m.epochs = keys.get<int>("epochs", m.epochs);
  m.batch_size = keys.get<Index>("batch_size", m.batch_size);
  m.learning_rate = keys.get<double>("learning_rate", m.learning_rate);
  m.schedule = parse_learning_rate_schedule(keys.get<std::string>("lr_schedule", "constant"));
  m.seed = options->map.seed;
  if (is_minibatch(options->map.optimizer)) {
    options->map.max_iterations = keys.get<int>("epochs", options->map.max_iterations);
    options->map.batch_size = m.batch_size;
    options->map.learning_rate = m.learning_rate;
  }
  if (!online) return;
  if (is_minibatch(options->map.optimizer)) options->map.optimizer = Optimizer::kAuto;  // the polish is full-batch
  options->online.burn_in = keys.get<int>("burn_in", options->online.burn_in);
  options->online.evidence_every = keys.get<int>("evidence_every", options->online.evidence_every);
  options->online.hyper_steps = keys.get<int>("hyper_steps", options->online.hyper_steps);
  options->online.polish = keys.get<bool>("polish", options->online.polish);
}

// "evidence" and "empirical-bayes" are the same loop (the hyperparameters by maximum evidence,
// then the MAP at them); "elbo" keys a VI fit's starting MAP run, which is a plain evidence fit.
EvidenceOptions evidence_options(Keys& keys, std::uint64_t seed, const std::string& hyper) {
  EvidenceOptions options;
  const bool evidence = hyper == "evidence" || hyper == "empirical-bayes" || hyper == "elbo" || hyper == "elbo-closed";
  options.strategy = evidence ? HyperStrategy::kEvidence : parse_hyper_strategy(hyper);
  options.hessian = parse_hessian_kind(keys.get<std::string>("hessian", "ggn"));
  options.structure = parse_hessian_structure(keys.get<std::string>("hessian_structure", "full"));
  options.map.optimizer = parse_optimizer(keys.get<std::string>("optimizer", "auto"));
  options.loop = parse_evidence_loop(keys.get<std::string>("evidence_loop", "joint"));
  options.map.max_iterations = keys.get<int>("max_iterations", options.map.max_iterations);
  options.map.gradient_tolerance = keys.get<double>("gradient_tolerance", options.map.gradient_tolerance);
  options.hyper_gradient_tolerance = keys.get<double>("hyper_gradient_tolerance", options.hyper_gradient_tolerance);
  options.max_outer_iterations = keys.get<int>("max_hyper_iterations", options.max_outer_iterations);
  options.map.seed = seed;
  apply_minibatch_keys(keys, &options);
  options.validate();
  return options;
}

SamplingMethod sampling_method(Keys& keys, const std::string& kernel, std::uint64_t seed) {
  SamplingMethod method;
  mcmc::SamplerOptions& o = method.sampler;
  o.method = mcmc::parse_sampler_kind(kernel);
  o.chains = keys.get<int>("chains", o.chains);
  o.threads = keys.get<int>("threads", o.threads);
  o.num_warmup = keys.get<int>("warmup", o.num_warmup);
  o.num_draws = keys.get<int>("draws", o.num_draws);
  o.thin = keys.get<int>("thin", o.thin);
  o.seed = seed;
  o.metric = mcmc::parse_metric_kind(keys.get<std::string>("metric", "diag"));
  // As `occam sample --step-size 0`: 1 for HMC and NUTS, 2.38/√W for Metropolis.
  const double step = keys.get<double>("step_size", 0.0);
  o.initial_step_size = step > 0.0 ? step : (o.method == mcmc::SamplerKind::kMetropolis ? 0.0 : 1.0);
  o.target_accept = keys.get<double>("target_accept", o.target_accept);
  o.nuts.max_depth = keys.get<int>("max_depth", o.nuts.max_depth);
  o.hmc.num_steps = keys.get<int>("leapfrog_steps", o.hmc.num_steps);
  o.hmc.jitter = keys.get<double>("jitter", o.hmc.jitter);
  const std::string precondition = keys.get<std::string>("precondition", "none");
  if (mcmc::is_stochastic_gradient(o.method)) {
    // As `occam sample --method sgld|sghmc`: the step size is required (never adapted).
    if (!(step > 0.0)) {
      throw Error(ErrorKind::kInvalidArgument, "method options: " + kernel + " needs step_size (it is not adapted)");
    }
    mcmc::StochasticGradientOptions& sg = o.stochastic_gradient;
    sg.batch_size = keys.get<Index>("batch_size", sg.batch_size);
    sg.friction = keys.get<double>("friction", sg.friction);
    sg.cycles = keys.get<int>("cycles", sg.cycles);
    sg.exploration = keys.get<double>("exploration", sg.exploration);
    sg.gibbs_every = keys.get<int>("gibbs_every", sg.gibbs_every);
    sg.rmsprop = precondition == "rmsprop";
  }
  o.validate();
  const std::string hyper = keys.get<std::string>("hyper", "gibbs");
  if (hyper != "gibbs" && hyper != "fixed") {
    throw Error(ErrorKind::kInvalidArgument, "method options: hyper = '" + hyper + "': MCMC takes 'gibbs' or 'fixed'");
  }
  method.chains.gibbs = hyper == "gibbs";
  method.chains.hyper.alpha = {.shape = keys.get<double>("hyper_shape", mcmc::GammaPrior{}.shape),
                               .rate = keys.get<double>("hyper_rate", mcmc::GammaPrior{}.rate)};
  method.chains.hyper.beta = method.chains.hyper.alpha;
  method.chains.init = mcmc::parse_init_kind(keys.get<std::string>("init", "map"));
  const std::string parameterization = keys.get<std::string>("parameterization", "centered");
  if (parameterization != "centered" && parameterization != "noncentered") {
    throw Error(ErrorKind::kInvalidArgument,
                "method options: parameterization = '" + parameterization + "': 'centered' or 'noncentered'");
  }
  method.chains.non_centered = parameterization == "noncentered";
  if (precondition != "none" && precondition != "laplace" && precondition != "rmsprop") {
    throw Error(ErrorKind::kInvalidArgument,
                "method options: precondition = '" + precondition + "': 'none', 'laplace' or 'rmsprop' (sgld, sghmc)");
  }
  method.laplace_metric = precondition == "laplace";
  return method;
}

}  // namespace

MethodOptions method_from_json(const nlohmann::json& j) {
  Keys keys(j);
  const std::string method = keys.get<std::string>("method", "laplace");
  const std::uint64_t seed = keys.get<std::uint64_t>("seed", 1);
  StartOptions start;
  start.seed = seed;
  MethodOptions result;
  if (method == "laplace" || method == "map") {
    const std::string hyper = keys.get<std::string>("hyper", "evidence");
    if (hyper == "elbo" || hyper == "elbo-closed") {
      throw Error(ErrorKind::kInvalidArgument, "method options: hyper = '" + hyper + "' needs method 'vi'");
    }
    EvidenceOptions evidence = evidence_options(keys, seed, hyper);
    // As the command line's --threads: the sums over the rows on that many threads.
    DataParallel parallel;
    parallel.threads = keys.get<int>("threads", 1);
    if (parallel.threads < 1) {
      throw Error(ErrorKind::kInvalidArgument, "method options: threads = " + std::to_string(parallel.threads) +
                                                   ": must be at least 1");
    }
    if (method == "map") {
      if (hyper != "fixed") {
        throw Error(ErrorKind::kInvalidArgument,
                    "method options: method 'map' keeps α and β as given: hyper must be 'fixed', not '" + hyper + "'");
      }
      result = MapMethod{evidence.map, start, {}, parallel};
    } else {
      result = LaplaceMethod{evidence, start, {}, parallel};
    }
  } else if (method == "vi") {
    const std::string hyper = keys.get<std::string>("hyper", "elbo");
    if (hyper != "elbo" && hyper != "elbo-closed" && hyper != "fixed") {
      throw Error(ErrorKind::kInvalidArgument,
                  "method options: method 'vi' sets α and β by hyper 'elbo', 'elbo-closed' or 'fixed', not '" + hyper + "'");
    }
    VariationalMethod vi;
    vi.start_map = evidence_options(keys, seed, hyper);
    vi.start = start;
    VariationalOptions& v = vi.variational;
    v.family = parse_variational_family(keys.get<std::string>("family", "fullrank"));
    v.hyper = hyper == "fixed"         ? VariationalHyper::kFixed
              : hyper == "elbo-closed" ? VariationalHyper::kClosedForm
                                       : VariationalHyper::kGradient;
    v.mc_samples = keys.get<int>("mc_samples", v.mc_samples);
    v.batch_size = keys.get<Index>("batch_size", v.batch_size);
    v.max_iterations = keys.get<int>("vi_iterations", v.max_iterations);
    v.learning_rate = keys.get<double>("learning_rate", v.learning_rate);
    v.relative_tolerance = keys.get<double>("vi_tolerance", v.relative_tolerance);
    v.seed = seed;
    v.validate();
    result = vi;
  } else if (method == "nuts" || method == "hmc" || method == "metropolis" || method == "sgld" || method == "sghmc" ||
             method == "mclmc" || method == "mams") {
    result = sampling_method(keys, method, seed);
  } else {
    throw Error(ErrorKind::kInvalidArgument, "method options: method = '" + method +
                                                 "': must be laplace, map, vi, nuts, hmc, metropolis, mclmc, mams, sgld or sghmc");
  }
  keys.check_all_read(method);
  return result;
}

}  // namespace occam::python
