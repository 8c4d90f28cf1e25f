// _occam.cc — occam's fit service for Python: occam::fit, FittedModel::predict and the model
// file, nothing more. The package around it (python/occam/) turns scikit-learn style parameters
// into a ModelSpec (as JSON, read by ModelSpec::from_json) and method options (JSON, read by the
// library's method_from_json from its table of options, occam/method_options.h);
// every number is computed here, by the library.
//
// Arrays: inputs arrive as float64 arrays of any strides, mapped without conversion
// (Eigen::Ref with dynamic strides) and copied once into the Dataset the library owns; results
// (Eigen vectors and matrices) are moved into NumPy arrays that own their buffers, no copy.
// Fits run on a worker thread with the GIL released; the calling thread waits, re-acquiring the
// GIL every 50 ms to run Python's signal handlers (PyErr_CheckSignals), so that Ctrl-C stops
// the fit through the library's callback (kAbort) and raises KeyboardInterrupt.
#include <pybind11/eigen.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <malloc.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "occam/callback.h"
#include "occam/committee.h"
#include "occam/cv.h"
#include "occam/fit.h"
#include "occam/heteroscedastic.h"
#include "occam/io.h"
#include "occam/mcmc/diagnostics.h"
#include "occam/method_options.h"
#include "occam/prior.h"
#include "occam/status.h"
#include "occam/version.h"

namespace py = pybind11;

namespace occam::python {
namespace {

using Strided = Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>;
using MatrixRef = Eigen::Ref<const Eigen::MatrixXd, 0, Strided>;
using VectorRef = Eigen::Ref<const Eigen::VectorXd, 0, Eigen::InnerStride<>>;

nlohmann::json parse_json(const std::string& text, const char* what) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::kInvalidArgument, std::string(what) + ": not JSON (" + e.what() + ")");
  }
}

// The spec as ModelSpec::from_json reads it, with two conveniences of the command line resolved
// first: prior.grid ("20x20", "40") and prior.edges_file (an edge list over the inputs).
ModelSpec spec_from_json(nlohmann::json j, Index inputs) {
  if (j.contains("prior") && j["prior"].is_object()) {
    nlohmann::json& prior = j["prior"];
    std::optional<Graph> graph;
    if (prior.contains("grid")) graph = parse_grid(prior["grid"].get<std::string>());
    if (prior.contains("edges_file")) graph = read_edge_list(prior["edges_file"].get<std::string>(), inputs);
    if (graph) {
      nlohmann::json edges = nlohmann::json::array();
      for (const auto& [a, b, weight] : graph->edges) edges.push_back({a, b, weight});
      prior["graph"] = {{"nodes", graph->nodes}, {"edges", edges}};
    }
    prior.erase("grid");
    prior.erase("edges_file");
  }
  try {
    return ModelSpec::from_json(j);
  } catch (const Error& e) {  // from_json speaks of a file's contents; here they are arguments
    throw Error(ErrorKind::kInvalidArgument, e.what());
  }
}

// Runs fit() on a worker thread while this thread, the one that called from Python, watches for
// signals. `progress` (may be None) is called with one line per iteration, under the GIL.
// `run` is the fit, given the library's callback.
template <typename Result, typename Run>
Result fit_watching_signals(const Run& run, const py::object& progress) {
  std::atomic<bool> stop{false};
  std::mutex error_mutex;
  std::exception_ptr callback_error;  // an exception the progress function raised
  const bool report = !progress.is_none();
  const FitCallback callback = [&](const FitProgress& p) {
    if (stop.load()) return CallbackReturn::kAbort;
    if (report) {
      py::gil_scoped_acquire gil;
      try {
        progress(p.describe(), p.chain, p.iteration, p.total);
      } catch (py::error_already_set&) {
        const std::lock_guard<std::mutex> lock(error_mutex);
        if (!callback_error) callback_error = std::current_exception();
        stop = true;
        return CallbackReturn::kAbort;
      }
    }
    return CallbackReturn::kContinue;
  };

  std::future<Result> result = std::async(std::launch::async, [&] {
    const ScopedStopFlag watch(&stop);  // computations without a callback of their own poll it
    return run(callback);
  });
  std::optional<py::error_already_set> interrupt;
  while (true) {
    bool done = false;
    {
      py::gil_scoped_release release;
      done = result.wait_for(std::chrono::milliseconds(50)) == std::future_status::ready;
    }
    if (done) break;
    if (!interrupt && PyErr_CheckSignals() != 0) {  // a handler raised: KeyboardInterrupt on Ctrl-C
      interrupt.emplace();
      stop = true;
    }
  }
  Result model;
  try {
    model = result.get();  // ready: no wait
  } catch (...) {
    if (!interrupt && !callback_error) throw;  // else what stopped the fit is the error to raise
  }
  if (interrupt) throw std::move(*interrupt);
  if (callback_error) std::rethrow_exception(callback_error);
  return model;
}

