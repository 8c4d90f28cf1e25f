// method_options.cc — the table of fit()'s method options (method_options.h), and method_from_json
// and method_to_json made from it.

#include "occam/method_options.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <type_traits>
#include <variant>

#include "occam/committee.h"
#include "occam/heteroscedastic.h"
#include "occam/laplace.h"
#include "occam/map.h"
#include "occam/mcmc/microcanonical.h"
#include "occam/minibatch_map.h"
#include "occam/status.h"
#include "occam/text.h"
#include "occam/types.h"

namespace occam {
namespace {

using nlohmann::json;
using Type = MethodOptionType;

template <class... F>
struct Overload : F... {
  using F::operator()...;
};
template <class... F>
Overload(F...) -> Overload<F...>;

// The field of type T an accessor finds in whichever method `m` holds; nullptr where it has none.
// `access` is an Overload of one lambda per method struct that has the field and a generic
// fallback (none<T>) for the others.
template <typename T>
constexpr auto none = [](const auto&) -> T* { return nullptr; };

template <typename T, typename Access>
T* field(MethodOptions& m, const Access& access) {
  return std::visit([&](auto& method) -> T* { return access(method); }, m);
}

template <typename T>
json value_json(const T& value) {
  if constexpr (std::is_enum_v<T>) {
    return enum_names<T>().name(value);
  } else {
    return value;
  }
}

template <typename T>
T json_value(const json& j) {
  if constexpr (std::is_enum_v<T>) {
    return enum_names<T>().parse(j.get<std::string>());
  } else {
    return j.get<T>();
  }
}

// The option reads and writes the one field `access` finds.
template <typename T, typename Access>
void bind(MethodOption& o, Access access) {
  o.read = [access](const MethodOptions& m) -> json {
    const T* p = field<T>(const_cast<MethodOptions&>(m), access);
    return p != nullptr ? value_json(*p) : json();
  };
  o.write = [access](MethodOptions& m, const json& value, const std::string& as_typed) {
    // An integer beyond the field's type (3000000000 for an int) is refused, not wrapped around.
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      constexpr auto kMax = static_cast<unsigned long long>(std::numeric_limits<T>::max());
      const bool above = value.is_number_unsigned()
                             ? value.get<unsigned long long>() > kMax
                             : value.is_number_integer() && value.get<long long>() > 0 &&
                                   static_cast<unsigned long long>(value.get<long long>()) > kMax;
      if (above)
        throw Error(ErrorKind::kInvalidArgument,
                    as_typed + " = " + value.dump() + ": must be at most " + std::to_string(kMax));
    }
    if (T* p = field<T>(m, access)) *p = json_value<T>(value);
  };
}

template <typename Enum>
void enum_choices(MethodOption& o, std::vector<Enum> excluded = {}) {
  o.type = Type::kChoice;
  o.choices = [excluded](std::string_view) { return enum_names<Enum>().names_except(excluded); };
}

void fixed_choices(MethodOption& o, std::vector<std::string> names) {
  o.type = Type::kChoice;
  o.choices = [names = std::move(names)](std::string_view) { return names; };
}

void positive(MethodOption& o) {
  o.minimum = 0.0;
  o.minimum_excluded = true;
}
void at_least(MethodOption& o, double minimum) { o.minimum = minimum; }
void between(MethodOption& o, double minimum, double maximum) {
  o.minimum = minimum;
  o.maximum = maximum;
}

std::vector<std::string> samplers() { return enum_names<mcmc::SamplerKind>().names(); }
std::vector<std::string> samplers_except(const std::vector<std::string>& excluded) {
  std::vector<std::string> out;
  for (const std::string& s : samplers()) {
    if (std::find(excluded.begin(), excluded.end(), s) == excluded.end()) out.push_back(s);
  }
  return out;
}

// The minibatch MAP (optimizer adam or sgd) or the online evidence loop, whose options
// (epochs, batch_size, learning_rate, ...) do something only then.
bool minibatch_or_online(const EvidenceOptions& e) {
  return is_minibatch(e.map.optimizer) || e.loop == EvidenceLoop::kOnline;
}

// The table itself: one block per option, in the order a reader meets them. It is long because it
// is the declaration of every option, each a few lines; there is no logic to split out.
std::vector<MethodOption> make_table() {
  std::vector<MethodOption> t;
  t.reserve(64);
  const auto add = [&t](const char* key, const char* flag, Type type, std::vector<std::string> methods,
                        const char* help) -> MethodOption& {
    MethodOption o;
    o.key = key;
    o.flag = flag;
    o.type = type;
    o.methods = std::move(methods);
    o.help = help;
    t.push_back(std::move(o));
    return t.back();
  };
  const std::vector<std::string> optimising = {"laplace", "map", "vi"};
  std::vector<std::string> every = optimising;
  for (const std::string& s : samplers()) every.push_back(s);
  const std::vector<std::string> mcmc = samplers();
  const std::vector<std::string> stochastic_gradient = {"sgld", "sghmc"};
  const std::vector<std::string> microcanonical = {"mclmc", "mams"};

  // --- the hyperparameters ------------------------------------------------------------------
  {
    MethodOption& o = add("hyper", "--hyper", Type::kChoice, every,
                          "how α and β are set: laplace: evidence (MacKay's re-estimation), empirical-bayes (the same "
                          "loop: λ by maximum evidence, then the MAP at it), periodic, quick (γ≈W), integrate, fixed; "
                          "map: fixed; vi: elbo, elbo-closed, fixed; MCMC: gibbs, fixed");
    o.choices = [](std::string_view method) -> std::vector<std::string> {
      if (method == "laplace") {
        std::vector<std::string> names = enum_names<HyperStrategy>().names();
        names.insert(names.begin() + 2, "empirical-bayes");
        return names;
      }
      if (method == "map") return {"fixed"};
      if (method == "vi") return {"elbo", "elbo-closed", "fixed"};
      return {"gibbs", "fixed"};
    };
    o.read = [](const MethodOptions& m) -> json {
      if (const auto* l = std::get_if<LaplaceMethod>(&m)) return enum_names<HyperStrategy>().name(l->evidence.strategy);
      if (std::holds_alternative<MapMethod>(m)) return "fixed";
      if (const auto* v = std::get_if<VariationalMethod>(&m)) {
        const VariationalHyper h = v->variational.hyper;
        return h == VariationalHyper::kFixed ? "fixed" : h == VariationalHyper::kClosedForm ? "elbo-closed" : "elbo";
      }
      if (const auto* s = std::get_if<SamplingMethod>(&m)) return s->chains.gibbs ? "gibbs" : "fixed";
      return json();
    };
    o.write = [](MethodOptions& m, const json& value, const std::string&) {
      const std::string hyper = value.get<std::string>();
      if (auto* l = std::get_if<LaplaceMethod>(&m)) {
        // "empirical-bayes" is the evidence loop: it ends on the MAP at the hyperparameters it chose.
        l->evidence.strategy =
            hyper == "empirical-bayes" ? HyperStrategy::kEvidence : enum_names<HyperStrategy>().parse(hyper);
      } else if (auto* v = std::get_if<VariationalMethod>(&m)) {
        // "elbo" and "elbo-closed" are enum_names<VariationalHyper>'s aliases of gradient and closed-form.
        v->variational.hyper = enum_names<VariationalHyper>().parse(hyper);
        v->start_map.strategy = hyper == "fixed" ? HyperStrategy::kFixed : HyperStrategy::kEvidence;
      } else if (auto* s = std::get_if<SamplingMethod>(&m)) {
        s->chains.gibbs = hyper == "gibbs";
      }
    };
  }
  {
    MethodOption& o = add("hessian", "--hessian", Type::kChoice, {"laplace", "vi"},
                          "the curvature of the Laplace approximation: ggn (Gauss-Newton) or exact");
    enum_choices<HessianKind>(o);
    bind<HessianKind>(o, Overload{[](LaplaceMethod& m) { return &m.evidence.hessian; },
                                  [](VariationalMethod& m) { return &m.start_map.hessian; }, none<HessianKind>});
  }
  {
    MethodOption& o = add("hessian_structure", "--hessian-structure", Type::kText, {"laplace"},
                          "the part of the Gauss-Newton matrix the Laplace approximation keeps: full, diag, "
                          "last-layer, kron or lowrank:K (docs/scale.md)");
    o.read = [](const MethodOptions& m) -> json {
      const auto* l = std::get_if<LaplaceMethod>(&m);
      return l != nullptr ? json(to_string(l->evidence.structure)) : json();
    };
    o.write = [](MethodOptions& m, const json& value, const std::string&) {
      if (auto* l = std::get_if<LaplaceMethod>(&m))
        l->evidence.structure = parse_hessian_structure(value.get<std::string>());
    };
  }
  {
    MethodOption& o = add("evidence_loop", "--evidence-loop", Type::kChoice, {"laplace"},
                          "hyper evidence: auto (joint, or online where one full-batch curvature passes 4e9 "
                          "multiply-adds; the report says which), joint (ascent on log α, log β), outer (MacKay's "
                          "loop) or online (minibatch adam or sgd with α, β from the structured evidence; "
                          "docs/scale.md)");
    enum_choices<EvidenceLoop>(o);
    bind<EvidenceLoop>(o, Overload{[](LaplaceMethod& m) { return &m.evidence.loop; }, none<EvidenceLoop>});
  }
  {
    MethodOption& o = add("hyper_gradient_tolerance", nullptr, Type::kNumber, {"laplace"},
                          "the evidence loop converges when max_j |∂ log evidence/∂ log θ_j| is at most this");
    o.no_flag = "the command line keeps the library's tolerance; Python's BayesianLinearRegression sets it by tol";
    positive(o);
    bind<double>(o, Overload{[](LaplaceMethod& m) { return &m.evidence.hyper_gradient_tolerance; }, none<double>});
  }
  {
    MethodOption& o = add("max_hyper_iterations", nullptr, Type::kInteger, {"laplace"},
                          "the most hyperparameter steps of the evidence loop");
    o.no_flag = "the command line keeps the library's limit; Python's BayesianLinearRegression sets it by max_iter";
    positive(o);
    bind<int>(o, Overload{[](LaplaceMethod& m) { return &m.evidence.max_outer_iterations; }, none<int>});
  }
  // --- the MAP --------------------------------------------------------------------------------
  {
    MethodOption& o =
        add("optimizer", "--optimizer", Type::kChoice, optimising,
            "MAP optimiser: auto (up to 3000 weights newton for a linear model, lm otherwise; lbfgs above), lm "
            "(Levenberg-Marquardt), newton (Newton/IRLS with a line search), lbfgs, or on minibatches adam "
            "or sgd (momentum 0.9)");
    enum_choices<Optimizer>(o);
    o.read = [](const MethodOptions& m) -> json {
      if (const auto* l = std::get_if<LaplaceMethod>(&m)) {
        // The online loop runs its own minibatch optimiser (its MAP polish is full-batch).
        const EvidenceOptions& e = l->evidence;
        return to_string(e.loop == EvidenceLoop::kOnline ? e.online.minibatch.optimizer : e.map.optimizer);
      }
      if (const auto* p = std::get_if<MapMethod>(&m)) return to_string(p->map.optimizer);
      if (const auto* v = std::get_if<VariationalMethod>(&m)) return to_string(v->start_map.map.optimizer);
      return json();
    };
    o.write = [](MethodOptions& m, const json& value, const std::string&) {
      const Optimizer optimizer = parse_optimizer(value.get<std::string>());
      if (auto* l = std::get_if<LaplaceMethod>(&m)) l->evidence.map.optimizer = optimizer;
      if (auto* p = std::get_if<MapMethod>(&m)) p->map.optimizer = optimizer;
      if (auto* v = std::get_if<VariationalMethod>(&m)) v->start_map.map.optimizer = optimizer;
    };
  }
  {
    MethodOption& o = add("max_iterations", "--max-iterations", Type::kInteger, optimising,
                          "MAP iterations (LM, Newton, L-BFGS) or epochs (adam, sgd) per run");
    positive(o);
    bind<int>(o, Overload{[](LaplaceMethod& m) { return &m.evidence.map.max_iterations; },
                          [](MapMethod& m) { return &m.map.max_iterations; },
                          [](VariationalMethod& m) { return &m.start_map.map.max_iterations; }, none<int>});
  }
  {
    MethodOption& o = add("gradient_tolerance", nullptr, Type::kNumber, optimising,
                          "the MAP converges when ‖∇S‖ ≤ tolerance · max(1, ‖w‖)");
    o.no_flag = "the command line keeps the library's tolerance";
    positive(o);
    bind<double>(o, Overload{[](LaplaceMethod& m) { return &m.evidence.map.gradient_tolerance; },
                             [](MapMethod& m) { return &m.map.gradient_tolerance; },
                             [](VariationalMethod& m) { return &m.start_map.map.gradient_tolerance; }, none<double>});
  }
  // --- the minibatch MAP and the online evidence loop (docs/scale.md) --------------------------
  {
    MethodOption& o = add("epochs", "--epochs", Type::kInteger, {"laplace", "map"},
                          "optimizer adam or sgd, evidence_loop online: passes over the rows");
    positive(o);
    o.read = [](const MethodOptions& m) -> json {
      if (const auto* l = std::get_if<LaplaceMethod>(&m)) {
        const EvidenceOptions& e = l->evidence;
        return is_minibatch(e.map.optimizer) && e.loop != EvidenceLoop::kOnline ? e.map.max_iterations
                                                                                : e.online.minibatch.epochs;
      }
      if (const auto* p = std::get_if<MapMethod>(&m))
        return is_minibatch(p->map.optimizer) ? p->map.max_iterations : MinibatchOptions{}.epochs;
      return json();
    };
    o.write = [](MethodOptions& m, const json& value, const std::string&) {
      if (auto* l = std::get_if<LaplaceMethod>(&m)) l->evidence.online.minibatch.epochs = value.get<int>();
      // A MAP run by adam or sgd counts its iterations in epochs (the optimizer is written first).
      if (auto* p = std::get_if<MapMethod>(&m); p != nullptr && is_minibatch(p->map.optimizer)) {
        p->map.max_iterations = value.get<int>();
      }
    };
  }
  {
    MethodOption& o = add("batch_size", "--batch-size", Type::kInteger, {"laplace", "map", "vi", "sgld", "sghmc"},
                          "rows per step: adam, sgd and the online loop (default 128); vi (0: all rows); sgld, sghmc "
                          "(0: min(rows, 128))");
    at_least(o, 0);
    bind<Index>(o, Overload{[](LaplaceMethod& m) { return &m.evidence.online.minibatch.batch_size; },
                            [](MapMethod& m) { return &m.map.batch_size; },
                            [](VariationalMethod& m) { return &m.variational.batch_size; },
                            [](SamplingMethod& m) { return &m.sampler.stochastic_gradient.batch_size; }, none<Index>});
  }
  {
    MethodOption& o = add("learning_rate", "--learning-rate", Type::kNumber, {"laplace", "map", "vi"},
                          "the step size of adam, sgd and the online loop, or of VI's Adam");
    positive(o);
    bind<double>(o, Overload{[](LaplaceMethod& m) { return &m.evidence.online.minibatch.learning_rate; },
                             [](MapMethod& m) { return &m.map.learning_rate; },
                             [](VariationalMethod& m) { return &m.variational.learning_rate; }, none<double>});
  }
  {
    MethodOption& o = add("lr_schedule", "--lr-schedule", Type::kChoice, {"laplace"},
                          "evidence_loop online: the step size over the epochs, constant or cosine");
    enum_choices<LearningRateSchedule>(o);
    bind<LearningRateSchedule>(o, Overload{[](LaplaceMethod& m) { return &m.evidence.online.minibatch.schedule; },
                                           none<LearningRateSchedule>});
  }
  {
    MethodOption& o = add("burn_in", "--burn-in", Type::kInteger, {"laplace"},
                          "evidence_loop online: epochs before the first update of α, β");
    at_least(o, 0);
    bind<int>(o, Overload{[](LaplaceMethod& m) { return &m.evidence.online.burn_in; }, none<int>});
  }
  {
    MethodOption& o = add("evidence_every", "--evidence-every", Type::kInteger, {"laplace"},
                          "evidence_loop online: epochs between updates of α, β");
    positive(o);
    bind<int>(o, Overload{[](LaplaceMethod& m) { return &m.evidence.online.evidence_every; }, none<int>});
  }
  {
    MethodOption& o = add("hyper_steps", "--hyper-steps", Type::kInteger, {"laplace"},
                          "evidence_loop online: Adam steps on log α, log β per update");
    at_least(o, 0);
    bind<int>(o, Overload{[](LaplaceMethod& m) { return &m.evidence.online.hyper_steps; }, none<int>});
  }
  {
    MethodOption& o =
        add("start_rows", "--start-rows", Type::kInteger, {"laplace"},
            "hyper evidence with evidence_loop joint: first the whole ascent on this many of the rows, drawn at "
            "random, then on all rows from where it ended (0: off; docs/evidence.md, 'A start on fewer rows')");
    at_least(o, 0);
    bind<Index>(o, Overload{[](LaplaceMethod& m) { return &m.evidence.start_rows; }, none<Index>});
  }
  {
    MethodOption& o = add("curvature_rows", "--curvature-rows", Type::kInteger, {"laplace"},
                          "evidence_loop online: rows of each update's curvature pass, a fresh sample each time, "
                          "its curvature scaled to all rows (0: all rows)");
    at_least(o, 0);
    bind<Index>(o, Overload{[](LaplaceMethod& m) { return &m.evidence.online.curvature_rows; }, none<Index>});
  }
  {
    MethodOption& o =
        add("polish", "--polish", Type::kBoolean, {"laplace"},
            "evidence_loop online: after the epochs, the full-batch outer loop, so that the fit can converge");
    bind<bool>(o, Overload{[](LaplaceMethod& m) { return &m.evidence.online.polish; }, none<bool>});
  }
  // --- the noise model (docs/heteroscedastic.md); after the evidence options it copies ---------
  {
    MethodOption& o = add("noise_model", "--noise-model", Type::kChoice, {"laplace"},
                          "none (one noise level, β) or network: with the gaussian likelihood, a second network for "
                          "log σ²(x), fitted by its own evidence to the mean's leverage-corrected residuals, then the "
                          "mean refitted with weights 1/σ²(x) and the noise network again (docs/heteroscedastic.md)");
    fixed_choices(o, {"none", "network"});
    o.read = [](const MethodOptions& m) -> json {
      const auto* l = std::get_if<LaplaceMethod>(&m);
      return l == nullptr ? json() : json(l->noise_model ? "network" : "none");
    };
    o.write = [](MethodOptions& m, const json& value, const std::string&) {
      auto* l = std::get_if<LaplaceMethod>(&m);
      if (l == nullptr) return;
      // The noise network's evidence fit like the mean's (its optimiser, budget, Hessian).
      if (value.get<std::string>() == "network") {
        l->noise_model = heteroscedastic_options_like(*l);
      } else {
        l->noise_model.reset();
      }
    };
  }
  {
    MethodOption& o = add("noise_refits", "--noise-refits", Type::kInteger, {"laplace"},
                          "noise_model network: refits of the mean with weights 1/σ²(x), each followed by the noise "
                          "network's (0: the mean is the Laplace fit's)");
    between(o, 0, 100);
    o.read = [](const MethodOptions& m) -> json {
      const auto* l = std::get_if<LaplaceMethod>(&m);
      if (l == nullptr) return json();
      // Without a noise model, the count one would get (method_to_json leaves it out then: inactive).
      return l->noise_model ? l->noise_model->weighted_refits : HeteroscedasticOptions{}.weighted_refits;
    };
    o.write = [](MethodOptions& m, const json& value, const std::string&) {
      auto* l = std::get_if<LaplaceMethod>(&m);
      if (l != nullptr && l->noise_model) l->noise_model->weighted_refits = value.get<int>();
    };
  }
  // --- a committee of such fits (committee.h, docs/evidence.md) --------------------------------
  {
    MethodOption& o = add("committee", "--committee", Type::kInteger, {"laplace"},
                          "fit K members from independent random starts (member 1 from the seed) and predict with "
                          "their mixture, weighted by committee_weighting (docs/evidence.md, 'A committee')");
    between(o, 1, 10000);
    o.read = [](const MethodOptions& m) -> json {
      const auto* l = std::get_if<LaplaceMethod>(&m);
      return l != nullptr && l->committee ? json(l->committee->members) : json();  // none: no committee
    };
    o.write = [](MethodOptions& m, const json& value, const std::string&) {
      auto* l = std::get_if<LaplaceMethod>(&m);
      if (l == nullptr) return;
      if (!l->committee) l->committee.emplace();
      l->committee->members = value.get<int>();
    };
  }
  {
    MethodOption& o = add("committee_weighting", "--committee-weighting", Type::kChoice, {"laplace"},
                          "committee K: evidence (each member's Laplace evidence times its symmetry count) or equal");
    enum_choices<CommitteeWeighting>(o);
    o.read = [](const MethodOptions& m) -> json {
      const auto* l = std::get_if<LaplaceMethod>(&m);
      if (l == nullptr) return json();
      // Without a committee, the weighting one would get (method_to_json leaves it out then: inactive).
      return to_string(l->committee ? l->committee->weighting : CommitteeOptions{}.weighting);
    };
    o.write = [](MethodOptions& m, const json& value, const std::string&) {
      auto* l = std::get_if<LaplaceMethod>(&m);
      if (l != nullptr && l->committee) l->committee->weighting = parse_committee_weighting(value.get<std::string>());
    };
  }
  {
    MethodOption& o = add("committee_dir", "--committee-dir", Type::kText, {"laplace"},
                          "committee K: keep each member's fit in this folder as it ends (member_<k>.json) and read "
                          "back the members already there, fitted from the same data and options, instead of fitting "
                          "them again: a committee stopped or killed continues where it stopped");
    o.reported = false;  // a run setting: the committee does not depend on it
    o.read = [](const MethodOptions& m) -> json {
      const auto* l = std::get_if<LaplaceMethod>(&m);
      // Without a committee or a folder: none (method_to_json leaves it out).
      return l != nullptr && l->committee && !l->committee->directory.empty() ? json(l->committee->directory) : json();
    };
    o.write = [](MethodOptions& m, const json& value, const std::string&) {
      auto* l = std::get_if<LaplaceMethod>(&m);
      if (l != nullptr && l->committee) l->committee->directory = value.get<std::string>();
    };
  }
  {
    MethodOption& o = add("checkpoint", "--checkpoint", Type::kText, {"laplace"},
                          "evidence_loop joint: write the ascent's state to this file after every step, and go on "
                          "from the file when it is there (written by a fit of the same data and options): a fit "
                          "stopped or killed ends as an uninterrupted one does (docs/evidence.md, 'Checkpoints')");
    o.reported = false;  // a run setting: the fit does not depend on it
    o.read = [](const MethodOptions& m) -> json {
      const auto* l = std::get_if<LaplaceMethod>(&m);
      return l != nullptr && !l->checkpoint.empty() ? json(l->checkpoint) : json();
    };
    o.write = [](MethodOptions& m, const json& value, const std::string&) {
      if (auto* l = std::get_if<LaplaceMethod>(&m)) l->checkpoint = value.get<std::string>();
    };
  }
  // --- variational inference (docs/vi.md) ------------------------------------------------------
  {
    MethodOption& o = add("family", "--family", Type::kText, {"vi"},
                          "fullrank (V = LLᵀ), meanfield (diagonal V) or lowrank:R (V = BBᵀ + diagonal)");
    o.read = [](const MethodOptions& m) -> json {
      const auto* v = std::get_if<VariationalMethod>(&m);
      return v != nullptr ? json(v->variational.family.name()) : json();
    };
    o.write = [](MethodOptions& m, const json& value, const std::string&) {
      if (auto* v = std::get_if<VariationalMethod>(&m))
        v->variational.family = parse_variational_family(value.get<std::string>());
    };
  }
  {
    MethodOption& o =
        add("mc_samples", "--mc-samples", Type::kInteger, {"vi"}, "Monte Carlo draws of the weights per gradient step");
    positive(o);
    bind<int>(o, Overload{[](VariationalMethod& m) { return &m.variational.mc_samples; }, none<int>});
  }
  {
    MethodOption& o = add("vi_iterations", "--vi-iterations", Type::kInteger, {"vi"}, "the most Adam steps");
    positive(o);
    bind<int>(o, Overload{[](VariationalMethod& m) { return &m.variational.max_iterations; }, none<int>});
  }
  {
    MethodOption& o = add("vi_tolerance", "--vi-tolerance", Type::kNumber, {"vi"},
                          "stop when the smoothed ELBO changes by less than this, relatively (0: run every iteration)");
    at_least(o, 0);
    bind<double>(o, Overload{[](VariationalMethod& m) { return &m.variational.relative_tolerance; }, none<double>});
  }
  // --- sampling (docs/mcmc.md) ---------------------------------------------------------------------
  {
    MethodOption& o = add("chains", "--chains", Type::kInteger, mcmc, "number of chains");
    positive(o);
    bind<int>(o, Overload{[](SamplingMethod& m) { return &m.sampler.chains; }, none<int>});
  }
  {
    MethodOption& o = add("warmup", "--warmup", Type::kInteger, mcmc,
                          "warm-up (burn-in) iterations per chain: adapted, then discarded");
    at_least(o, 0);
    bind<int>(o, Overload{[](SamplingMethod& m) { return &m.sampler.num_warmup; }, none<int>});
  }
  {
    MethodOption& o = add("draws", "--draws", Type::kInteger, mcmc, "iterations per chain after warm-up");
    at_least(o, 0);
    bind<int>(o, Overload{[](SamplingMethod& m) { return &m.sampler.num_draws; }, none<int>});
  }
  {
    MethodOption& o = add("thin", "--thin", Type::kInteger, mcmc, "keep every n-th draw");
    positive(o);
    bind<int>(o, Overload{[](SamplingMethod& m) { return &m.sampler.thin; }, none<int>});
  }
  {
    MethodOption& o =
        add("save_warmup", "--save-warmup", Type::kBoolean, mcmc, "also write the warm-up draws to the chain files");
    bind<bool>(o, Overload{[](SamplingMethod& m) { return &m.sampler.save_warmup; }, none<bool>});
  }
  {
    MethodOption& o =
        add("checkpoint_every", "--checkpoint-every", Type::kInteger, mcmc,
            "iterations between checkpoints of each chain's state in the run directory (for a resume); 0: none");
    at_least(o, 0);
    o.reported = false;
    bind<int>(o, Overload{[](SamplingMethod& m) { return &m.sampler.checkpoint_every; }, none<int>});
  }
  {
    MethodOption& o =
        add("init", "--init", Type::kChoice, mcmc,
            "initial weights: prior (a prior draw), map (a MAP fit per chain) or laplace (a draw from the "
            "Laplace approximation at that MAP)");
    enum_choices<mcmc::InitKind>(o);
    bind<mcmc::InitKind>(o, Overload{[](SamplingMethod& m) { return &m.chains.init; }, none<mcmc::InitKind>});
  }
  {
    MethodOption& o = add("init_optimizer", "--init-optimizer", Type::kChoice, mcmc,
                          "optimiser of the MAP fit of init map and laplace: auto, lm, newton or lbfgs");
    // The full-batch optimisers: a chain's start is one MAP fit.
    enum_choices<Optimizer>(o, {Optimizer::kAdam, Optimizer::kSgd});
    bind<Optimizer>(o, Overload{[](SamplingMethod& m) { return &m.chains.map_optimizer; }, none<Optimizer>});
  }
  {
    MethodOption& o = add("parameterization", "--parameterization", Type::kChoice, mcmc,
                          "coordinates of the weight kernel: centered (w) or noncentered (u = √α·w)");
    fixed_choices(o, {"centered", "noncentered"});
    o.read = [](const MethodOptions& m) -> json {
      const auto* s = std::get_if<SamplingMethod>(&m);
      return s == nullptr ? json() : json(s->chains.non_centered ? "noncentered" : "centered");
    };
    o.write = [](MethodOptions& m, const json& value, const std::string&) {
      if (auto* s = std::get_if<SamplingMethod>(&m)) s->chains.non_centered = value.get<std::string>() == "noncentered";
    };
  }
  {
    MethodOption& o =
        add("hyper_shape", "--hyper-shape", Type::kNumber, mcmc, "shape a of the Gamma(a, b) priors on α, λ_s and β");
    at_least(o, 0);
    o.read = [](const MethodOptions& m) -> json {
      const auto* s = std::get_if<SamplingMethod>(&m);
      return s != nullptr ? json(s->chains.hyper.alpha.shape) : json();
    };
    o.write = [](MethodOptions& m, const json& value, const std::string&) {
      if (auto* s = std::get_if<SamplingMethod>(&m))
        s->chains.hyper.alpha.shape = s->chains.hyper.beta.shape = value.get<double>();
    };
  }
  {
    MethodOption& o =
        add("hyper_rate", "--hyper-rate", Type::kNumber, mcmc, "rate b of the Gamma(a, b) priors on α, λ_s and β");
    at_least(o, 0);
    o.read = [](const MethodOptions& m) -> json {
      const auto* s = std::get_if<SamplingMethod>(&m);
      return s != nullptr ? json(s->chains.hyper.alpha.rate) : json();
    };
    o.write = [](MethodOptions& m, const json& value, const std::string&) {
      if (auto* s = std::get_if<SamplingMethod>(&m))
        s->chains.hyper.alpha.rate = s->chains.hyper.beta.rate = value.get<double>();
    };
  }
  {
    MethodOption& o =
        add("metric", "--metric", Type::kChoice, samplers_except(stochastic_gradient),
            "HMC/NUTS metric, or Metropolis proposal shape, adapted in warm-up: diag, dense or unit (not adapted)");
    enum_choices<mcmc::MetricKind>(o);
    bind<mcmc::MetricKind>(o, Overload{[](SamplingMethod& m) { return &m.sampler.metric; }, none<mcmc::MetricKind>});
  }
  {
    MethodOption& o =
        add("precondition", "--precondition", Type::kChoice, mcmc,
            "laplace: the Laplace covariance A⁻¹ at a MAP fit as the (dense, not adapted) metric; rmsprop "
            "(sgld, sghmc): the diagonal RMSprop preconditioner; none");
    fixed_choices(o, {"none", "laplace", "rmsprop"});
    o.read = [](const MethodOptions& m) -> json {
      const auto* s = std::get_if<SamplingMethod>(&m);
      if (s == nullptr) return json();
      return s->laplace_metric ? "laplace" : s->sampler.stochastic_gradient.rmsprop ? "rmsprop" : "none";
    };
    o.write = [](MethodOptions& m, const json& value, const std::string&) {
      auto* s = std::get_if<SamplingMethod>(&m);
      if (s == nullptr) return;
      const std::string precondition = value.get<std::string>();
      s->laplace_metric = precondition == "laplace";
      s->sampler.stochastic_gradient.rmsprop = precondition == "rmsprop";
    };
  }
  {
    MethodOption& o = add("step_size", "--step-size", Type::kNumber, mcmc,
                          "initial step size (Metropolis: proposal scale); 0: 1 for HMC, NUTS, MCLMC and MAMS, 2.38/√W "
                          "for Metropolis; sgld, sghmc: their time step h, required");
    at_least(o, 0);
    bind<double>(o, Overload{[](SamplingMethod& m) { return &m.sampler.initial_step_size; }, none<double>});
    const auto write = o.write;
    o.write = [write](MethodOptions& m, const json& value, const std::string& as_typed) {
      write(m, value, as_typed);
      // 0 asks for the kernel's default: default_method's step size.
      if (auto* s = std::get_if<SamplingMethod>(&m); s != nullptr && !(s->sampler.initial_step_size > 0.0)) {
        s->sampler.initial_step_size =
            std::get<SamplingMethod>(default_method(mcmc::to_string(s->sampler.method))).sampler.initial_step_size;
      }
    };
  }
  {
    MethodOption& o = add("target_accept", "--target-accept", Type::kNumber, {"nuts", "hmc", "metropolis", "mams"},
                          "acceptance the step size adapts to; 0: 0.8 (HMC, NUTS), 0.9 (MAMS) or 0.234 (Metropolis)");
    between(o, 0.0, 0.999);
    bind<double>(o, Overload{[](SamplingMethod& m) { return &m.sampler.target_accept; }, none<double>});
  }
  {
    MethodOption& o = add("max_depth", "--max-depth", Type::kInteger, {"nuts"}, "NUTS maximum tree depth");
    between(o, 1, 30);
    bind<int>(o, Overload{[](SamplingMethod& m) { return &m.sampler.nuts.max_depth; }, none<int>});
  }
  {
    MethodOption& o =
        add("leapfrog_steps", "--leapfrog-steps", Type::kInteger, {"hmc"}, "HMC leapfrog steps per transition");
    positive(o);
    bind<int>(o, Overload{[](SamplingMethod& m) { return &m.sampler.hmc.num_steps; }, none<int>});
  }
  {
    MethodOption& o = add("jitter", "--jitter", Type::kNumber, {"hmc"}, "HMC step-size jitter, uniform in ±jitter·ε");
    between(o, 0.0, 0.99);
    bind<double>(o, Overload{[](SamplingMethod& m) { return &m.sampler.hmc.jitter; }, none<double>});
  }
  {
    MethodOption& o =
        add("friction", "--friction", Type::kNumber, stochastic_gradient, "the friction C per unit time (h·C < 1)");
    positive(o);
    bind<double>(o, Overload{[](SamplingMethod& m) { return &m.sampler.stochastic_gradient.friction; }, none<double>});
  }
  {
    MethodOption& o = add("cycles", "--cycles", Type::kInteger, stochastic_gradient,
                          "cosine step-size cycles over all iterations (0: a constant step)");
    at_least(o, 0);
    bind<int>(o, Overload{[](SamplingMethod& m) { return &m.sampler.stochastic_gradient.cycles; }, none<int>});
  }
  {
    MethodOption& o = add("exploration", "--exploration", Type::kNumber, stochastic_gradient,
                          "with cycles: the fraction of each cycle spent exploring (no noise, no draws kept)");
    between(o, 0.0, 0.99);
    bind<double>(o,
                 Overload{[](SamplingMethod& m) { return &m.sampler.stochastic_gradient.exploration; }, none<double>});
  }
  {
    MethodOption& o = add("gibbs_every", "--gibbs-every", Type::kInteger, stochastic_gradient,
                          "with hyper gibbs: epochs between Gibbs updates");
    positive(o);
    bind<int>(o, Overload{[](SamplingMethod& m) { return &m.sampler.stochastic_gradient.gibbs_every; }, none<int>});
  }
  {
    MethodOption& o = add("integrator", "--integrator", Type::kChoice, microcanonical,
                          "minimal_norm (two gradients a step) or leapfrog (one)");
    enum_choices<mcmc::IsokineticIntegrator>(o);
    bind<mcmc::IsokineticIntegrator>(o, Overload{[](SamplingMethod& m) { return &m.sampler.microcanonical.integrator; },
                                                 none<mcmc::IsokineticIntegrator>});
  }
  {
    MethodOption& o = add("trajectory_length", "--trajectory-length", Type::kNumber, microcanonical,
                          "the decoherence length L in the metric's coordinates; 0: tuned in warm-up");
    at_least(o, 0);
    bind<double>(o,
                 Overload{[](SamplingMethod& m) { return &m.sampler.microcanonical.trajectory_length; }, none<double>});
  }
  {
    MethodOption& o = add("energy_variance", "--energy-variance", Type::kNumber, {"mclmc"},
                          "the energy error variance per parameter, Var[dE]/d, its step size is tuned to");
    positive(o);
    bind<double>(o,
                 Overload{[](SamplingMethod& m) { return &m.sampler.microcanonical.energy_variance; }, none<double>});
  }
  {
    MethodOption& o = add("max_steps", "--max-steps", Type::kInteger, microcanonical,
                          "at most this many integrator steps per iteration");
    positive(o);
    bind<int>(o, Overload{[](SamplingMethod& m) { return &m.sampler.microcanonical.max_steps; }, none<int>});
  }
  // --- every method ----------------------------------------------------------------------------
  {
    MethodOption& o =
        add("threads", "--threads", Type::kInteger, samplers(),
            "laplace, map: threads summing the rows (at least 1); MCMC: chains at once (0: one per chain; under "
            "mpirun, threads summing each process's rows, 0: one); the numbers do not depend on it");
    o.methods.insert(o.methods.begin(), {"laplace", "map"});
    at_least(o, 0);
    o.reported = false;
    bind<int>(o, Overload{[](LaplaceMethod& m) { return &m.parallel.threads; },
                          [](MapMethod& m) { return &m.parallel.threads; },
                          [](SamplingMethod& m) { return &m.sampler.threads; }, none<int>});
    const auto write = o.write;
    o.write = [write](MethodOptions& m, const json& value, const std::string& as_typed) {
      if (!std::holds_alternative<SamplingMethod>(m) && value.get<int>() < 1) {
        throw Error(ErrorKind::kInvalidArgument, as_typed + " = " + value.dump() + ": must be at least 1");
      }
      write(m, value, as_typed);
    };
  }
  {
    MethodOption& o =
        add("seed", "--seed", Type::kInteger, every,
            "seed of the initial weights, the minibatches, VI's draws, the chains (chain k uses its own stream of it)");
    between(o, 0, 18446744073709551615.0);
    o.read = [](const MethodOptions& m) -> json {
      return std::visit(Overload{[](const SamplingMethod& s) { return s.sampler.seed; },
                                 [](const CrossValidatedMethod& c) { return c.start.seed; },
                                 [](const auto& method) { return method.start.seed; }},
                        m);
    };
    o.write = [](MethodOptions& m, const json& value, const std::string&) {
      const auto seed = value.get<std::uint64_t>();
      std::visit(
          Overload{[&](LaplaceMethod& l) { l.start.seed = l.evidence.map.seed = seed; },
                   [&](MapMethod& p) { p.start.seed = p.map.seed = seed; },
                   [&](VariationalMethod& v) { v.start.seed = v.start_map.map.seed = v.variational.seed = seed; },
                   [&](SamplingMethod& s) { s.sampler.seed = seed; },
                   [&](CrossValidatedMethod& c) { c.start.seed = seed; }},
          m);
    };
  }
  return t;
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) out += (i > 0 ? ", " : "") + names[i];
  return out;
}

