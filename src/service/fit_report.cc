// fit_report.cc — what a fit reports: the JSON report and the few lines for a person.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "occam/committee.h"
#include "occam/fit.h"
#include "occam/text.h"
#include "occam/version.h"
#include "inference/laplace/structured/precision_factors.h"

namespace occam {
namespace {

nlohmann::json finite_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

// {name: value} for per-group quantities.
nlohmann::json per_group(const std::vector<std::string>& names, const Eigen::VectorXd& values) {
  nlohmann::json j = nlohmann::json::object();
  for (std::size_t g = 0; g < names.size() && static_cast<Index>(g) < values.size(); ++g) {
    j[names[g]] = values[static_cast<Index>(g)];
  }
  return j;
}

std::vector<std::string> group_names(const FittedModel& m) {
  if (m.summary.evidence && !m.summary.evidence->group_names.empty()) return m.summary.evidence->group_names;
  return m.prior.hyperparameter_names();
}

// The spec as the report's "options" show it (the command line's names).
nlohmann::json spec_options(const ModelSpec& spec) {
  nlohmann::json j = {{"model", to_string(spec.network.kind)},
                      {"likelihood", to_string(spec.likelihood.kind)},
                      {"prior", to_string(spec.prior.kind)},
                      {"alpha_groups", spec.prior.kind == PriorKind::kRidge ? "single" : "default"},
                      {"alpha_initial", spec.prior.alpha},
                      {"beta_initial", spec.likelihood.beta},
                      {"standardize", to_string(spec.standardize)}};
  if (spec.network.kind == NetworkKind::kMlp) {
    j["hidden"] = spec.network.hidden;
    j["activation"] = to_string(spec.network.activation);
  } else {
    j["intercept"] = spec.network.intercept;
  }
  if (spec.prior.kind == PriorKind::kLaplacian) j["smoothing_initial"] = spec.prior.smoothing;
  if (!spec.likelihood.offset_column.empty()) j["offset"] = spec.likelihood.offset_column;
  return j;
}

nlohmann::json evidence_trace(const EvidenceSummary& s, const std::vector<std::string>& names) {
  nlohmann::json trace = nlohmann::json::array();
  for (const EvidenceIteration& it : s.trace) {
    // Each round's log-evidence belongs to the α, β beside it, those its MAP ran at; the next
    // round's entry holds the re-estimated values.
    trace.push_back({{"iteration", it.iteration},
                     {"log_evidence", finite_or_null(it.log_evidence)},
                     {"alpha", per_group(names, it.alpha)},
                     {"beta", finite_or_null(it.beta)},
                     {"gamma_total", it.gamma.sum()},
                     {"map_iterations", it.map_iterations},
                     {"accepted", it.accepted}});
  }
  return trace;
}

nlohmann::json variational_json(const VariationalSummary& v) {
  nlohmann::json trace = nlohmann::json::array();
  for (const VariationalIteration& it : v.trace) {
    trace.push_back(
        {{"iteration", it.iteration}, {"elbo", it.elbo}, {"relative_change", finite_or_null(it.relative_change)}});
  }
  return {{"termination", to_string(v.termination)},
          {"message", v.message},
          {"family", v.family.name()},
          {"hyper", to_string(v.hyper)},
          {"elbo_standardized", v.elbo},
          {"expected_log_likelihood", v.expected_log_likelihood},
          {"expected_log_prior", v.expected_log_prior},
          {"entropy", v.entropy},
          {"iterations", v.iterations},
          {"failed_steps", v.failed_steps},
          {"learning_rate_chosen", v.learning_rate},
          {"adapt_iterations", v.adapt_iterations},
          {"seconds", v.seconds},
          {"seconds_per_iteration", v.seconds_per_iteration},
          {"trace", trace}};
}

}  // namespace

nlohmann::json fit_report(const FittedModel& m) {
  if (const Committee* c = m.committee()) return c->report();  // its members' reports within
  const FitSummary& s = m.summary;
  const std::vector<std::string> names = group_names(m);
  nlohmann::json options = spec_options(m.spec);
  if (s.options.is_object()) options.update(s.options);
  nlohmann::json report = {
      {"occam_version", version()},
      {"termination", to_string(s.termination)},
      {"message", s.message},
      {"method", posterior_kind(m.posterior)},
      {"log_evidence", finite_or_null(s.log_evidence)},
      {"symmetry_log_factor", s.symmetry_log_factor},
      {"alpha", per_group(m.prior.hyperparameter_names(), m.prior.hyperparameters())},
      {"beta", m.likelihood->has_precision() ? nlohmann::json(m.likelihood->precision()) : nlohmann::json()},
      {"train_rmse", finite_or_null(s.train_rmse)},
      {"train_accuracy", finite_or_null(s.train_accuracy)},
      {"seconds", s.seconds},
      {"num_data", s.num_data},
      {"num_params", s.num_params},
      {"network", {{"description", m.network->describe()}, {"architecture", m.network->to_json()}}},
      {"likelihood", m.likelihood->to_json()},
      {"options", options}};
  if (!s.data_source.empty()) report["data"] = s.data_source;
  report["target"] = m.target_name;
  if (s.evidence) {
    const EvidenceSummary& e = *s.evidence;
    report.update({{"log_evidence_standardized", e.log_evidence},
                   {"alpha", per_group(names, e.alpha)},
                   {"beta", finite_or_null(e.beta)},
                   {"gamma", per_group(names, e.gamma)},
                   {"gamma_total", e.gamma_total},
                   {"E_W", per_group(names, e.E_W)},
                   {"E_D", e.E_D},
                   {"clipped_eigenvalues", e.clipped_eigenvalues},
                   {"iterations", e.outer_iterations},
                   {"map_iterations", e.map_iterations},
                   {"abandoned_trials", e.abandoned_trials},
                   {"map_steps",
                    {{"interior", e.map_steps.interior},
                     {"boundary", e.map_steps.boundary},
                     {"negative_curvature", e.map_steps.negative_curvature},
                     {"refused", e.map_steps.refused}}},
                   {"trace", evidence_trace(e, names)}});
    if (e.resumed_at_step >= 0) report["resumed_at_step"] = e.resumed_at_step;  // LaplaceMethod::checkpoint
    if (e.subset_start.rows > 0) {
      const EvidenceSummary::SubsetStart& st = e.subset_start;
      report["start_rows"] = {{"rows", st.rows},
                              {"termination", to_string(st.termination)},
                              {"iterations", st.outer_iterations},
                              {"map_iterations", st.map_iterations},
                              {"log_evidence_standardized", st.log_evidence},
                              {"seconds", st.seconds}};
    }
    // The optimality conditions at the returned state, and what ended the loop (evidence.h).
    std::vector<std::string> hyper_names = names;  // the prior's hyperparameters, then β
    if (e.hyper_gradient.size() > static_cast<Index>(names.size())) hyper_names.push_back("beta");
    report["optimality"] = {{"gradient_norm", e.gradient_norm},
                            {"gradient_tolerance", e.gradient_tolerance},
                            {"hyper_gradient", per_group(hyper_names, e.hyper_gradient)},
                            {"hyper_gradient_kind", to_string(e.hyper_gradient_kind)},
                            {"hyper_gradient_norm", e.hyper_gradient_norm},
                            {"hyper_gradient_tolerance", e.hyper_gradient_tolerance},
                            {"min_hessian_eigenvalue", finite_or_null(e.min_hessian_eigenvalue)},
                            {"at_bound", e.at_bound},
                            {"stopping_test", e.stopping_test},
                            {"loop", to_string(e.loop)},
                            {"loop_choice", e.loop_choice},
                            {"hessian_structure", to_string(e.hessian_structure)},
                            {"well_determined_units", e.well_determined_units}};
    // lowrank:K: how the Lanczos iteration behind its eigenpairs ended (laplace.h, LanczosSummary).
    if (const auto* q = std::get_if<LaplaceApproximation>(&m.posterior);
        q != nullptr && q->structure().kind == HessianStructureKind::kLowRank) {
      const LanczosSummary& lanczos = *q->precision_as<internal::WoodburyPrecision>()->lanczos();
      report["optimality"]["lanczos"] = {{"steps", lanczos.steps},
                                         {"max_relative_residual", lanczos.max_relative_residual},
                                         {"converged", lanczos.converged}};
    }
  }
  if (s.map) report.update({{"map_iterations", s.map->iterations}, {"gradient_norm", s.map->gradient_norm}});
  if (s.variational) {
    // The ELBO, a lower bound on the log-evidence, beside the Laplace value at the same α, β.
    report["elbo"] = finite_or_null(s.elbo);
    report["elbo_std_error"] = s.variational->elbo_std_error;
    if (s.evidence) report["laplace_termination"] = to_string(s.evidence->termination);
    report["vi"] = variational_json(*s.variational);
  }
  if (s.sampler) {
    int divergences = 0;
    for (const mcmc::ChainSummary& c : s.sampler->chains) divergences += c.divergences;
    report["mcmc"] = {{"chains", s.sampler->chains.size()},
                      {"divergences", divergences},
                      {"seconds", s.sampler->seconds},
                      {"interrupted", s.sampler->interrupted}};
  }
  if (s.cv) {
    const CvSummary& cv = *s.cv;
    nlohmann::json points = nlohmann::json::array();
    for (const CvPoint& p : cv.points) {
      points.push_back({{"alpha", p.alpha},
                        {"test_log_likelihood", p.test_log_likelihood},
                        {"test_log_likelihood_se", p.test_log_likelihood_se},
                        {"log_evidence", finite_or_null(p.log_evidence)}});
    }
    report["cv"] = {{"best_cv", cv.best_cv}, {"best_evidence", cv.best_evidence}, {"points", points}};
  }
  return report;
}

std::string brief_report(const FittedModel& m) {
  if (const Committee* c = m.committee()) return c->brief_report();
  const FitSummary& s = m.summary;
  const std::vector<std::string> names = group_names(m);
  const auto groups = [&](const Eigen::VectorXd& v, const char* fmt) {
    std::string text;
    for (std::size_t g = 0; g < names.size() && static_cast<Index>(g) < v.size(); ++g) {
      text += (g ? ", " : "") + names[g] + " " + format(fmt, v[static_cast<Index>(g)]);
    }
    return text;
  };
  std::string out;
  out += format("%-14s%s", "network", m.network->describe().c_str());
  out += format(", %lld parameters, %lld examples\n", static_cast<long long>(s.num_params),
                static_cast<long long>(s.num_data));
  out += format("%-14s%s", "termination", to_string(s.termination));
  if (!s.message.empty()) out += " (" + s.message + ")";
  out += '\n';
  if (s.evidence && !s.evidence->loop_choice.empty()) {
    out += format("%-14s%s (--evidence-loop auto)\n", "loop", s.evidence->loop_choice.c_str());
  }
  if (s.variational) {
    out += format("%-14s%s, hyper %s, %d iterations\n", "VI", s.variational->family.name().c_str(),
                  to_string(s.variational->hyper), s.variational->iterations);
    out +=
        format("%-14s%.6g ± %.2g (a lower bound on the log-evidence)\n", "ELBO", s.elbo, s.variational->elbo_std_error);
    out += format("%-14s%.6g (Laplace at the same α, β; with the symmetry term %.6g)\n", "log-evidence", s.log_evidence,
                  s.log_evidence + s.symmetry_log_factor);
  } else if (s.evidence) {
    const std::string structure =
        s.evidence->hessian_structure.full() ? "" : to_string(s.evidence->hessian_structure) + " Laplace; ";
    out += format("%-14s%.6g (%swith the symmetry term %.6g)\n", "log-evidence", s.log_evidence, structure.c_str(),
                  s.log_evidence + s.symmetry_log_factor);
  }
  const Eigen::VectorXd alpha = m.prior.hyperparameters();
  out += format("%-15s%s\n", "α", groups(alpha, "%.4g").c_str());
  if (m.likelihood->has_precision()) {
    const double beta = m.likelihood->precision();
    out += format("%-15s%.4g (noise std %.4g)\n", "β", beta, 1.0 / std::sqrt(beta));
  }
  if (s.evidence) {
    out += format("%-15s%.4g of %lld (%s)\n", "γ", s.evidence->gamma_total, static_cast<long long>(s.num_params),
                  groups(s.evidence->gamma, "%.3g").c_str());
  }
  if (m.noise && s.noise_evidence) {
    // β above is the mean's fit's; the predictions use the noise network's σ²(x) instead.
    const EvidenceSummary& n = *s.noise_evidence;
    out += format("%-14s%s, %s, log-evidence %.6g, γ %.4g of %lld; σ²(x) replaces 1/β in the predictions\n",
                  "noise model", m.noise->network->describe().c_str(), to_string(n.termination), n.log_evidence,
                  n.gamma_total, static_cast<long long>(m.noise->network->num_params()));
  }
  // ARD groups are named "input:<column>" (fit() passes the column names).
  if (std::any_of(names.begin(), names.end(), [](const std::string& n) { return n.starts_with("input:"); })) {
    // ARD: an input's relevance is the prior std of its weights, 1/√α (MacKay 1994).
    std::string text;
    for (std::size_t g = 0; g < names.size() && static_cast<Index>(g) < alpha.size(); ++g) {
      if (!names[g].starts_with("input:")) continue;
      text += (text.empty() ? "" : ", ") + names[g].substr(6) + " " +
              format("%.3g", 1.0 / std::sqrt(alpha[static_cast<Index>(g)]));
    }
    out += format("%-14s%s\n", "relevance", text.c_str());
  }
  if (std::isfinite(s.train_rmse)) out += format("%-14s%.6g\n", "train RMSE", s.train_rmse);
  if (std::isfinite(s.train_accuracy)) out += format("%-14s%.4g\n", "accuracy", s.train_accuracy);
  if (s.variational) {
    out += format("%-14s%.3g s VI (%.3g ms per step) + %.3g s Laplace\n", "time", s.variational->seconds,
                  1e3 * s.variational->seconds_per_iteration, s.evidence ? s.evidence->seconds : 0.0);
  } else if (s.evidence) {
    out += format("%-14s%.3g s (%d re-estimations, %d MAP iterations)\n", "time", s.evidence->seconds,
                  s.evidence->outer_iterations, s.evidence->map_iterations);
    if (const EvidenceSummary::SubsetStart& st = s.evidence->subset_start; st.rows > 0) {
      // start_rows: the fit above started where the ascent on the sample ended; its time is in the
      // total.
      out += format("%-14son %lld of the %lld rows: %s, %.3g s (%d re-estimations, %d MAP iterations)\n", "start",
                    static_cast<long long>(st.rows), static_cast<long long>(s.num_data), to_string(st.termination),
                    st.seconds, st.outer_iterations, st.map_iterations);
    }
  } else {
    out += format("%-14s%.3g s\n", "time", s.seconds);
  }
  if (s.evidence && s.evidence->clipped_eigenvalues > 0) {
    out += format("%-14s%d negative Hessian eigenvalues clipped to zero\n", "note", s.evidence->clipped_eigenvalues);
  }
  if (m.standardizer.mode != Standardize::kNone) {
    out += m.standardizer.standardizes_targets()
               ? "(α and β are for the standardised data; RMSE and log-evidence are in the target's units)\n"
               : "(α are for the standardised inputs)\n";
  }
  return out;
}

}  // namespace occam