// A method option the library's method does not read, taken out of `options` (null: absent).
nlohmann::json take_option(nlohmann::json& options, const char* name) {
  if (!options.is_object() || !options.contains(name)) return nullptr;
  nlohmann::json value = options[name];
  options.erase(name);
  return value;
}

py::object fit_arrays(const std::string& spec_json, const MatrixRef& X, const MatrixRef& Y,
                      std::vector<std::string> feature_names, std::string target_name,
                      std::vector<std::string> class_labels, std::optional<VectorRef> offset,
                      const std::string& method_json, const py::object& progress) {
  const ModelSpec spec = spec_from_json(parse_json(spec_json, "model specification"), X.cols());
  nlohmann::json method_options = parse_json(method_json, "method options");
  // "threads" beside "committee": the members fitted at once, as the command line's --threads with
  // --committee (LaplaceMethod's own row sums run on one thread then).
  const bool committee =
      method_options.is_object() && method_options.contains("committee") && !method_options["committee"].is_null();
  const nlohmann::json threads = committee ? take_option(method_options, "threads") : nlohmann::json();
  MethodOptions method = method_from_json(method_options);
  auto* laplace = std::get_if<LaplaceMethod>(&method);
  if (laplace != nullptr && laplace->committee && !threads.is_null()) {
    if (!threads.is_number_integer()) {
      throw Error(ErrorKind::kInvalidArgument, "method options: threads = " + threads.dump() + ": must be an integer");
    }
    laplace->committee->threads = threads.get<int>();
    laplace->committee->validate();
  }
  Dataset data;
  data.X = X;  // the one copy: the library's Dataset owns its columns
  data.Y = Y;
  data.feature_names = std::move(feature_names);
  data.target_name = std::move(target_name);
  data.class_labels = std::move(class_labels);
  if (offset) data.offset = *offset;
  return py::cast(fit_watching_signals<FittedModel>(
      [&](const FitCallback& callback) { return fit(spec, data, method, callback); }, progress));
}

// The library's table of method options (method_options.h), for the estimators: which methods a
// keyword applies to, its default and choices.
std::string method_option_table_json() {
  nlohmann::json table = nlohmann::json::array();
  const auto type_name = [](MethodOptionType type) {
    switch (type) {
      case MethodOptionType::kInteger:
        return "integer";
      case MethodOptionType::kNumber:
        return "number";
      case MethodOptionType::kBoolean:
        return "boolean";
      case MethodOptionType::kChoice:
        return "choice";
      case MethodOptionType::kText:
        return "text";
    }
    return "?";
  };
  for (const MethodOption& o : method_option_table()) {
    nlohmann::json defaults = nlohmann::json::object();
    for (const std::string& method : o.methods) defaults[method] = o.default_value(method);
    nlohmann::json entry = {{"key", o.key},
                            {"flag", o.flag != nullptr ? nlohmann::json(o.flag) : nlohmann::json()},
                            {"type", type_name(o.type)},
                            {"methods", o.methods},
                            {"defaults", defaults},
                            {"choices", o.all_choices()},
                            {"help", o.help},
                            {"no_flag", o.no_flag != nullptr ? nlohmann::json(o.no_flag) : nlohmann::json()},
                            {"no_keyword", o.no_keyword != nullptr ? nlohmann::json(o.no_keyword) : nlohmann::json()}};
    if (std::isfinite(o.minimum)) entry["minimum"] = o.minimum;
    if (std::isfinite(o.maximum)) entry["maximum"] = o.maximum;
    table.push_back(entry);
  }
  return table.dump();
}

PredictOptions predict_options(const std::string& method, double level, int samples, std::uint64_t seed,
                               Index max_draws, bool keep_draws) {
  PredictOptions options;
  options.method = parse_predictive_method(method);
  options.level = level;
  options.samples = samples;
  options.seed = seed;
  options.max_draws = max_draws;
  options.keep_draws = keep_draws;
  options.validate();
  return options;
}

