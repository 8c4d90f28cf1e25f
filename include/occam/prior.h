// prior.h — a Gaussian prior whose precision is Σ_j θ_j·P_j over parameter groups.
//
// Each group g has a diagonal part α_g·I on its parameters (isotropic, per group as MacKay uses
// them, a single α = ridge, or one α per input = ARD). E_W,g = ½ Σ_{i∈g} w_i² and, for a
// group-diagonal prior, log p(w|α) = Σ_g (W_g/2) log(α_g/2π) − α_g E_W,g.
// One group may also carry graph-Laplacian smoothing: its precision is then λ_s·L + α_g·I with
// L = D − A the Laplacian of a graph over the network inputs (a 1-D chain, a 2-D grid, or an
// edge list). L alone is singular (constant vectors are in its null space); the ridge part α_g
// makes the prior proper, and log|λ_s L + α_g I| = Σ_i log(λ_s μ_i + α_g) from L's eigenvalues μ_i.
//
//   occam::Prior prior = occam::make_prior(net, {.kind = occam::PriorKind::kLaplacian,
//                                                .graph = occam::grid_graph(20, 20)});
//   double lp = prior.log_density(w, &grad);
#pragma once

#include <Eigen/Core>
#include <Eigen/SparseCore>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "occam/network.h"
#include "occam/rng.h"

namespace occam {

enum class AlphaGroups {
  kDefault,  // the network's default groups (MacKay's four for one hidden layer)
  kSingle,   // one α for every parameter
};
AlphaGroups parse_alpha_groups(std::string_view name);  // "default" | "single"

// An undirected weighted graph over `nodes` nodes (the inputs of a network).
struct Graph {
  Index nodes = 0;
  std::vector<std::tuple<Index, Index, double>> edges;  // (i, j, weight > 0), i ≠ j
};
// Both throw Error(kInvalidArgument) below 2 nodes or above kMaxGraphNodes (limits.h), before
// allocating anything.
Graph chain_graph(Index nodes);            // 0–1–2–…: neighbours on a line
Graph grid_graph(Index rows, Index cols);  // 4-neighbour grid, node = r·cols + c (row-major)
// "i,j" or "i,j,weight" per line (0-based node indices; '#' starts a comment). Throws
// Error(kIo) when unreadable and Error(kInvalidInput) naming file and line on a bad edge.
Graph read_edge_list(const std::string& path, Index nodes);
// "20x20" → grid_graph(20, 20); "40" → chain_graph(40). Throws Error(kInvalidArgument).
Graph parse_grid(std::string_view text);
// L = D − A, nodes × nodes.
Eigen::SparseMatrix<double> graph_laplacian(const Graph& graph);

// Graph-Laplacian smoothing on the parameters of one prior group. The group holds `copies`
// copies of the graph's node set (one per output of a Linear model, one per hidden unit of an
// Mlp's first layer); parameter (node, copy) sits at offset + copy·nodes + node when
// !node_major (Linear: B is D × K column-major) and at offset + node·copies + copy when
// node_major (Mlp: W_1 is H × D column-major).
struct Smoothing {
  int group = 0;
  Graph graph;
  Index copies = 1;
  bool node_major = false;
  double lambda = 1.0;  // λ_s
};

class Prior {
 public:
  Prior() = default;
  // `groups` must partition {0, ..., dim-1}; alpha has one positive entry per group. Throws
  // Error(kInvalidArgument), before allocating, when dim exceeds kMaxParameters (limits.h) or the
  // blocks do not fit in or cover dim.
  Prior(Index dim, std::vector<ParamGroup> groups, Eigen::VectorXd alpha);
  static Prior from_network(const Network& net, AlphaGroups mode, double alpha);

  Index dim() const { return group_of_.size(); }
  int num_groups() const { return static_cast<int>(groups_.size()); }
  const std::vector<ParamGroup>& groups() const { return groups_; }
  const Eigen::VectorXi& group_of() const { return group_of_; }  // parameter → group index
  Eigen::VectorXd group_sizes() const;                           // W_g

  const Eigen::VectorXd& alpha() const { return alpha_; }
  void set_alpha(const Eigen::VectorXd& alpha);  // throws Error(kInvalidArgument) unless all > 0

  // α_{g(i)} for each parameter i (plus λ_s·L_ii with smoothing): the diagonal of the prior precision.
  Eigen::VectorXd precision_diagonal() const;
  // E_W,g = ½ Σ_{i∈g} w_i², one entry per group.
  Eigen::VectorXd energies(const Eigen::Ref<const Eigen::VectorXd>& w) const;
  // Σ_{i∈g} M_ii for each group g (e.g. tr_g(A⁻¹) with M = A⁻¹).
  Eigen::VectorXd group_traces(const Eigen::VectorXd& diagonal) const;