// Options that change what other options mean, once all are written: the minibatch MAP and the
// online loop take the MAP's seed, optimiser and (given) epochs.
void link_minibatch(EvidenceOptions& e, bool epochs_given) {
  if (e.loop == EvidenceLoop::kAuto) e.online.minibatch.seed = e.map.seed;  // should it choose the online loop
  if (!minibatch_or_online(e)) return;
  MinibatchOptions& m = e.online.minibatch;
  const bool minibatch = is_minibatch(e.map.optimizer);
  if (minibatch) m.optimizer = e.map.optimizer;
  m.seed = e.map.seed;
  if (minibatch) {
    if (epochs_given) e.map.max_iterations = m.epochs;
    e.map.batch_size = m.batch_size;
    e.map.learning_rate = m.learning_rate;
  }
  if (minibatch && e.loop == EvidenceLoop::kOnline) e.map.optimizer = Optimizer::kAuto;  // the polish is full-batch
}

// "evidence_loop online" or "--evidence-loop online": a setting as `spelling` names it.
std::string setting(const char* key, const char* value, OptionSpelling spelling) {
  return find_method_option(key)->spelled(spelling) + " " + value;
}

// Whether an option the method takes does anything with the others as they are: the minibatch
// options need optimizer adam or sgd or the online loop, the online loop's own the online loop.
// method_to_json leaves out the others; method_from_json refuses them, with `when` (the settings
// they need, as `spelling` names them).
bool active(const MethodOption& o, const MethodOptions& m, OptionSpelling spelling, std::string* when) {
  const std::string_view key = o.key;
  const bool online_only = key == "lr_schedule" || key == "burn_in" || key == "evidence_every" ||
                           key == "hyper_steps" || key == "polish" || key == "curvature_rows";
  const bool minibatch_key = key == "epochs" || key == "batch_size" || key == "learning_rate";
  if (const auto* l = std::get_if<LaplaceMethod>(&m)) {
    if (key == "noise_refits") {
      *when = setting("noise_model", "network", spelling);
      return l->noise_model.has_value();
    }
    if (key == "committee" || key == "committee_weighting" || key == "committee_dir") {  // active once given
      *when = setting("committee", "K", spelling);
      return l->committee.has_value();
    }
    if (key == "start_rows" || key == "checkpoint") {  // the joint ascent's own: auto may choose the online loop
      *when = setting("evidence_loop", "joint", spelling) + " and " + setting("hyper", "evidence", spelling);
      return l->evidence.loop == EvidenceLoop::kJoint && l->evidence.strategy == HyperStrategy::kEvidence;
    }
    if (online_only) {
      *when = setting("evidence_loop", "online", spelling);
      return l->evidence.loop == EvidenceLoop::kOnline;
    }
    if (minibatch_key) {
      *when = setting("optimizer", "adam or sgd", spelling) + " and to " + setting("evidence_loop", "online", spelling);
      return minibatch_or_online(l->evidence);
    }
  }
  if (const auto* p = std::get_if<MapMethod>(&m); p != nullptr && minibatch_key) {
    *when = setting("optimizer", "adam or sgd", spelling);
    return is_minibatch(p->map.optimizer);
  }
  return true;
}