// A Prediction as a dict of NumPy arrays, each moved out of the C++ object (no copy).
py::dict prediction_dict(Prediction p) {
  py::dict d;
  d["mean"] = py::cast(std::move(p.mean));
  d["std"] = py::cast(std::move(p.std));
  d["lower"] = py::cast(std::move(p.lower));
  d["upper"] = py::cast(std::move(p.upper));
  if (p.probabilities.size() > 0) d["probabilities"] = py::cast(std::move(p.probabilities));
  if (!p.labels.empty()) d["labels"] = py::cast(p.labels);
  if (p.draws.size() > 0) d["draws"] = py::cast(std::move(p.draws));
  return d;
}

py::dict predict_arrays(const FittedModel& model, const MatrixRef& X, std::optional<VectorRef> offset,
                        const std::string& method, double level, int samples, std::uint64_t seed, Index max_draws,
                        bool keep_draws) {
  const PredictOptions options = predict_options(method, level, samples, seed, max_draws, keep_draws);
  Prediction p;
  {
    const Eigen::MatrixXd inputs = X;  // FittedModel::predict takes an owned matrix
    const Eigen::VectorXd shift = offset ? Eigen::VectorXd(*offset) : Eigen::VectorXd();
    py::gil_scoped_release release;
    p = model.predict(inputs, options, offset ? &shift : nullptr);
  }
  return prediction_dict(std::move(p));
}

// The committee a model's posterior is the mixture of (a fit with method option 'committee').
const Committee& committee_of(const FittedModel& model) {
  const Committee* c = model.committee();
  if (c == nullptr) {
    throw Error(ErrorKind::kInvalidArgument,
                std::string("the model is not a committee (posterior kind ") + posterior_kind(model.posterior) + ")");
  }
  return *c;
}

py::list committee_members(const FittedModel& model) {
  const Committee& c = committee_of(model);
  py::list out;
  for (const CommitteeMember& m : c.members) {
    py::dict d;
    d["index"] = m.index;
    d["log_evidence"] = m.log_evidence;
    d["weight"] = m.weight;
    d["failure"] = m.failure;
    d["read_back"] = m.read_back;
    out.append(d);
  }
  return out;
}

// The MCMC run: per column of the sampler's table (sampler columns, weights, α, β, monitored f)
// a chains × draws array, and the diagnostics of each column as R's posterior package gives them.
py::dict sampler_output(const FittedModel& model) {
  if (!model.summary.sampler)
    throw Error(ErrorKind::kInvalidArgument, "the model was not fitted by MCMC in this process");
  const mcmc::SamplerSummary& s = *model.summary.sampler;
  Index draws = -1;
  for (const Eigen::MatrixXd& chain : s.draws) draws = draws < 0 ? chain.rows() : std::min(draws, chain.rows());
  draws = std::max<Index>(draws, 0);
  const Index chains = static_cast<Index>(s.draws.size());
  py::dict columns;
  py::dict diagnostics;
  for (std::size_t c = 0; c < s.columns.size(); ++c) {
    Eigen::MatrixXd by_chain(chains, draws);  // (chain, draw), the layout of ArviZ's from_dict
    for (Index k = 0; k < chains; ++k) {
      by_chain.row(k) = s.draws[static_cast<std::size_t>(k)].col(static_cast<Index>(c)).head(draws).transpose();
    }
    const mcmc::Diagnostics d = mcmc::diagnose(by_chain.transpose());
    diagnostics[py::str(s.columns[c])] =
        std::vector<double>{d.mean, d.sd, d.q5, d.median, d.q95, d.rhat, d.ess_bulk, d.ess_tail, d.mcse_mean};
    columns[py::str(s.columns[c])] = py::cast(std::move(by_chain));
  }
  py::list chain_rows;
  for (const mcmc::ChainSummary& c : s.chains) {
    py::dict row;
    row["chain"] = c.chain;
    row["draws"] = c.draws;
    row["divergences"] = c.divergences;
    row["max_depth_hits"] = c.max_depth_hits;
    row["mean_accept_stat"] = c.mean_accept_stat;
    row["step_size"] = c.step_size;
    row["gradient_evaluations"] = c.gradient_evaluations;
    chain_rows.append(row);
  }
  py::dict out;
  out["columns"] = s.columns;
  out["draws"] = columns;
  out["diagnostics"] = diagnostics;
  out["diagnostic_names"] =
      std::vector<std::string>{"mean", "sd", "q5", "median", "q95", "rhat", "ess_bulk", "ess_tail", "mcse_mean"};
  out["chains"] = chain_rows;
  return out;
}

