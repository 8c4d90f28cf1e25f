// committee.h — a committee of Laplace approximations from independent starts, weighted by their
// evidence (MacKay 1992b, §6; a mixture of Laplace approximations).
//
// A network's posterior has many modes, and one Laplace approximation describes one of them.
// fit_committee() fits the same model from `members` independent random starts, each by
// LaplaceMethod (the evidence framework: its own MAP, α, β and Laplace approximation), and
// predicts with the mixture
//   p(y | x, D) ≈ Σ_k π_k p(y | x, D, member k),   π_k ∝ exp(log Z_k + log S_k),
// where Z_k is member k's Laplace evidence p(D | α_k, β_k) and S_k its symmetry count (the
// log(H!) + H log 2 equivalent modes its approximation stands for, counting its well-determined
// hidden units; MacKay 1992b, §4): π_k is member k's share of the posterior mass that the members
// found, each at its own most probable α, β. With `weighting = kEqual` every member counts the
// same (MacKay's plain committee average).
//
// The evidence weights are those of the approximation: members whose log-evidences differ by tens
// of nats put all the weight on one, and two members that reach the same mode count its mass
// twice. Member 0 starts from `method.start` itself, so it is the plain LaplaceMethod fit.
//
// fit() is the entry point: a LaplaceMethod with `committee` set returns the committee as one
// FittedModel whose posterior is the members' mixture (LaplaceMixture, fitted_model.h), which
// predicts, reports, saves and loads as any model does. fit_committee() below is the job behind it,
// and Committee the members themselves (FittedModel::committee()).
//
//   occam::LaplaceMethod method;
//   method.committee = occam::CommitteeOptions{};        // 5 members, weighted by evidence
//   occam::FittedModel m = occam::fit(spec, data, method);
//   occam::Prediction p = m.predict(X_test);             // the mixture's mean, std and 95% interval
//   occam::save_model("committee.json", m);              // a committee file; load_model reads it back
//   const occam::Committee& c = *m.committee();          // the members, their evidence and weights
#pragma once

#include <Eigen/Core>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "occam/fit.h"
#include "occam/fitted_model.h"
#include "occam/memory.h"

namespace occam {

// Throws Error(kInvalidArgument) unless the spec's likelihood is gaussian or hetero, the families
// whose predictives are Gaussian (fit_committee checks it first).
void check_committee_spec(const ModelSpec& spec);

// The memory the committee asks for (memory.h): one fit's, times the members fitted at once
// (options.threads, 0 meaning one per core, at most `members`), and every member's kept W × W factor
// when the method's Laplace approximation is the full one. fit_committee refuses the committee
// before its first member by this request and the method's MemoryLimit.
FitMemoryRequest committee_memory_request(const ModelSpec& spec, const Dataset& data, const LaplaceMethod& method,
                                          const CommitteeOptions& options);

// The start of member k: member 0 `start` itself, member k ≥ 1 the random initial weights of a seed
// of its own derived from (start.seed, k), on start.stream.
StartOptions committee_member_start(const StartOptions& start, int k);

// One member's part: the index it was started as, and its fit or why it has none.
struct CommitteeMember {
  int index = 0;
  double log_evidence = 0.0;  // log Z_k + log S_k, in the target's original units (NaN: none)
  double weight = 0.0;        // π_k
  std::string failure;        // why the member has no fit (an error while fitting), else empty
  // Read back from the committee's folder (CommitteeOptions::directory) rather than fitted by this
  // call: its model then has its summary's scalars but not the engines' own summaries.
  bool read_back = false;
};

struct Committee {
  ModelSpec spec;
  CommitteeOptions options;
  std::vector<FittedModel> models;       // the members that fitted, in member order
  std::vector<CommitteeMember> members;  // every member started, in order; models[i] is the i-th without a failure
  Eigen::VectorXd weights;               // π of models[i], summing to 1
  bool interrupted = false;              // the callback asked to stop; the members not started were skipped
  // Wall time of the fit, with each member read back from the folder counted at the seconds its
  // own fit took.
  double seconds = 0.0;

  // The mixture's predictive at X (original units, as FittedModel::predict): each member's
  // predictive, read as the Gaussian N(mean_k, std_k²) it is for the gaussian and hetero families
  // (options.method picks how each member computes it), mixed with the weights: mean Σ π_k mean_k,
  // variance Σ π_k (std_k² + mean_k²) − mean², and the interval between the mixture's own
  // (1 ∓ level)/2 quantiles.
  Prediction predict(const Eigen::MatrixXd& X, const PredictOptions& options = {}) const;
  // The same with the inputs taken from a table by column name, in any order (the members'
  // feature_names; FittedModel::predict(const Table&)).
  Prediction predict(const Table& inputs, const PredictOptions& options = {}) const;
  // log p(y_n | x_n) of the mixture, per row (log-sum-exp over the members).
  Eigen::VectorXd log_predictive_density(const Eigen::MatrixXd& X, const Eigen::VectorXd& y,
                                         const PredictOptions& options = {}) const;