void check_value(const MethodOption& o, std::string_view method, const json& value, const std::string& as_typed) {
  const auto bad = [&](const std::string& why) {
    return Error(ErrorKind::kInvalidArgument, as_typed + " = " + value.dump() + ": " + why);
  };
  switch (o.type) {
    case Type::kInteger:
    case Type::kNumber: {
      const bool integer = o.type == Type::kInteger;
      if (integer ? !value.is_number_integer() : !value.is_number())
        throw bad(integer ? "must be an integer" : "must be a number");
      const double x = value.get<double>();
      const bool below = o.minimum_excluded ? !(x > o.minimum) : !(x >= o.minimum);
      if (below || !(x <= o.maximum)) {
        if (o.minimum_excluded && o.maximum == std::numeric_limits<double>::infinity()) throw bad("must be positive");
        if (o.maximum == std::numeric_limits<double>::infinity())
          throw bad("must be at least " + format("%g", o.minimum));
        throw bad("must be in [" + format("%g", o.minimum) + ", " + format("%g", o.maximum) + "]");
      }
      return;
    }
    case Type::kBoolean:
      if (!value.is_boolean()) throw bad("must be true or false");
      return;
    case Type::kChoice: {
      const std::vector<std::string> names = o.choices(method);
      if (!value.is_string() || std::find(names.begin(), names.end(), value.get<std::string>()) == names.end()) {
        throw bad("method " + std::string(method) + " takes " + join(names));
      }
      return;
    }
    case Type::kText:
      if (!value.is_string()) throw bad("must be a string");
      return;
  }
}

