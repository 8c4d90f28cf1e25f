// uci_map — the MAP of every UCI data set's split 0 (the network and start of the benchmark's
// laplace method) by Levenberg–Marquardt and by L-BFGS: does it converge, in how many iterations
// and how long. The evidence loop's first MAP run, without the loop.
//
// Per data set: the training rows of split 0 standardised, one tanh hidden layer of the protocol's
// width (n_hidden.txt: 50, protein 100), MacKay's four α groups at α = 1 and β = 10 (the CLI's
// starting values), initial weights from Rng(1, 0); MapOptions defaults (‖∇S‖ ≤ 1e-6·max(1, ‖w‖),
// 5000 iterations) but for the optimiser. Prints one JSON object per line, with wall-clock and
// process CPU seconds (on a shared machine the steadier of the two).
//
// Usage: uci_map [--optimizers lm,lbfgs] [--function-tolerance F] [--first-order N] [--trace]
//                [--data-dir DIR] [NAME ...]
// (default: every data set; F is MapOptions::function_tolerance, where Levenberg–Marquardt goes
// over from Gauss–Newton to the exact Hessian). --first-order N: a first-order phase before each
// optimiser — L-BFGS from the same start for at most N iterations, until S changes by less than
// 1e-6·max(1, |S|) over 10 iterations or ‖∇S‖ ≤ 1e-3·max(1, ‖w‖) — whose iterations and CPU seconds
// are reported beside the optimiser's (cpu_seconds is the whole). It measures whether a cheap
// approach to the mode saves the Newton-type iterations (docs/BENCHMARKS.md, "A first-order start").
// --trace: S and ‖∇S‖ after every iteration of the optimiser, on stderr.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "occam/data.h"
#include "occam/likelihood.h"
#include "occam/linear_algebra.h"
#include "occam/map.h"
#include "occam/mlp.h"
#include "occam/posterior.h"
#include "occam/prior.h"
#include "occam/rng.h"
#include "uci/uci_data.h"

#ifndef OCCAM_SOURCE_DIR
#define OCCAM_SOURCE_DIR "."
#endif

using namespace occam;

namespace {

double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

}  // namespace

int main(int argc, char** argv) {
  std::string data_dir = std::string(OCCAM_SOURCE_DIR) + "/../shared/data/uci";
  std::vector<std::string> names, optimizers = {"lm", "lbfgs"};
  MapOptions defaults;
  int first_order_iterations = 0;
  bool trace = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--data-dir" && i + 1 < argc) {
      data_dir = argv[++i];
    } else if (arg == "--function-tolerance" && i + 1 < argc) {
      defaults.function_tolerance = std::stod(argv[++i]);
    } else if (arg == "--first-order" && i + 1 < argc) {
      first_order_iterations = std::stoi(argv[++i]);
    } else if (arg == "--trace") {
      trace = true;
    } else if (arg == "--optimizers" && i + 1 < argc) {
      optimizers.clear();
      std::stringstream list(argv[++i]);
      for (std::string name; std::getline(list, name, ',');) optimizers.push_back(name);
    } else {
      names.push_back(arg);
    }
  }
  if (names.empty()) names = uci::list_datasets(data_dir);
  for (const std::string& name : names) {
    const uci::UciDataset dataset = uci::load_dataset(data_dir, name);
    const uci::UciSplit split = uci::load_split(dataset, 0);
    const Standardizer standardizer = Standardizer::fit(split.train, Standardize::kBoth);
    const Eigen::MatrixXd X = standardizer.transform_inputs(split.train.X);
    const Eigen::MatrixXd Y = standardizer.transform_targets(split.train.Y);
    const Mlp net(X.cols(), {dataset.hidden_units}, Activation::kTanh, 1);
    for (const std::string& optimizer : optimizers) {
      Posterior posterior(net.clone(), std::make_unique<GaussianLikelihood>(10.0),
                          Prior::from_network(net, AlphaGroups::kDefault, 1.0), X, Y);
      Rng rng(1, 0);
      Eigen::VectorXd w = net.initial_params(rng);
      MapOptions options = defaults;
      options.optimizer = parse_optimizer(optimizer);
      if (trace) {
        options.callback = [](const MapIteration& it) {
          std::fprintf(stderr, "%d %.12g %.4g\n", it.iteration, it.objective, it.gradient_norm);
          return CallbackReturn::kContinue;
        };
      }
      const double cpu_start = cpu_seconds();
      MapSummary first_order;
      if (first_order_iterations > 0) {
        MapOptions lbfgs = defaults;
        lbfgs.optimizer = Optimizer::kLbfgs;
        lbfgs.max_iterations = first_order_iterations;
        lbfgs.function_tolerance = 1e-6;
        lbfgs.gradient_tolerance = 1e-3;
        first_order = find_map(posterior, lbfgs, &w);
      }
      const double first_order_cpu = cpu_seconds() - cpu_start;
      const MapSummary s = find_map(posterior, options, &w);
      const double cpu = cpu_seconds() - cpu_start;
      const double tolerance = options.gradient_tolerance * std::max(1.0, w.norm());
      std::printf(
          "{\"data\": \"%s\", \"m\": %lld, \"W\": %lld, \"optimizer\": \"%s\", \"backend\": \"%s\", "
          "\"termination\": \"%s\", \"iterations\": %d, \"evaluations\": %d, \"seconds\": %.3f, "
          "\"cpu_seconds\": %.3f, "
          "\"cpu_seconds_per_iteration\": %.4f, \"gradient_norm\": %.3g, \"gradient_tolerance\": %.3g, "
          "\"objective\": %.10g, \"first_order_iterations\": %d, \"first_order_cpu_seconds\": %.3f, "
          "\"first_order_objective\": %.10g, \"first_order_gradient_norm\": %.3g, \"message\": \"%s\"}\n",
          name.c_str(), static_cast<long long>(X.rows()), static_cast<long long>(posterior.dim()), optimizer.c_str(),
          linear_algebra_backend(), to_string(s.termination), s.iterations, s.evaluations, s.seconds, cpu,
          s.iterations > 0 ? (cpu - first_order_cpu) / s.iterations : 0.0, s.gradient_norm, tolerance, s.objective,
          first_order.iterations, first_order_cpu, first_order.objective, first_order.gradient_norm, s.message.c_str());
      std::fflush(stdout);
    }
  }
  return 0;
}