// log p(y_n | x_n, D) per row in the target's units, under the linearised predictive of a Laplace
// fit or the plug-in one of a point estimate: the library's held-out log-likelihood (cv.h), with
// the Jacobian 1/y_scale of standardised targets; for a committee its mixture's
// (Committee::log_predictive_density, in the original units already).
Eigen::VectorXd log_predictive_density_of(const FittedModel& model, const MatrixRef& X, const VectorRef& y,
                                          std::optional<VectorRef> offset) {
  if (X.rows() != y.size()) {
    throw Error(ErrorKind::kInvalidArgument, "log_predictive_density: X has " + std::to_string(X.rows()) +
                                                 " rows but y " + std::to_string(y.size()) + " entries");
  }
  if (model.noise)
    throw Error(ErrorKind::kInvalidArgument, "log_predictive_density: not for a model with a noise model");
  if (X.cols() != model.network->num_inputs()) {
    throw Error(ErrorKind::kInvalidArgument, "log_predictive_density: X has " + std::to_string(X.cols()) +
                                                 " columns but the model has " +
                                                 std::to_string(model.network->num_inputs()) + " features");
  }
  if (const Committee* c = model.committee()) {
    if (offset)
      throw Error(ErrorKind::kInvalidArgument, "log_predictive_density: a committee's members take no offset");
    return c->log_predictive_density(Eigen::MatrixXd(X), Eigen::VectorXd(y));
  }
  const Eigen::MatrixXd Z = model.standardizer.transform_inputs(X);
  Eigen::MatrixXd f_mean, f_var;
  if (const auto* q = std::get_if<LaplaceApproximation>(&model.posterior)) {
    const bool softmax = model.likelihood->num_classes() > 0 && model.likelihood->num_outputs() > 1;
    linearized_outputs(*model.network, *q, Z, softmax, &f_mean, &f_var);
  } else if (const auto* point = std::get_if<PointEstimate>(&model.posterior)) {
    model.network->forward(point->weights, Z, &f_mean);
    f_var = Eigen::MatrixXd::Zero(f_mean.rows(), f_mean.cols());
  } else {
    throw Error(ErrorKind::kInvalidArgument, "log_predictive_density: Laplace and MAP fits only");
  }
  if (model.spec.likelihood.offset_column.empty() != !offset.has_value()) {
    throw Error(ErrorKind::kInvalidArgument, offset ? "log_predictive_density: the model has no offset column"
                                                    : "log_predictive_density: the model needs its offset");
  }
  if (offset) f_mean.col(0) += *offset;
  const Standardizer& s = model.standardizer;
  const Eigen::MatrixXd Y = y;
  const Eigen::MatrixXd Yt = s.standardizes_targets() ? s.transform_targets(Y) : Y;
  model.likelihood->validate_targets(Yt);
  return (log_predictive_density(*model.likelihood, f_mean, f_var, Yt).array() - std::log(s.y_scale)).matrix();
}

// The posterior covariance of the weights, standardised units (Laplace: A⁻¹; VI: V).
Eigen::MatrixXd posterior_covariance(const FittedModel& model) {
  if (const auto* laplace = std::get_if<LaplaceApproximation>(&model.posterior)) return laplace->covariance();
  if (const auto* q = std::get_if<GaussianVariational>(&model.posterior)) return q->covariance();
  throw Error(ErrorKind::kInvalidArgument, std::string("a ") + posterior_kind(model.posterior) +
                                               " posterior has no covariance matrix (laplace and vi have)");
}

}  // namespace
}  // namespace occam::python