// "--method sgld" or "sgld", as the user named the method.
std::string method_as_typed(std::string_view method, OptionSpelling spelling) {
  return (spelling == OptionSpelling::kFlag ? "--method " : "") + std::string(method);
}

// "a", "a and b", "a, b and c".
std::string join_and(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return out;
}

// What fit() would refuse, said in the options' terms before it runs.
void check_together(const MethodOptions& m, std::string_view method, OptionSpelling spelling) {
  const auto as_key = [spelling](const char* key) { return find_method_option(key)->spelled(spelling); };
  if (const auto* l = std::get_if<LaplaceMethod>(&m); l != nullptr && l->committee && l->noise_model) {
    throw Error(ErrorKind::kInvalidArgument, as_key("committee") + " and " + as_key("noise_model") +
                                                 " network do not go together (a committee mixes Gaussian "
                                                 "predictives of one noise level each)");
  }
  const auto* s = std::get_if<SamplingMethod>(&m);
  if (s == nullptr) return;
  const auto as_typed = [spelling](const char* key) { return find_method_option(key)->spelled(spelling); };
  const std::string name = method_as_typed(method, spelling);
  const mcmc::SamplerKind kind = s->sampler.method;
  if (mcmc::is_stochastic_gradient(kind)) {
    if (!(s->sampler.initial_step_size > 0.0)) {
      throw Error(ErrorKind::kInvalidArgument, name + " needs " + as_typed("step_size") +
                                                   ": it is not adapted, and a good value depends on the "
                                                   "data's size and scale (docs/mcmc.md, Stochastic-gradient MCMC)");
    }
    if (s->laplace_metric || s->chains.non_centered) {
      throw Error(ErrorKind::kInvalidArgument, name + " samples the centred weights; for its preconditioning use " +
                                                   as_typed("precondition") + " rmsprop");
    }
  } else if (s->sampler.stochastic_gradient.rmsprop) {
    throw Error(ErrorKind::kInvalidArgument,
                as_typed("precondition") + " rmsprop is for " + method_as_typed("sgld and sghmc", spelling));
  }
  if (mcmc::is_microcanonical(kind) && s->laplace_metric) {
    throw Error(ErrorKind::kInvalidArgument, name + " takes a diagonal metric (" + as_typed("metric") +
                                                 " diag, adapted in warm-up) or none (unit), not " +
                                                 as_typed("precondition") + " laplace");
  }
}