  // A few lines for a person: each member's termination, log-evidence and weight.
  std::string brief_report() const;
  // The committee's report (JSON; docs/cli.md, "Committees"): "method": "committee", weighting,
  // members_requested, interrupted, seconds, "termination" (aborted when interrupted, else
  // converged when every member that fitted converged, else the first other member's), and per
  // member its index (0-based), termination, log_evidence (null: none), weight, failure and its
  // own report.
  nlohmann::json report() const;
  // "converged", "maximum_iterations", ...: the report's "termination".
  Termination termination() const;
};

// Fits the committee (what fit() runs for LaplaceMethod::committee; `method.committee` itself is
// ignored, each member is fitted without it). The spec's likelihood must be gaussian or hetero (their predictives are
// Gaussian). A member whose fit fails numerically (Error(kNumerical)) is recorded and left out; the
// committee throws that error only when no member fits. Other errors (a bad spec, bad data) are
// the same for every member and are thrown at once. The callback sees every member's iterations,
// with FitProgress::member set; kAbort stops the running members (they keep their best state)
// and skips the rest. Members are fitted serially or on options.threads threads; the result is
// the same either way.
Committee fit_committee(const ModelSpec& spec, const Dataset& data, const LaplaceMethod& method,
                        const CommitteeOptions& options = {}, const FitCallback& callback = {});

// The seconds the members read back from the folder took when they were fitted: the part of
// Committee::seconds that was not spent by the call that returned it.
double read_back_seconds(const Committee& c);

// Member k (0-based) of a committee's folder (CommitteeOptions::directory) as fit_committee reads it
// back: its model, when the folder holds its file and that member was fitted from this spec, data
// and method (member k's start derived from method.start by committee_member_start; method's own
// committee and noise model are not part of a member's fit). Member 0 is the plain fit(spec, data,
// method) — the Laplace fit a heteroscedastic fit starts from. None when there is no file or the
// member failed; Error(kInvalidArgument) naming what differs when it was fitted otherwise,
// Error(kInvalidInput) when the file is damaged. Its summary has the scalars it was fitted with
// (termination, log_evidence, seconds, ...), not the engines' own summaries.
std::optional<FittedModel> read_committee_member(const std::string& directory, int k, const ModelSpec& spec,
                                                 const Dataset& data, const LaplaceMethod& method);

// The committee as one model: a FittedModel whose posterior is the members' mixture
// (LaplaceMixture), its network, likelihood, prior, standardizer and names the first member's, its
// summary the committee's termination, message and time, and its report c.report(). What fit()
// returns for LaplaceMethod::committee and load_model reads from a committee file.
FittedModel committee_model(Committee c);

// Weights the committee's members again by `weighting` (and records it in options.weighting), from
// the log-evidences they were fitted with: the committee fit_committee would have returned with that
// weighting, bit for bit, without fitting anything (fit_committee weights its members by this very
// function). Throws Error(kNumerical), leaving *c as it was, for kEvidence when no member has a finite
// log-evidence, and Error(kInvalidArgument) for a null committee or one whose models do not match
// its fitted members.
void reweight_committee(Committee* c, CommitteeWeighting weighting);

// The committee file: one JSON file holding every member's model, so that a committee predicts
// after loading exactly as it did when fitted (bit for bit):
//   {"format": "occam-committee", "version": 1, "spec", "weighting", "members_requested",
//    "interrupted", "seconds", "members": [{index, log_evidence, weight, failure}],
//    "models": [one model file object (io.h) per member that fitted, in member order],
//    "summary": report()}
// Written atomically. Throws Error(kIo) when the file cannot be written.
void save_committee(const std::string& path, const Committee& committee);
// save_model(path, model) writes this file for a model whose posterior is a committee's mixture.
// Throws Error(kIo) when unreadable, Error(kInvalidInput) when corrupt (members that disagree
// with the models, weights that do not sum to 1, models with other inputs), of a newer version,
// or a single model's file (read that with load_model, which reads committee files too).
Committee load_committee(const std::string& path);
// Whether `path` is a file whose top-level "format" is "occam-committee" (false for a folder, an
// unreadable file or anything else; load_committee then says what is wrong).
bool is_committee_file(const std::string& path);

}  // namespace occam