  // log p(w | α) with its normalising constant; grad (if not null) is set to its gradient.
  double log_density(const Eigen::Ref<const Eigen::VectorXd>& w, Eigen::VectorXd* grad) const;
  // log |P| (P the prior precision) = Σ_g W_g log α_g, plus for a smoothed group
  // Σ_i log(λ_s μ_i + α_g) in place of its W_g log α_g.
  double log_det_precision() const;

  // --- Non-diagonal precisions (graph-Laplacian smoothing). ---

  // True when the precision is diag(α_{g(i)}): samplers' Gibbs steps (α_g | w ~ Gamma) and
  // closed-form variational updates apply exactly when this holds; for other priors they must
  // refuse or use the generic hyperparameter interface below.
  bool is_group_diagonal() const { return !smoothing_.has_value(); }
  const std::optional<Smoothing>& smoothing() const { return smoothing_; }
  // Adds λ_s·L to the given group (throws Error(kInvalidArgument) if the group is not one
  // contiguous block of graph.nodes·copies parameters).
  void set_smoothing(Smoothing smoothing);

  // The smoothed group's Laplacian L (Kronecker-expanded over its copies) and the index in θ of
  // its first parameter: the precision is diag(α_{g(i)}) + λ_s·L placed at that offset.
  const Eigen::SparseMatrix<double>& smoothing_laplacian() const { return block_laplacian_; }
  Index smoothing_offset() const { return block_offset_; }

  // P·v for the whole precision.
  Eigen::VectorXd apply_precision(const Eigen::Ref<const Eigen::VectorXd>& v) const;
  // *A += P (A is dim × dim): the posterior precision A = H + P of the Laplace approximation.
  void add_precision_to(Eigen::MatrixXd* A) const;
  // One draw w ~ N(0, P⁻¹).
  Eigen::VectorXd sample(Rng& rng) const;

  // Every hyperparameter θ with P = Σ_j θ_j P_j: the group α's, then λ_s when there is smoothing.
  Index num_hyperparameters() const { return num_groups() + (smoothing_ ? 1 : 0); }
  Eigen::VectorXd hyperparameters() const;
  void set_hyperparameters(const Eigen::VectorXd& theta);  // throws unless all > 0 and finite
  std::vector<std::string> hyperparameter_names() const;   // group names, then "smoothing"
  // E_j = ½ wᵀ P_j w per hyperparameter (= E_W,g for a group; ½ w_gᵀ L w_g for λ_s).
  Eigen::VectorXd hyperparameter_energies(const Eigen::Ref<const Eigen::VectorXd>& w) const;
  // θ_j tr(P⁻¹ P_j): what γ_j tends to when the data determine every parameter (= W_g for a
  // group-diagonal prior; MacKay's m ≫ W limit).
  Eigen::VectorXd hyperparameter_dimensions() const;
  // γ_j = θ_j tr(P⁻¹ P_j) − θ_j tr(A⁻¹ P_j) for the full posterior covariance A⁻¹ (dim × dim):
  // the well-determined parameters of MacKay 1992a, eq. 4.9, generalised to any linear family.
  Eigen::VectorXd well_determined(const Eigen::MatrixXd& covariance) const;

  // {"groups": [{"name": ..., "size": ..., "alpha": ...}, ...]} (blocks included).
  nlohmann::json to_json() const;
  static Prior from_json(const nlohmann::json& j);

 private:
  // The smoothed group's parameters' laplacian (Kronecker-expanded over the copies), and the
  // eigenvalues of that matrix (those of L, each repeated `copies` times).
  Eigen::SparseMatrix<double> block_laplacian_;
  Eigen::VectorXd block_eigenvalues_;
  Index block_offset_ = 0;

  std::vector<ParamGroup> groups_;
  Eigen::VectorXi group_of_;
  Eigen::VectorXd alpha_;
  std::optional<Smoothing> smoothing_;
};

// The priors a user picks by name (`--prior`):
//   ridge      one α for every parameter;
//   groups     the network's default groups (MacKay's input weights, biases, output weights…);
//   ard        one α per input (that input's weights, to every output or hidden unit), the
//              network's other default groups beside them (MacKay 1994, ARD);
//   laplacian  graph-Laplacian smoothing λ_s·L + λ_r·I on the first-layer weights, the other
//              default groups as in `groups`.
enum class PriorKind { kRidge, kGroups, kArd, kLaplacian };
PriorKind parse_prior_kind(std::string_view name);  // "ridge" | "groups" | "ard" | "laplacian"
const char* to_string(PriorKind kind);

struct PriorSpec {
  PriorKind kind = PriorKind::kGroups;
  double alpha = 1.0;                    // every α_g's starting value
  double smoothing = 1.0;                // λ_s's starting value (laplacian)
  std::optional<Graph> graph;            // laplacian: over the network's inputs (required)
  std::vector<std::string> input_names;  // ard: group names "input:<name>" (default input_<d>)
};
// Throws Error(kInvalidArgument) when the network does not suit the prior (a graph whose node
// count is not the number of inputs, a laplacian without a graph).
Prior make_prior(const Network& network, const PriorSpec& spec);

}  // namespace occam