// Whether a method samples: the command line offers the samplers' options on `occam sample`, the
// others' on `occam fit`.
bool samples(std::string_view method) { return method != "laplace" && method != "map" && method != "vi"; }

void validate(const MethodOptions& m) {
  std::visit(Overload{[](const LaplaceMethod& l) {
                        l.evidence.validate();
                        if (l.noise_model) l.noise_model->validate();
                        if (l.committee) l.committee->validate();
                      },
                      [](const MapMethod& p) { p.map.validate(); },
                      [](const VariationalMethod& v) {
                        v.start_map.validate();
                        v.variational.validate();
                      },
                      [](const SamplingMethod& s) { s.sampler.validate(); }, [](const CrossValidatedMethod&) {}},
             m);
}

}  // namespace

bool MethodOption::applies_to(std::string_view method) const {
  return std::find(methods.begin(), methods.end(), method) != methods.end();
}

json MethodOption::default_value(std::string_view method) const {
  return applies_to(method) ? read(default_method(method)) : json();
}

std::vector<std::string> MethodOption::all_choices() const {
  std::vector<std::string> out;
  if (!choices) return out;
  for (const std::string& method : methods) {
    for (const std::string& c : choices(method)) {
      if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
    }
  }
  return out;
}

std::string MethodOption::spelled(OptionSpelling spelling) const {
  return spelling == OptionSpelling::kFlag && flag != nullptr ? flag : key;
}

