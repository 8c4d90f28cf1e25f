#include "plot_pictures.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "gnuplot.h"
#include "occam/data.h"
#include "occam/mcmc/diagnostics.h"
#include "occam/status.h"
#include "occam/text.h"

namespace occam::cli {
namespace {

// gnuplot strings in double quotes: backslashes and quotes escaped.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// Every digit: the files hold the numbers the pictures show, to the last bit.
std::string number(double value) { return std::isfinite(value) ? format("%.17g", value) : std::string("NaN"); }

std::string path_in(const PictureOptions& options, const std::string& name) {
  return (std::filesystem::path(options.dir) / name).string();
}

// A picture named `stem` of the given size: its file names, and the script's opening lines.
Picture new_picture(const std::string& stem, int width, int height, const PictureOptions& options) {
  Picture p;
  p.script = stem + ".gp";
  p.image = stem + "." + options.format;
  p.width = width;
  p.height = height;
  return p;
}

std::string script_head(const Picture& p, const PictureOptions& options) {
  const std::string terminal = options.format == "svg" ? "svg" : gnuplot_png_terminal();
  std::string gp = "# Written by `occam plot`; redraw with: gnuplot " + p.script + "\n";
  gp += format("set terminal %s size %d,%d noenhanced font 'Sans,10'%s\n", terminal.c_str(), p.width, p.height,
               options.format == "svg" ? " background '#ffffff'" : "");
  gp += "set output " + quoted(p.image) + "\n";
  gp += "set grid lc rgb '#dddddd'\nset key outside right top\n";
  return gp;
}

void write_picture(Picture* p, const std::string& script, const PictureOptions& options) {
  write_file_atomic(path_in(options, p->script), script + "unset output\n");
}

std::string diagnostics_line(const std::string& name, const mcmc::Diagnostics& d) {
  return format("%s:  Rhat %.3f   ESS bulk %.0f   ESS tail %.0f", name.c_str(), d.rhat, d.ess_bulk, d.ess_tail);
}

bool is_hyperparameter(const std::string& column) {
  return column.starts_with("alpha.") || column == "alpha" || column == "beta" || column == "smoothing";
}

Index column_of(const mcmc::SamplerSummary& run, const std::string& name) {
  const auto it = std::find(run.columns.begin(), run.columns.end(), name);
  if (it == run.columns.end()) {
    throw Error(ErrorKind::kInvalidArgument, "--variables: the run has no column '" + name +
                                                 "' (its chain files' header names them, e.g. lp__, beta, f.1)");
  }
  return static_cast<Index>(it - run.columns.begin());
}

Picture trace_picture(const mcmc::SamplerSummary& run, const std::vector<std::string>& variables,
                      const std::string& title, const PictureOptions& options) {
  const int panels = static_cast<int>(variables.size());
  Picture p = new_picture("trace", options.width, panels * options.panel_height, options);
  p.data = {"trace.dat"};
  std::vector<Index> columns;
  for (const std::string& v : variables) columns.push_back(column_of(run, v));
  std::string data = "# occam plot: each chain's kept draws, one block per chain (gnuplot's index)\n# iteration";
  for (const std::string& v : variables) data += ' ' + v;
  data += '\n';
  for (std::size_t c = 0; c < run.draws.size(); ++c) {
    if (c > 0) data += "\n\n";
    const Eigen::MatrixXd& draws = run.draws[c];
    for (Index s = 0; s < draws.rows(); ++s) {
      data += std::to_string(s + 1);
      for (Index k : columns) data += ' ' + number(draws(s, k));
      data += '\n';
    }
  }
  write_file_atomic(path_in(options, "trace.dat"), data);

  std::string gp = script_head(p, options);
  gp += format("set multiplot layout %d,1 title %s\n", panels, quoted(title).c_str());
  gp += "set xlabel 'iteration (after warm-up)'\n";
  const int chains = static_cast<int>(run.draws.size());
  for (int v = 0; v < panels; ++v) {
    const mcmc::Diagnostics d = mcmc::diagnose(run.column(variables[static_cast<std::size_t>(v)]));
    gp += "set title " + quoted(diagnostics_line(variables[static_cast<std::size_t>(v)], d)) + "\n";
    gp += "set ylabel " + quoted(variables[static_cast<std::size_t>(v)]) + "\n";
    gp += format("plot for [c=0:%d] 'trace.dat' index c using 1:%d with lines lw 1 title sprintf('chain %%d', c+1)\n",
                 chains - 1, v + 2);
  }
  write_picture(&p, gp + "unset multiplot\n", options);
  return p;
}

Picture rank_picture(const mcmc::SamplerSummary& run, const std::vector<std::string>& variables,
                     const std::string& title, const PictureOptions& options) {
  const int panels = static_cast<int>(variables.size());
  Picture p = new_picture("rank", options.width, panels * options.panel_height, options);
  p.data = {"rank.dat"};
  const int chains = static_cast<int>(run.draws.size());
  std::string data =
      "# occam plot: rank histograms, one block per variable (gnuplot's index)\n"
      "# bin_centre (fraction of all draws) then the count of each chain's draws in the bin\n";
  std::string gp = script_head(p, options);
  gp += format("set multiplot layout %d,1 title %s\n", panels, quoted(title).c_str());
  gp +=
      "set xlabel 'rank among all chains'' draws (fraction)'\nset xrange [0:1]\nset yrange [0:*]\nset ylabel 'draws'\n";
  for (int v = 0; v < panels; ++v) {
    const Eigen::MatrixXd draws = run.column(variables[static_cast<std::size_t>(v)]);
    // About 20 draws per bin per chain at least, at most 20 bins: noise in the bars stays visible
    // but does not dominate.
    const int bins = static_cast<int>(std::clamp<Index>(draws.rows() / 20, 1, 20));
    const Eigen::MatrixXi counts = rank_histograms(draws, bins);
    if (v > 0) data += "\n\n";
    data += "# " + variables[static_cast<std::size_t>(v)] + "\n";
    for (int b = 0; b < bins; ++b) {
      data += number((b + 0.5) / bins);
      for (int c = 0; c < chains; ++c) data += ' ' + std::to_string(counts(b, c));
      data += '\n';
    }
    const double expected = static_cast<double>(draws.rows()) / bins;
    gp += "set title " +
          quoted(diagnostics_line(variables[static_cast<std::size_t>(v)], mcmc::diagnose(draws)) +
                 "   (flat bars: chains agree)") +
          "\n";
    gp += format(
        "plot for [c=1:%d] 'rank.dat' index %d using 1:(column(c+1)) with histeps lw 1.5 "
        "title sprintf('chain %%d', c), %s with lines dt 2 lc rgb 'black' title 'uniform'\n",
        chains, v, number(expected).c_str());
  }
  write_file_atomic(path_in(options, "rank.dat"), data);
  write_picture(&p, gp + "unset multiplot\n", options);
  return p;
}

Picture hyper_picture(const mcmc::SamplerSummary& run, const std::vector<std::string>& hypers, const std::string& title,
                      const PictureOptions& options) {
  const int panels = static_cast<int>(hypers.size());
  Picture p = new_picture("hyper", options.width, panels * options.panel_height, options);
  p.data = {"hyper.dat"};
  std::string data =
      "# occam plot: histograms of the hyperparameters' draws (all chains), one block per "
      "hyperparameter\n# bin_centre (log10 of the value) count\n";
  std::string gp = script_head(p, options);
  gp += format("set multiplot layout %d,1 title %s\n", panels, quoted(title).c_str());
  gp += "set ylabel 'draws'\nset style fill solid 0.5 border -1\n";
  for (int v = 0; v < panels; ++v) {
    const std::string& name = hypers[static_cast<std::size_t>(v)];
    const Eigen::MatrixXd draws = run.column(name);
    const Eigen::VectorXd log_values = draws.reshaped().array().max(1e-300).log10();
    double lo = log_values.minCoeff(), hi = log_values.maxCoeff();
    if (!(hi > lo)) {
      lo -= 0.5;
      hi += 0.5;
    }
    const Histogram h = histogram(log_values, 30, lo, hi);
    if (v > 0) data += "\n\n";
    data += "# " + name + "\n";
    for (Index b = 0; b < h.counts.size(); ++b) {
      data += number(0.5 * (h.edges[b] + h.edges[b + 1])) + ' ' + std::to_string(h.counts[b]) + '\n';
    }
    const mcmc::Diagnostics d = mcmc::diagnose(draws);
    gp += "set title " +
          quoted(format("%s:  median %.4g, 90%% interval [%.4g, %.4g];  Rhat %.3f, ESS bulk %.0f", name.c_str(),
                        d.median, d.q5, d.q95, d.rhat, d.ess_bulk)) +
          "\n";
    gp += "set xlabel " + quoted("log10 " + name) + "\n";
    gp += format("plot 'hyper.dat' index %d using 1:2:(%s) with boxes notitle\n", v,
                 number(h.edges[1] - h.edges[0]).c_str());
  }
  write_file_atomic(path_in(options, "hyper.dat"), data);
  write_picture(&p, gp + "unset multiplot\n", options);
  return p;
}

int single_height(const PictureOptions& options) { return options.width * 2 / 3; }

}  // namespace

std::vector<std::string> default_run_variables(const mcmc::SamplerSummary& run) {
  std::vector<std::string> out;
  if (std::find(run.columns.begin(), run.columns.end(), "lp__") != run.columns.end()) out.push_back("lp__");
  for (const std::string& c : run.columns) {
    if (is_hyperparameter(c)) out.push_back(c);
  }
  if (out.size() <= 1) {
    for (const std::string& c : run.columns) {
      if (c.starts_with("f.") && out.size() < 4) out.push_back(c);
    }
  }
  return out;
}

std::vector<Picture> run_pictures(const mcmc::SamplerSummary& run, const std::vector<std::string>& variables,
                                  const std::string& title, const PictureOptions& options) {
  if (variables.empty()) throw Error(ErrorKind::kInvalidArgument, "no columns to plot");
  std::vector<Picture> pictures = {trace_picture(run, variables, title, options),
                                   rank_picture(run, variables, title, options)};
  std::vector<std::string> hypers;
  for (const std::string& c : run.columns) {
    if (is_hyperparameter(c)) hypers.push_back(c);
  }
  if (!hypers.empty()) pictures.push_back(hyper_picture(run, hypers, title, options));
  return pictures;
}

std::vector<Picture> model_pictures(const FittedModel& model, const Table& data, const std::string& input,
                                    const PredictOptions& predict, const PictureOptions& options) {
  const std::string level = format("%g%%", 100.0 * predict.level);
  const std::string target = model.target_name;
  std::vector<Picture> pictures;

  // Predicted against observed, with each row's central interval.
  const PredictedObserved po = predicted_observed(model, data, predict);
  {
    Picture p = new_picture("predicted", options.width, single_height(options), options);
    p.data = {"predicted.dat"};
    const Prediction& q = po.prediction;
    std::string rows = "# occam plot: observed target, predictive mean, lower and upper end of the central " + level +
                       " interval, one row per data row\n# observed mean lower upper\n";
    for (Index i = 0; i < po.observed.size(); ++i) {
      rows +=
          number(po.observed[i]) + ' ' + number(q.mean[i]) + ' ' + number(q.lower[i]) + ' ' + number(q.upper[i]) + '\n';
    }
    write_file_atomic(path_in(options, "predicted.dat"), rows);
    const Index inside = ((po.observed.array() >= q.lower.array()) && (po.observed.array() <= q.upper.array())).count();
    const double rmse = std::sqrt((po.observed - q.mean).squaredNorm() / static_cast<double>(po.observed.size()));
    std::string gp = script_head(p, options);
    gp += "set title " +
          quoted(format("%s intervals cover %.1f%% of %lld rows;  RMSE %.4g", level.c_str(),
                        100.0 * static_cast<double>(inside) / static_cast<double>(po.observed.size()),
                        static_cast<long long>(po.observed.size()), rmse)) +
          "\n";
    gp += "set xlabel " + quoted("observed " + target) + "\nset ylabel " + quoted("predicted " + target) + "\n";
    gp += "set key top left\n";
    gp += "plot 'predicted.dat' using 1:2:3:4 with yerrorbars pt 7 ps 0.5 lc rgb '#1f77b4' title " +
          quoted("mean and " + level + " interval") +
          ", x with lines dt 2 lc rgb 'black' title 'predicted = observed'\n";
    write_picture(&p, gp, options);
    pictures.push_back(p);
  }

  // Calibration: the coverage of central intervals at every level.
  {
    const CalibrationCurve c = calibration_curve(model, data, {}, predict);
    Picture p = new_picture("calibration", options.width, single_height(options), options);
    p.data = {"calibration.dat"};
    std::string rows =
        "# occam plot: nominal level, empirical coverage, and nominal ± 2 binomial standard errors\n"
        "# nominal empirical band_low band_high\n";
    for (Index k = 0; k < c.nominal.size(); ++k) {
      rows += number(c.nominal[k]) + ' ' + number(c.empirical[k]) + ' ' + number(c.nominal[k] - 2 * c.std_error[k]) +
              ' ' + number(c.nominal[k] + 2 * c.std_error[k]) + '\n';
    }
    write_file_atomic(path_in(options, "calibration.dat"), rows);
    std::string gp = script_head(p, options);
    gp += "set title " +
          quoted(format("calibration of the central intervals on %lld rows", static_cast<long long>(c.rows))) + "\n";
    gp += "set xlabel 'nominal level of the central interval'\nset ylabel 'fraction of targets inside'\n";
    gp += "set xrange [0:1]\nset yrange [0:1]\nset key top left\n";
    gp +=
        "plot 'calibration.dat' using 1:3:4 with filledcurves fc rgb '#cccccc' fs solid 0.6 "
        "title 'calibrated model: ±2 s.e.', '' using 1:2 with linespoints pt 7 lw 2 lc rgb '#d62728' title 'empirical', "
        "x with lines dt 2 lc rgb 'black' title 'nominal'\n";
    write_picture(&p, gp, options);
    pictures.push_back(p);
  }

  // The predictive along one input, with the data.
  {
    const PredictiveBand band = predictive_band(model, data, input, 200, predict);
    Picture p = new_picture("band", options.width, single_height(options), options);
    p.data = {"band.dat", "band_data.dat"};
    std::string rows = "# occam plot: the predictive along " + input + " (others at their means): " + input +
                       ", mean, lower and upper end of the central " + level + " interval\n";
    for (Index i = 0; i < band.x.size(); ++i) {
      rows += number(band.x[i]) + ' ' + number(band.prediction.mean[i]) + ' ' + number(band.prediction.lower[i]) + ' ' +
              number(band.prediction.upper[i]) + '\n';
    }
    write_file_atomic(path_in(options, "band.dat"), rows);
    const auto input_column = std::find(data.columns.begin(), data.columns.end(), input) - data.columns.begin();
    std::string points = "# occam plot: the data: " + input + " and the observed " + target + "\n";
    for (Index i = 0; i < po.observed.size(); ++i) {
      points += number(data.values(i, input_column)) + ' ' + number(po.observed[i]) + '\n';
    }
    write_file_atomic(path_in(options, "band_data.dat"), points);
    std::string held;
    for (std::size_t j = 0; j < band.held.size() && j < 4; ++j) {
      held += (j ? ", " : "") + band.held[j] + " = " + format("%.4g", band.held_at[static_cast<Index>(j)]);
    }
    if (band.held.size() > 4) held += format(" and %zu more", band.held.size() - 4);
    std::string gp = script_head(p, options);
    gp += "set title " +
          quoted("predictive " + level + " interval along " + input +
                 (held.empty() ? std::string() : " (" + held + ")")) +
          "\n";
    gp += "set xlabel " + quoted(input) + "\nset ylabel " + quoted(target) + "\nset key below\n";
    gp += "plot 'band.dat' using 1:3:4 with filledcurves fc rgb '#9ecae1' fs solid 0.5 title " +
          quoted(level + " predictive interval") +
          ", '' using 1:2 with lines lw 2 lc rgb '#08519c' title 'predictive mean', "
          "'band_data.dat' using 1:2 with points pt 7 ps 0.5 lc rgb '#d62728' title 'data'\n";
    write_picture(&p, gp, options);
    pictures.push_back(p);
  }
  return pictures;
}

std::vector<Picture> evidence_pictures(const EvidenceAscent& ascent, const std::string& title,
                                       const PictureOptions& options) {
  const bool has_beta = ascent.beta.array().isFinite().any();
  const int panels = has_beta ? 3 : 2;
  Picture p = new_picture("evidence", options.width, panels * options.panel_height, options);
  p.data = {"evidence.dat"};
  std::string rows =
      "# occam plot: the evidence framework's re-estimation rounds (standardised units)\n# round log_evidence beta";
  for (const std::string& name : ascent.alpha_names) rows += " alpha." + name;
  rows += " accepted\n";
  for (std::size_t s = 0; s < ascent.step.size(); ++s) {
    const Index i = static_cast<Index>(s);
    rows += std::to_string(ascent.step[s]) + ' ' + number(ascent.log_evidence[i]) + ' ' + number(ascent.beta[i]);
    for (Index g = 0; g < ascent.alpha.cols(); ++g) rows += ' ' + number(ascent.alpha(i, g));
    rows += ascent.accepted[s] ? " 1\n" : " 0\n";
  }
  write_file_atomic(path_in(options, "evidence.dat"), rows);
  std::string gp = script_head(p, options);
  gp += format("set multiplot layout %d,1 title %s\n", panels, quoted(title).c_str());
  gp += "set xlabel 're-estimation round'\n";
  gp +=
      "set title 'log-evidence (standardised units; red circles: rounds whose step was undone)'\nset ylabel 'log Z'\n";
  const int accepted_column = 4 + static_cast<int>(ascent.alpha_names.size());
  gp += "set key outside right top\nplot 'evidence.dat' using 1:2 with linespoints pt 7 lw 2 title 'log Z'";
  if (std::find(ascent.accepted.begin(), ascent.accepted.end(), false) != ascent.accepted.end()) {
    gp +=
        format(", '' using 1:($%d == 0 ? $2 : NaN) with points pt 6 ps 2 lc rgb 'red' title 'undone'", accepted_column);
  }
  gp += "\n";
  gp += "set title 'prior precision of each weight group'\nset ylabel 'alpha'\nset logscale y\nplot ";
  for (std::size_t g = 0; g < ascent.alpha_names.size(); ++g) {
    gp += format("%s'evidence.dat' using 1:%zu with linespoints pt 7 title %s", g ? ", " : "", g + 4,
                 quoted(ascent.alpha_names[g]).c_str());
  }
  gp += "\n";
  if (has_beta) {
    gp += "set title 'noise precision'\nset ylabel 'beta'\n";
    gp += "plot 'evidence.dat' using 1:3 with linespoints pt 7 lw 2 title 'beta'\n";
  }
  write_picture(&p, gp + "unset multiplot\n", options);
  return {p};
}

}  // namespace occam::cli
