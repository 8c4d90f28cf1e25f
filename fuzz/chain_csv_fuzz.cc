// The chain (Stan CSV) loader that `occam predict --draws` reads: any bytes are either draws whose
// model quantities are all finite, or an occam::Error.
#include <cmath>

#include "fuzz_input.h"
#include "occam/mcmc/stan_csv.h"
#include "occam/status.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const occam::fuzz::InputFile file(data, size);
  try {
    const occam::mcmc::StanCsv csv = occam::mcmc::read_stan_csv(file.path());
    occam::fuzz::require(csv.draws.cols() == static_cast<Eigen::Index>(csv.columns.size()));
    for (std::size_t c = 0; c < csv.columns.size(); ++c) {
      if (csv.columns[c].ends_with("__")) continue;
      occam::fuzz::require(csv.draws.col(static_cast<Eigen::Index>(c)).allFinite());
    }
    if (!csv.columns.empty()) (void)csv.column(csv.columns.front());
  } catch (const occam::Error&) {
  }
  return 0;
}
