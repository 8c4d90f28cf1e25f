// prior.h — a Gaussian prior whose precision is Σ_g α_g·P_g over parameter groups.
//
// Here each P_g is the identity on its group's parameters (isotropic, per group as MacKay uses
// them, or a single α). E_W,g = ½ Σ_{i∈g} w_i² and log p(w|α) = Σ_g (W_g/2) log(α_g/2π) − α_g E_W,g.
//
//   occam::Prior prior = occam::Prior::from_network(net, occam::AlphaGroups::kDefault, 1.0);
//   double lp = prior.log_density(w, &grad);
#pragma once

#include <Eigen/Core>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "occam/network.h"

namespace occam {

enum class AlphaGroups {
  kDefault,  // the network's default groups (MacKay's four for one hidden layer)
  kSingle,   // one α for every parameter
};
AlphaGroups parse_alpha_groups(std::string_view name);  // "default" | "single"

class Prior {
 public:
  Prior() = default;
  // `groups` must partition {0, ..., dim-1}; alpha has one positive entry per group.
  Prior(Index dim, std::vector<ParamGroup> groups, Eigen::VectorXd alpha);
  static Prior from_network(const Network& net, AlphaGroups mode, double alpha);

  Index dim() const { return group_of_.size(); }
  int num_groups() const { return static_cast<int>(groups_.size()); }
  const std::vector<ParamGroup>& groups() const { return groups_; }
  const Eigen::VectorXi& group_of() const { return group_of_; }  // parameter → group index
  Eigen::VectorXd group_sizes() const;                           // W_g

  const Eigen::VectorXd& alpha() const { return alpha_; }
  void set_alpha(const Eigen::VectorXd& alpha);  // throws Error(kInvalidArgument) unless all > 0

  // α_{g(i)} for each parameter i: the diagonal of the prior precision.
  Eigen::VectorXd precision_diagonal() const;
  // E_W,g = ½ Σ_{i∈g} w_i², one entry per group.
  Eigen::VectorXd energies(const Eigen::Ref<const Eigen::VectorXd>& w) const;
  // Σ_{i∈g} M_ii for each group g (e.g. tr_g(A⁻¹) with M = A⁻¹).
  Eigen::VectorXd group_traces(const Eigen::VectorXd& diagonal) const;

  // log p(w | α) with its normalising constant; grad (if not null) is set to its gradient.
  double log_density(const Eigen::Ref<const Eigen::VectorXd>& w, Eigen::VectorXd* grad) const;
  // log |Σ_g α_g P_g| = Σ_g W_g log α_g.
  double log_det_precision() const;

  // {"groups": [{"name": ..., "size": ..., "alpha": ...}, ...]} (blocks included).
  nlohmann::json to_json() const;
  static Prior from_json(const nlohmann::json& j);

 private:
  std::vector<ParamGroup> groups_;
  Eigen::VectorXi group_of_;
  Eigen::VectorXd alpha_;
};

}  // namespace occam