PYBIND11_MODULE(_occam, m) {
  using namespace occam;
  using namespace occam::python;
  // As the command-line tool does (apps/occam/main.cc): the evidence loops free and allocate
  // blocks of megabytes (W × W, m × W) at every iteration, which above glibc's mmap threshold are
  // fresh pages each time (breast cancer, 50 units: 0.5 of the fit's 5.9 CPU s in page faults).
  // Kept on the heap they are reused; the process keeps up to 512 MiB of freed heap in return.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  m.doc() = "occam's fit service: fit, predict, save and load (the package occam wraps it in estimators)";
  m.attr("__version__") = occam::kVersion;
  m.def("method_names", &method_names, "The methods fit takes: laplace, map, vi and the samplers");
  m.def("method_option_table", &method_option_table_json,
        "Every method option as JSON text: a list of {key, flag, type, methods, defaults (per method), choices, "
        "minimum, maximum, help, no_flag, no_keyword}, the table the method options are read through");

  // occam::Error by kind: bad arguments and bad data are ValueErrors (scikit-learn's convention),
  // unreadable or unwritable files OSErrors, failed computations ArithmeticErrors.
  static py::exception<Error> numerical(m, "NumericalError", PyExc_ArithmeticError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      switch (e.kind()) {
        case ErrorKind::kInvalidArgument:
        case ErrorKind::kInvalidInput:
          PyErr_SetString(PyExc_ValueError, e.what());
          return;
        case ErrorKind::kIo:
          PyErr_SetString(PyExc_OSError, e.what());
          return;
        case ErrorKind::kNumerical:
          PyErr_SetString(numerical.ptr(), e.what());
          return;
      }
    }
  });

  py::class_<FittedModel>(m, "FittedModel", "A fitted occam model: the spec, the posterior and the standardisation")
      .def("predict", &predict_arrays, py::arg("X"), py::arg("offset") = py::none(), py::arg("method") = "auto",
           py::arg("level") = 0.95, py::arg("samples") = 1000, py::arg("seed") = 1, py::arg("max_draws") = 0,
           py::arg("keep_draws") = false,
           "The predictive distribution at the rows of X (original units): a dict of arrays mean, std, "
           "lower, upper, and probabilities/labels for classifiers, draws with keep_draws")
      .def(
          "save", [](const FittedModel& model, const std::string& path) { save_model(path, model); }, py::arg("path"),
          "Writes the versioned model file (MCMC: a run directory's model.json and chains)")
      .def_static("load", &load_model, py::arg("path"), "Reads a model file or run directory")
      .def_property_readonly(
          "report", [](const FittedModel& model) { return model.report.dump(); },
          "The fit's report as JSON text (docs/cli.md, 'The report')")
      .def_property_readonly("spec", [](const FittedModel& model) { return model.spec.to_json().dump(); })
      .def_property_readonly("posterior_kind", [](const FittedModel& model) { return posterior_kind(model.posterior); })
      .def_property_readonly("feature_names", [](const FittedModel& model) { return model.feature_names; })
      .def_property_readonly("target_name", [](const FittedModel& model) { return model.target_name; })
      .def_property_readonly("termination",
                             [](const FittedModel& model) { return to_string(model.summary.termination); })
      .def_property_readonly("num_params", [](const FittedModel& model) { return model.network->num_params(); })
      .def_property_readonly(
          "posterior_mean", [](const FittedModel& model) { return posterior_mean(model.posterior); },
          "The weights the posterior is centred on (standardised units)")
      .def_property_readonly("posterior_covariance", &posterior_covariance,
                             "The weights' posterior covariance (standardised units; laplace and vi)")
      .def_property_readonly("alpha", [](const FittedModel& model) { return model.prior.hyperparameters(); })
      .def_property_readonly("alpha_names", [](const FittedModel& model) { return model.prior.hyperparameter_names(); })
      .def_property_readonly("standardizer",
                             [](const FittedModel& model) { return model.standardizer.to_json().dump(); })
      .def("sampler_output", &sampler_output, "MCMC: draws per column as (chain, draw) arrays and the diagnostics")
      .def("brief_report", [](const FittedModel& model) { return brief_report(model); })
      .def("log_predictive_density", &log_predictive_density_of, py::arg("X"), py::arg("y"),
           py::arg("offset") = py::none(),
           "log p(y_n | x_n, data) per row (target's units): the linearised predictive of a Laplace fit, the "
           "plug-in one of a MAP fit, the mixture density of a committee")
      .def(
          "noise_std", [](const FittedModel& model, const MatrixRef& X) { return noise_std(model, X); }, py::arg("X"),
          "σ(x), the noise standard deviation at the rows of X (original units): the noise model's, or 1/√β "
          "everywhere (gaussian models only)")
      .def_property_readonly("members", &committee_members,
                             "A committee's every member started: index, log_evidence (log Z + log symmetry count), "
                             "weight, failure, read_back (read from the committee_dir folder rather than fitted)")
      .def_property_readonly(
          "weights", [](const FittedModel& model) { return committee_of(model).weights; },
          "A committee's weight of each fitted member, in member order")
      .def_property_readonly(
          "models", [](const FittedModel& model) { return committee_of(model).models; },
          "A committee's members that fitted, as FittedModel copies");

  m.def("fit", &fit_arrays, py::arg("spec"), py::arg("X"), py::arg("Y"), py::arg("feature_names"),
        py::arg("target_name"), py::arg("class_labels"), py::arg("offset"), py::arg("method"),
        py::arg("progress") = py::none(),
        "occam::fit on arrays: spec and method as JSON text; Y is rows × 1 (class indices for a categorical "
        "likelihood, with class_labels). Releases the GIL; Ctrl-C raises KeyboardInterrupt. With method option "
        "'committee': K, a FittedModel whose posterior is the members' mixture (posterior_kind 'committee').");
  m.def("load_model", &load_model, py::arg("path"), "Reads a model file, a run directory or a committee file");
}
