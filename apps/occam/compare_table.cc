#include "compare_table.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "occam/data.h"
#include "output.h"

namespace occam::cli {
namespace {

// Display width of UTF-8 text: code points, not bytes (the table uses α, β, γ).
std::size_t display_width(const std::string& s) {
  return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

double gamma_total(const FittedModel& m) { return m.summary.evidence ? m.summary.evidence->gamma_total : 0.0; }

}  // namespace

TestMetrics test_metrics(const FittedModel& model, const Eigen::MatrixXd& X, const Eigen::VectorXd& y) {
  const Prediction p = model.predict(X);
  const Eigen::ArrayXd residual = y.array() - p.mean.array();
  const Eigen::ArrayXd variance = p.std.array().square();
  TestMetrics metrics;
  metrics.rmse = std::sqrt(residual.square().mean());
  metrics.mean_log_likelihood =
      (-0.5 * (2.0 * std::numbers::pi * variance).log() - residual.square() / (2.0 * variance)).mean();
  return metrics;
}

std::string compare_table(const std::vector<CompareRow>& rows, bool with_test, int* best) {
  *best = -1;
  double best_value = -std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!rows[i].fit) continue;
    const double value = rows[i].fit->summary.log_evidence + rows[i].fit->summary.symmetry_log_factor;
    if (value > best_value) {
      best_value = value;
      *best = static_cast<int>(i);
    }
  }

  std::vector<std::string> group_legend;
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> header = {"", "H", "W", "log-evidence", "+ symmetry", "γ", "α", "β", "train RMSE"};
  constexpr std::size_t kAlphaColumn = 6;  // text (a list), left-aligned; the rest are numbers
  if (with_test) {
    header.push_back("test RMSE");
    header.push_back("test log-lik");
  }
  cells.push_back(header);
  std::string failures;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const CompareRow& row = rows[i];
    std::vector<std::string> line = {static_cast<int>(i) == *best ? "*" : "", std::to_string(row.hidden)};
    if (!row.fit) {
      line.resize(header.size(), "-");
      failures += format("H=%lld failed: %s\n", static_cast<long long>(row.hidden), row.failure.c_str());
    } else {
      const FittedModel& m = *row.fit;
      if (group_legend.empty()) group_legend = m.prior.hyperparameter_names();
      const Eigen::VectorXd alpha = m.prior.hyperparameters();
      std::string alphas;
      for (Index g = 0; g < alpha.size(); ++g) alphas.append(g ? "/" : "").append(format("%.3g", alpha[g]));
      line.push_back(std::to_string(m.summary.num_params));
      line.push_back(format("%.2f", m.summary.log_evidence));
      line.push_back(format("%.2f", m.summary.log_evidence + m.summary.symmetry_log_factor));
      line.push_back(format("%.2f", gamma_total(m)));
      line.push_back(alphas);
      line.push_back(format("%.4g", m.likelihood->precision()));
      line.push_back(format("%.4g", m.summary.train_rmse));
      if (with_test) {
        line.push_back(row.test ? format("%.4g", row.test->rmse) : "-");
        line.push_back(row.test ? format("%.4f", row.test->mean_log_likelihood) : "-");
      }
    }
    cells.push_back(line);
  }

  std::vector<std::size_t> width(header.size(), 0);
  for (const auto& line : cells) {
    for (std::size_t c = 0; c < line.size(); ++c) width[c] = std::max(width[c], display_width(line[c]));
  }
  std::string out;
  for (const auto& line : cells) {
    std::string text;
    for (std::size_t c = 0; c < line.size(); ++c) {
      const std::string padding(width[c] - display_width(line[c]), ' ');
      text += (c == 0 ? "" : "  ") + (c == kAlphaColumn ? line[c] + padding : padding + line[c]);
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + '\n';
  }
  if (!group_legend.empty()) {
    std::string legend;
    for (const auto& name : group_legend) legend += (legend.empty() ? "" : "/") + name;
    out += "α per group: " + legend + "\n";
  }
  out +=
      "'*' marks the highest evidence including the hidden-unit symmetry term, log H! + H log 2 for odd\n"
      "activations such as tanh (MacKay 1992b), H counting the well-determined hidden units only\n";
  out += failures;
  return out;
}

std::string compare_csv(const std::vector<CompareRow>& rows, bool with_test, int best) {
  std::vector<std::string> names;
  for (const auto& row : rows) {
    if (row.fit) {
      names = row.fit->prior.hyperparameter_names();
      break;
    }
  }
  std::vector<std::string> header = {"hidden", "params", "log_evidence", "log_evidence_symmetry", "gamma"};
  for (const auto& name : names) header.push_back("alpha_" + name);
  header.insert(header.end(), {"beta", "train_rmse"});
  if (with_test) header.insert(header.end(), {"test_rmse", "test_log_likelihood"});
  header.push_back("best");

  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<std::vector<double>> lines;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!rows[i].fit) continue;
    const FittedModel& m = *rows[i].fit;
    const FitSummary& s = m.summary;
    std::vector<double> v = {static_cast<double>(rows[i].hidden), static_cast<double>(s.num_params), s.log_evidence,
                             s.log_evidence + s.symmetry_log_factor, gamma_total(m)};
    const Eigen::VectorXd alpha = m.prior.hyperparameters();
    for (std::size_t g = 0; g < names.size(); ++g)
      v.push_back(static_cast<Index>(g) < alpha.size() ? alpha[static_cast<Index>(g)] : nan);
    v.insert(v.end(), {m.likelihood->precision(), s.train_rmse});
    if (with_test)
      v.insert(v.end(),
               {rows[i].test ? rows[i].test->rmse : nan, rows[i].test ? rows[i].test->mean_log_likelihood : nan});
    v.push_back(static_cast<int>(i) == best ? 1.0 : 0.0);
    lines.push_back(std::move(v));
  }
  Eigen::MatrixXd values(static_cast<Index>(lines.size()), static_cast<Index>(header.size()));
  for (std::size_t i = 0; i < lines.size(); ++i) {
    values.row(static_cast<Index>(i)) =
        Eigen::Map<const Eigen::RowVectorXd>(lines[i].data(), static_cast<Index>(lines[i].size()));
  }
  return format_csv(header, values);
}

}  // namespace occam::cli
