// The CSV data loader: any bytes are either a table of finite numbers whose names (and class
// labels) can go into a model file, or an occam::Error. Nothing else may escape.
#include <nlohmann/json.hpp>

#include "fuzz_input.h"
#include "occam/data.h"
#include "occam/status.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const occam::fuzz::InputFile file(data, size);
  try {
    const occam::Table table = occam::read_csv(file.path());
    occam::fuzz::require(table.values.allFinite());
    occam::fuzz::require(static_cast<Eigen::Index>(table.columns.size()) == table.values.cols());
    (void)nlohmann::json(table.columns).dump();  // throws on a name that is not UTF-8
    const occam::Dataset d = occam::make_dataset(table, table.columns.back());
    const occam::Standardizer s = occam::Standardizer::fit(d, occam::Standardize::kBoth);
    occam::fuzz::require(s.x_scale.allFinite() && (s.x_scale.array() > 0.0).all() && s.y_scale > 0.0);
  } catch (const occam::Error&) {
  }
  try {
    // The first column as class labels: any non-empty text, kept verbatim.
    const occam::Table probe = occam::read_csv(file.path());
    const occam::Table table = occam::read_csv(file.path(), probe.columns.front());
    (void)nlohmann::json(table.labels).dump();
  } catch (const occam::Error&) {
  }
  return 0;
}
