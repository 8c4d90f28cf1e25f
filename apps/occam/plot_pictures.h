// plot_pictures.h — the pictures of `occam plot`: for each, a data file, a gnuplot script that
// draws it (kept, so that a user can restyle the picture) and the picture itself, PNG or SVG.
// The numbers come from the library (occam/plot_data.h, occam/mcmc/diagnostics.h); this file only
// lays them out for gnuplot.
#pragma once

#include <string>
#include <vector>

#include "occam/fitted_model.h"
#include "occam/mcmc/sampler.h"
#include "occam/plot_data.h"

namespace occam::cli {

struct PictureOptions {
  std::string dir;             // where the files go (exists)
  std::string format = "png";  // png | svg
  int width = 900;             // pixels
  int panel_height = 240;      // pixels per panel; a picture of k panels is width × k·panel_height
};

// One picture: its gnuplot script's name, the picture's name, and the data files behind it.
struct Picture {
  std::string script;
  std::string image;
  std::vector<std::string> data;
  int width = 0;
  int height = 0;
};

// A sampling run: trace.* (each variable's draws against the iteration, a line per chain, R-hat
// and ESS in the panel's title), rank.* (rank histograms per chain) and, when the run sampled
// hyperparameters, hyper.* (the histogram of each one's draws, log10 scale). `variables` are the
// run's columns to show, `title` names the run.
std::vector<Picture> run_pictures(const mcmc::SamplerSummary& run, const std::vector<std::string>& variables,
                                  const std::string& title, const PictureOptions& options);
// The columns `occam plot` shows by default: lp__ and the sampled hyperparameters (alpha.*,
// smoothing, beta), else lp__ and the first three monitored outputs f.*.
std::vector<std::string> default_run_variables(const mcmc::SamplerSummary& run);

// A fitted model on data with targets: predicted.* (predicted mean and central interval against
// the observed target), calibration.* (empirical coverage against nominal level) and band.* (the
// predictive along `input`, the other inputs at their means, with the data).
std::vector<Picture> model_pictures(const FittedModel& model, const Table& data, const std::string& input,
                                    const PredictOptions& predict, const PictureOptions& options);

// A fit report's evidence ascent: evidence.* (log-evidence, each α and β against the round).
std::vector<Picture> evidence_pictures(const EvidenceAscent& ascent, const std::string& title,
                                       const PictureOptions& options);

}  // namespace occam::cli
