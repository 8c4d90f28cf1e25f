#include "occam/prior.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <numbers>
#include <sstream>

#include "occam/status.h"

namespace occam {

AlphaGroups parse_alpha_groups(std::string_view name) {
  if (name == "default") return AlphaGroups::kDefault;
  if (name == "single") return AlphaGroups::kSingle;
  throw Error(ErrorKind::kInvalidArgument,
              "alpha groups must be 'default' or 'single', got '" + std::string(name) + "'");
}

Prior::Prior(Index dim, std::vector<ParamGroup> groups, Eigen::VectorXd alpha)
    : groups_(std::move(groups)), group_of_(Eigen::VectorXi::Constant(dim, -1)) {
  for (int g = 0; g < num_groups(); ++g) {
    for (const ParamBlock& b : groups_[g].blocks) {
      if (b.offset < 0 || b.size < 0 || b.offset + b.size > dim) {
        throw Error(ErrorKind::kInvalidArgument, "prior group '" + groups_[g].name + "' lies outside the " +
                                                     std::to_string(dim) + " parameters");
      }
      for (Index i = b.offset; i < b.offset + b.size; ++i) {
        if (group_of_[i] != -1) {
          throw Error(ErrorKind::kInvalidArgument,
                      "parameter " + std::to_string(i) + " is in two prior groups ('" +
                          groups_[group_of_[i]].name + "' and '" + groups_[g].name + "')");
        }
        group_of_[i] = g;
      }
    }
  }
  for (Index i = 0; i < dim; ++i) {
    if (group_of_[i] == -1) {
      throw Error(ErrorKind::kInvalidArgument, "parameter " + std::to_string(i) + " is in no prior group");
    }
  }
  set_alpha(alpha);
}

Prior Prior::from_network(const Network& net, AlphaGroups mode, double alpha) {
  std::vector<ParamGroup> groups;
  if (mode == AlphaGroups::kSingle) {
    groups.push_back({"all", {{0, net.num_params()}}});
  } else {
    groups = net.default_groups();
  }
  const Eigen::VectorXd a = Eigen::VectorXd::Constant(static_cast<Index>(groups.size()), alpha);
  return Prior(net.num_params(), std::move(groups), a);
}

Eigen::VectorXd Prior::group_sizes() const {
  Eigen::VectorXd sizes(num_groups());
  for (int g = 0; g < num_groups(); ++g) sizes[g] = static_cast<double>(groups_[g].size());
  return sizes;
}

void Prior::set_alpha(const Eigen::VectorXd& alpha) {
  if (alpha.size() != num_groups()) {
    throw Error(ErrorKind::kInvalidArgument, "prior: expected " + std::to_string(num_groups()) +
                                                 " alpha values (one per group), got " + std::to_string(alpha.size()));
  }
  for (int g = 0; g < num_groups(); ++g) {
    if (!(alpha[g] > 0.0) || !std::isfinite(alpha[g])) {
      std::ostringstream msg;
      msg << "prior: alpha for group '" << groups_[g].name << "' must be positive and finite, got " << alpha[g];
      throw Error(ErrorKind::kInvalidArgument, msg.str());
    }
  }
  alpha_ = alpha;
}

Eigen::VectorXd Prior::precision_diagonal() const {
  Eigen::VectorXd d(dim());
  for (Index i = 0; i < dim(); ++i) d[i] = alpha_[group_of_[i]];
  return d;
}

Eigen::VectorXd Prior::group_traces(const Eigen::VectorXd& diagonal) const {
  Eigen::VectorXd t = Eigen::VectorXd::Zero(num_groups());
  for (int g = 0; g < num_groups(); ++g) {
    for (const ParamBlock& b : groups_[g].blocks) t[g] += diagonal.segment(b.offset, b.size).sum();
  }
  return t;
}

Eigen::VectorXd Prior::energies(const Eigen::Ref<const Eigen::VectorXd>& w) const {
  Eigen::VectorXd e = Eigen::VectorXd::Zero(num_groups());
  for (int g = 0; g < num_groups(); ++g) {
    for (const ParamBlock& b : groups_[g].blocks) e[g] += 0.5 * w.segment(b.offset, b.size).squaredNorm();
  }
  return e;
}

double Prior::log_det_precision() const { return group_sizes().dot(alpha_.array().log().matrix()); }

double Prior::log_density(const Eigen::Ref<const Eigen::VectorXd>& w, Eigen::VectorXd* grad) const {
  // log N(w; 0, A_p⁻¹) = ½ log|A_p| − (W/2) log 2π − Σ_g α_g E_W,g.
  const Eigen::VectorXd precision = precision_diagonal();
  if (grad != nullptr) grad->noalias() = -precision.cwiseProduct(w);
  return 0.5 * log_det_precision() - 0.5 * static_cast<double>(dim()) * std::log(2.0 * std::numbers::pi) -
         0.5 * w.dot(precision.cwiseProduct(w));
}

nlohmann::json Prior::to_json() const {
  nlohmann::json groups = nlohmann::json::array();
  for (int g = 0; g < num_groups(); ++g) {
    nlohmann::json blocks = nlohmann::json::array();
    for (const ParamBlock& b : groups_[g].blocks) blocks.push_back({b.offset, b.size});
    groups.push_back({{"name", groups_[g].name}, {"size", groups_[g].size()}, {"alpha", alpha_[g]}, {"blocks", blocks}});
  }
  return {{"dim", dim()}, {"groups", groups}};
}

Prior Prior::from_json(const nlohmann::json& j) {
  try {
    const Index dim = j.at("dim").get<Index>();
    std::vector<ParamGroup> groups;
    std::vector<double> alpha;
    for (const auto& g : j.at("groups")) {
      ParamGroup group{g.at("name").get<std::string>(), {}};
      for (const auto& b : g.at("blocks")) group.blocks.push_back({b.at(0).get<Index>(), b.at(1).get<Index>()});
      groups.push_back(std::move(group));
      alpha.push_back(g.at("alpha").get<double>());
    }
    return Prior(dim, std::move(groups), Eigen::Map<const Eigen::VectorXd>(alpha.data(), static_cast<Index>(alpha.size())));
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::kInvalidInput, std::string("prior description is malformed: ") + e.what());
  } catch (const Error& e) {
    throw Error(ErrorKind::kInvalidInput, std::string("prior description is inconsistent: ") + e.what());
  }
}

}  // namespace occam
