// stan_csv.h — draws in CmdStan's CSV format, written as they are made and read back.
//
// '#' comment lines (configuration, adaptation), one header row, one row per draw:
// lp__, accept_stat__, stepsize__, treedepth__, n_leapfrog__, divergent__, energy__, then the
// parameters (for MCLMC and MAMS n_leapfrog__ counts gradients, treedepth__ is 0 and energy__ holds
// the iteration's energy error ΣΔE: their energy has no value at a point, only changes): the layout of CmdStan's output files, which R (read.csv(comment.char = "#")) with
// the posterior package, cmdstanr and ArviZ's from_cmdstan read. Unlike CmdStan's, the files
// carry no elapsed times, so the same seed, options and data give the same bytes (times are the
// summary's, ChainSummary).
//
//   auto sink = std::make_unique<occam::mcmc::StanCsvWriter>("run/chain_1.csv", config_lines);
//   ... occam::mcmc::sample(make_model, options, [&](int) { return std::move(sink); });
//   occam::mcmc::StanCsv csv = occam::mcmc::read_stan_csv("run/chain_1.csv");
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "occam/mcmc/sampler.h"

namespace occam::mcmc {

class StanCsvWriter final : public DrawSink {
 public:
  // Creates (truncates) the file now and writes `config` as '#' comment lines. Throws Error(kIo).
  StanCsvWriter(const std::string& path, const std::vector<std::string>& config);
  // Continues the file at `path` cut back to its first `bytes` bytes, of which `rows` are draws (a
  // checkpoint's position): what followed (a line cut short by a kill, the closing comments of
  // an interrupted run) is removed. Throws Error(kIo), or Error(kInvalidInput) when the file is
  // shorter than that.
  StanCsvWriter(const std::string& path, std::uintmax_t bytes, long long rows);
  ~StanCsvWriter() override;
  StanCsvWriter(const StanCsvWriter&) = delete;
  StanCsvWriter& operator=(const StanCsvWriter&) = delete;

  void begin(const std::vector<std::string>& columns) override;
  void adaptation_done(double step_size, const Metric& metric) override;
  // "# Trajectory length L = …" after the step size (MCLMC, MAMS).
  void trajectory_length_done(double trajectory_length) override;
  // Each row is flushed at once, so an interrupted run leaves every draw so far on disk.
  void draw(const Eigen::VectorXd& row, bool warmup) override;
  void end(const ChainSummary& summary) override;

  // What has been written so far, and that much made durable (fsync): a checkpoint's position.
  std::uintmax_t bytes() const { return bytes_; }
  long long rows() const { return rows_; }
  void sync();

 private:
  void write(const std::string& text);
  std::string path_;
  std::FILE* file_ = nullptr;
  std::uintmax_t bytes_ = 0;
  long long rows_ = 0;
};

struct StanCsv {
  std::vector<std::string> columns;
  Eigen::MatrixXd draws;              // rows × columns
  std::vector<std::string> comments;  // without the leading '#'
  // The index of a column; throws Error(kInvalidInput) naming the file when absent.
  Eigen::Index column(const std::string& name) const;
  std::string path;
};

// Throws Error(kIo) if unreadable and Error(kInvalidInput), naming file, line and column, when
// malformed: a ragged row, a cell that is not a number, or inf/nan in a column of the model's
// quantities (only the sampler's own columns, named …__, may hold them). A last line without its
// newline (a write cut short) is ignored.
StanCsv read_stan_csv(const std::string& path);

}  // namespace occam::mcmc