const std::vector<MethodOption>& method_option_table() {
  static const std::vector<MethodOption> kTable = make_table();
  return kTable;
}

const MethodOption* find_method_option(std::string_view key) {
  for (const MethodOption& o : method_option_table()) {
    if (key == o.key) return &o;
  }
  return nullptr;
}

std::vector<std::string> method_names() {
  std::vector<std::string> names = {"laplace", "map", "vi"};
  for (const std::string& s : samplers()) names.push_back(s);
  return names;
}

MethodOptions default_method(std::string_view name) {
  if (name == "laplace") return LaplaceMethod{};
  if (name == "map") return MapMethod{};
  if (name == "vi") return VariationalMethod{};
  const std::vector<std::string> names = method_names();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    throw Error(ErrorKind::kInvalidArgument, "unknown method '" + std::string(name) + "' (known: " + join(names) + ")");
  }
  SamplingMethod s;
  s.sampler.method = enum_names<mcmc::SamplerKind>().parse(name);
  // The front ends draw α and β by Gibbs unless told otherwise; a step size of 0 is the kernel's
  // own (Metropolis: 2.38/√W), and sgld and sghmc have none until it is given.
  s.chains.gibbs = true;
  const bool no_default_step =
      s.sampler.method == mcmc::SamplerKind::kMetropolis || mcmc::is_stochastic_gradient(s.sampler.method);
  s.sampler.initial_step_size = no_default_step ? 0.0 : 1.0;
  return s;
}

