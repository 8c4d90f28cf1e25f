// The model-file loader: any bytes are either a model that predicts finite numbers at two rows of
// inputs (or refuses to, with an occam::Error), or an occam::Error. Nothing else may escape: no
// other exception, no crash, no allocation without bound (libFuzzer's -rss_limit_mb), no hang
// (-timeout).
#include <Eigen/Core>

#include "fuzz_input.h"
#include "occam/io.h"
#include "occam/status.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const occam::fuzz::InputFile file(data, size);
  try {
    const occam::ModelFile model = occam::load_model(file.path());
    const Eigen::Index D = model.network->num_inputs();
    Eigen::MatrixXd X(2, D);
    X.row(0).setZero();
    X.row(1).setOnes();
    const Eigen::VectorXd offset = Eigen::VectorXd::Ones(2);
    const bool needs_offset = model.likelihood->num_target_columns() > 1;
    occam::PredictOptions options;
    options.samples = 16;
    for (const auto method : {occam::PredictiveMethod::kLinearized, occam::PredictiveMethod::kMonteCarlo}) {
      options.method = method;
      try {
        const occam::Prediction p = occam::predict(model, X, options, needs_offset ? &offset : nullptr);
        if (p.labels.empty()) {
          occam::fuzz::require(p.mean.allFinite() && p.std.allFinite() && p.lower.allFinite() && p.upper.allFinite());
          occam::fuzz::require((p.lower.array() <= p.upper.array()).all());
        } else {
          occam::fuzz::require(p.probabilities.allFinite());
        }
      } catch (const occam::Error&) {
      }
    }
  } catch (const occam::Error&) {
  }
  return 0;
}