MethodOptions method_from_json(const json& j, OptionSpelling spelling) {
  const std::string prefix = spelling == OptionSpelling::kKey ? "method options: " : "";
  if (!j.is_object()) throw Error(ErrorKind::kInvalidArgument, "method options: not a JSON object");
  std::string method = "laplace";
  if (j.contains("method") && !j.at("method").is_null()) {
    const std::vector<std::string> names = method_names();
    if (!j.at("method").is_string() ||
        std::find(names.begin(), names.end(), j.at("method").get<std::string>()) == names.end()) {
      throw Error(ErrorKind::kInvalidArgument, prefix + (spelling == OptionSpelling::kFlag ? "--method" : "method") +
                                                   " = " + j.at("method").dump() + ": must be " + join(names));
    }
    method = j.at("method").get<std::string>();
  }
  std::vector<std::string> taken;
  for (const MethodOption& o : method_option_table()) {
    if (o.applies_to(method)) taken.push_back(spelling == OptionSpelling::kFlag && o.flag ? o.flag : o.key);
  }
  // A key of another method is refused after the checks of the options together (a sampler that
  // needs its step size, a preconditioner of another sampler): those say more.
  std::set<std::string> given;
  std::optional<Error> not_applying;
  for (const auto& [key, value] : j.items()) {
    if (key == "method" || value.is_null()) continue;
    const MethodOption* o = find_method_option(key);
    if (o != nullptr && o->applies_to(method)) {
      given.insert(key);
    } else if (!not_applying && o != nullptr && spelling == OptionSpelling::kFlag) {
      // A flag of the command given with another of its methods: the methods it is for.
      std::vector<std::string> family;
      for (const std::string& m : o->methods) {
        if (samples(m) == samples(method)) family.push_back(m);
      }
      not_applying = Error(ErrorKind::kInvalidArgument, o->spelled(spelling) + " applies to " +
                                                            method_as_typed(join_and(family), spelling) + " only");
    } else if (!not_applying) {
      const std::string name = o != nullptr ? o->spelled(spelling) : key;
      not_applying = Error(ErrorKind::kInvalidArgument,
                           prefix + name + " does not apply to method '" + method + "' (it takes " + join(taken) + ")");
    }
  }
  MethodOptions m = default_method(method);
  // In the table's order: an option that another one's meaning depends on (the optimiser before
  // the epochs) is written first.
  for (const MethodOption& o : method_option_table()) {
    if (given.count(o.key) == 0) continue;
    const json& value = j.at(o.key);
    const std::string name = prefix + o.spelled(spelling);
    check_value(o, method, value, name);
    try {
      o.write(m, value, name);
    } catch (const Error& e) {
      if (std::string_view(e.what()).starts_with(name)) throw;
      throw Error(ErrorKind::kInvalidArgument, name + ": " + e.what());
    }
  }
  if (auto* l = std::get_if<LaplaceMethod>(&m)) link_minibatch(l->evidence, given.count("epochs") > 0);
  try {
    check_together(m, method, spelling);
  } catch (const Error& e) {
    throw Error(ErrorKind::kInvalidArgument, prefix + e.what());
  }
  if (not_applying) throw *not_applying;
  for (const std::string& key : given) {
    const MethodOption& o = *find_method_option(key);
    std::string when;
    if (!active(o, m, spelling, &when)) {
      throw Error(ErrorKind::kInvalidArgument, prefix + o.spelled(spelling) + " applies to " + when + " only");
    }
  }
  validate(m);
  return m;
}

json method_to_json(const MethodOptions& method) {
  if (const auto* cv = std::get_if<CrossValidatedMethod>(&method)) {
    return {{"method", "cv"},
            {"hyper", cv->cv.target == CvTarget::kSmoothing ? "cv-smoothing" : "cv"},
            {"optimizer", to_string(cv->final_fit.map.optimizer)},
            {"max_iterations", cv->final_fit.map.max_iterations},
            {"seed", cv->start.seed},
            {"folds", cv->cv.folds.folds},
            {"grid", cv->cv.alphas}};
  }
  const std::string name = method_name(method) == std::string_view("mcmc")
                               ? mcmc::to_string(std::get<SamplingMethod>(method).sampler.method)
                               : method_name(method);
  json j = {{"method", name}};
  for (const MethodOption& o : method_option_table()) {
    std::string when;
    if (o.reported && o.applies_to(name) && active(o, method, OptionSpelling::kKey, &when)) j[o.key] = o.read(method);
  }
  return j;
}

}  // namespace occam
