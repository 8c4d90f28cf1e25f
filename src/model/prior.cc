#include "occam/prior.h"

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numbers>
#include <sstream>

#include "occam/data.h"
#include "occam/limits.h"
#include "occam/status.h"
#include "occam/types.h"

namespace occam {

AlphaGroups parse_alpha_groups(std::string_view name) { return enum_names<AlphaGroups>().parse(name); }

Prior::Prior(Index dim, std::vector<ParamGroup> groups, Eigen::VectorXd alpha) : groups_(std::move(groups)) {
  // Every size is checked before group_of_ (dim entries) is allocated, and without overflow: the
  // blocks must lie inside [0, dim) and their sizes add up to dim when they partition it.
  if (dim < 0 || dim > kMaxParameters) {
    throw Error(ErrorKind::kInvalidArgument,
                "prior: dim = " + std::to_string(dim) + " must lie in 0.." + std::to_string(kMaxParameters));
  }
  Index covered = 0;
  for (const ParamGroup& group : groups_) {
    for (const ParamBlock& b : group.blocks) {
      if (b.offset < 0 || b.size < 0 || b.offset > dim || b.size > dim - b.offset) {
        throw Error(ErrorKind::kInvalidArgument, "prior group '" + group.name + "' has a block at offset " +
                                                     std::to_string(b.offset) + " of size " + std::to_string(b.size) +
                                                     ", outside the " + std::to_string(dim) + " parameters");
      }
      covered += b.size;  // ≤ dim per block, so no overflow before the check below fires
      if (covered > dim) break;
    }
    if (covered > dim) break;
  }
  if (covered != dim) {
    throw Error(ErrorKind::kInvalidArgument,
                "prior: the groups' blocks cover " +
                    (covered > dim ? "more than " + std::to_string(dim) : std::to_string(covered)) +
                    " parameters, but dim is " + std::to_string(dim) + " (they must partition the parameters)");
  }
  group_of_ = Eigen::VectorXi::Constant(dim, -1);
  for (int g = 0; g < num_groups(); ++g) {
    for (const ParamBlock& b : groups_[g].blocks) {
      for (Index i = b.offset; i < b.offset + b.size; ++i) {
        if (group_of_[i] != -1) {
          throw Error(ErrorKind::kInvalidArgument, "parameter " + std::to_string(i) + " is in two prior groups ('" +
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
  if (smoothing_) {
    d.segment(block_offset_, block_laplacian_.rows()) += smoothing_->lambda * block_laplacian_.diagonal();
  }
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

double Prior::log_det_precision() const {
  double log_det = 0.0;
  for (int g = 0; g < num_groups(); ++g) {
    if (smoothing_ && g == smoothing_->group) {
      // |λ_s L + α I| from L's eigenvalues: L is singular, the ridge part keeps every factor positive.
      log_det += (smoothing_->lambda * block_eigenvalues_.array() + alpha_[g]).log().sum();
    } else {
      log_det += static_cast<double>(groups_[g].size()) * std::log(alpha_[g]);
    }
  }
  return log_det;
}

double Prior::log_density(const Eigen::Ref<const Eigen::VectorXd>& w, Eigen::VectorXd* grad) const {
  // log N(w; 0, P⁻¹) = ½ log|P| − (W/2) log 2π − ½ wᵀPw.
  const Eigen::VectorXd Pw = apply_precision(w);
  if (grad != nullptr) *grad = -Pw;
  return 0.5 * log_det_precision() - 0.5 * static_cast<double>(dim()) * std::log(2.0 * std::numbers::pi) -
         0.5 * w.dot(Pw);
}

Eigen::VectorXd Prior::apply_precision(const Eigen::Ref<const Eigen::VectorXd>& v) const {
  Eigen::VectorXd out(dim());
  for (Index i = 0; i < dim(); ++i) out[i] = alpha_[group_of_[i]] * v[i];
  if (smoothing_) {
    const Index n = block_laplacian_.rows();
    out.segment(block_offset_, n) += smoothing_->lambda * (block_laplacian_ * v.segment(block_offset_, n));
  }
  return out;
}

void Prior::add_precision_to(Eigen::MatrixXd* A) const {
  for (Index i = 0; i < dim(); ++i) (*A)(i, i) += alpha_[group_of_[i]];
  if (!smoothing_) return;
  for (Index k = 0; k < block_laplacian_.outerSize(); ++k) {
    for (Eigen::SparseMatrix<double>::InnerIterator it(block_laplacian_, k); it; ++it) {
      (*A)(block_offset_ + it.row(), block_offset_ + it.col()) += smoothing_->lambda * it.value();
    }
  }
}

Eigen::VectorXd Prior::sample(Rng& rng) const {
  const Eigen::VectorXd z = rng.normal_vector(dim());
  if (is_group_diagonal()) return z.cwiseQuotient(precision_diagonal().cwiseSqrt());
  // w = L⁻ᵀz with P = LLᵀ has covariance P⁻¹.
  Eigen::MatrixXd P = Eigen::MatrixXd::Zero(dim(), dim());
  add_precision_to(&P);
  Eigen::LLT<Eigen::MatrixXd> llt(P);
  return llt.matrixU().solve(z);
}

void Prior::set_smoothing(Smoothing smoothing) {
  if (smoothing.group < 0 || smoothing.group >= num_groups()) {
    throw Error(ErrorKind::kInvalidArgument, "prior smoothing: no group " + std::to_string(smoothing.group));
  }
  const ParamGroup& group = groups_[smoothing.group];
  if (smoothing.graph.nodes < 1 || smoothing.copies < 1 || smoothing.copies > group.size() / smoothing.graph.nodes) {
    throw Error(ErrorKind::kInvalidArgument, "prior smoothing: a graph of " + std::to_string(smoothing.graph.nodes) +
                                                 " nodes repeated " + std::to_string(smoothing.copies) +
                                                 " times does not fit group '" + group.name + "' of " +
                                                 std::to_string(group.size()) + " parameters");
  }
  const Index n = smoothing.graph.nodes * smoothing.copies;  // ≤ the group's size: no overflow
  if (group.blocks.size() != 1 || group.size() != n) {
    throw Error(ErrorKind::kInvalidArgument,
                "prior smoothing: group '" + group.name + "' has " + std::to_string(group.size()) +
                    " parameters, but a graph of " + std::to_string(smoothing.graph.nodes) + " nodes repeated " +
                    std::to_string(smoothing.copies) + " times needs " + std::to_string(n) + " in one block");
  }
  if (!(smoothing.lambda > 0.0) || !std::isfinite(smoothing.lambda)) {
    throw Error(ErrorKind::kInvalidArgument, "prior smoothing: lambda must be positive and finite");
  }
  const Eigen::SparseMatrix<double> L = graph_laplacian(smoothing.graph);
  // Kronecker expansion over the copies, in the group's parameter layout.
  std::vector<Eigen::Triplet<double>> triplets;
  const Index nodes = smoothing.graph.nodes, copies = smoothing.copies;
  for (Index c = 0; c < copies; ++c) {
    for (Index k = 0; k < L.outerSize(); ++k) {
      for (Eigen::SparseMatrix<double>::InnerIterator it(L, k); it; ++it) {
        const Index i = smoothing.node_major ? it.row() * copies + c : c * nodes + it.row();
        const Index j = smoothing.node_major ? it.col() * copies + c : c * nodes + it.col();
        triplets.emplace_back(i, j, it.value());
      }
    }
  }
  block_laplacian_.resize(n, n);
  block_laplacian_.setFromTriplets(triplets.begin(), triplets.end());
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig{Eigen::MatrixXd(L), Eigen::EigenvaluesOnly};
  if (eig.info() != Eigen::Success) throw Error(ErrorKind::kNumerical, "prior smoothing: eigenvalues of L failed");
  // L is positive semi-definite; rounding can leave its zero eigenvalue(s) slightly negative.
  const Eigen::VectorXd mu = eig.eigenvalues().cwiseMax(0.0);
  block_eigenvalues_.resize(n);
  for (Index c = 0; c < copies; ++c) block_eigenvalues_.segment(c * nodes, nodes) = mu;
  block_offset_ = group.blocks[0].offset;
  smoothing_ = std::move(smoothing);
}

Eigen::VectorXd Prior::hyperparameters() const {
  Eigen::VectorXd theta(num_hyperparameters());
  theta.head(num_groups()) = alpha_;
  if (smoothing_) theta[num_groups()] = smoothing_->lambda;
  return theta;
}

void Prior::set_hyperparameters(const Eigen::VectorXd& theta) {
  if (theta.size() != num_hyperparameters()) {
    throw Error(ErrorKind::kInvalidArgument, "prior: expected " + std::to_string(num_hyperparameters()) +
                                                 " hyperparameters, got " + std::to_string(theta.size()));
  }
  if (smoothing_) {
    const double lambda = theta[num_groups()];
    if (!(lambda > 0.0) || !std::isfinite(lambda)) {
      std::ostringstream msg;
      msg << "prior: the smoothing precision must be positive and finite, got " << lambda;
      throw Error(ErrorKind::kInvalidArgument, msg.str());
    }
    set_alpha(theta.head(num_groups()));
    smoothing_->lambda = lambda;
  } else {
    set_alpha(theta);
  }
}

std::vector<std::string> Prior::hyperparameter_names() const {
  std::vector<std::string> names;
  for (const ParamGroup& g : groups_) names.push_back(g.name);
  if (smoothing_) names.push_back("smoothing");
  return names;
}

Eigen::VectorXd Prior::hyperparameter_energies(const Eigen::Ref<const Eigen::VectorXd>& w) const {
  Eigen::VectorXd e(num_hyperparameters());
  e.head(num_groups()) = energies(w);
  if (smoothing_) {
    const auto wb = w.segment(block_offset_, block_laplacian_.rows());
    e[num_groups()] = 0.5 * wb.dot(block_laplacian_ * wb);
  }
  return e;
}

Eigen::VectorXd Prior::hyperparameter_dimensions() const {
  Eigen::VectorXd d(num_hyperparameters());
  d.head(num_groups()) = group_sizes();
  if (smoothing_) {
    const int g = smoothing_->group;
    const Eigen::ArrayXd denominator = smoothing_->lambda * block_eigenvalues_.array() + alpha_[g];
    d[g] = alpha_[g] * denominator.inverse().sum();                                           // α tr(P⁻¹)
    d[num_groups()] = smoothing_->lambda * (block_eigenvalues_.array() / denominator).sum();  // λ tr(P⁻¹L)
  }
  return d;
}

Eigen::VectorXd Prior::well_determined(const Eigen::MatrixXd& covariance) const {
  if (covariance.rows() != dim() || covariance.cols() != dim()) {
    throw Error(ErrorKind::kInvalidArgument,
                "prior: the covariance must be " + std::to_string(dim()) + " x " + std::to_string(dim()));
  }
  Eigen::VectorXd gamma = hyperparameter_dimensions();
  gamma.head(num_groups()) -= alpha_.cwiseProduct(group_traces(covariance.diagonal()));
  if (smoothing_) {
    // tr(A⁻¹ L_b) = Σ_ij (A⁻¹)_ij L_ij over the smoothed block (L is sparse and symmetric).
    double trace = 0.0;
    for (Index k = 0; k < block_laplacian_.outerSize(); ++k) {
      for (Eigen::SparseMatrix<double>::InnerIterator it(block_laplacian_, k); it; ++it) {
        trace += covariance(block_offset_ + it.row(), block_offset_ + it.col()) * it.value();
      }
    }
    gamma[num_groups()] -= smoothing_->lambda * trace;
  }
  return gamma;
}

nlohmann::json Prior::to_json() const {
  nlohmann::json groups = nlohmann::json::array();
  for (int g = 0; g < num_groups(); ++g) {
    nlohmann::json blocks = nlohmann::json::array();
    for (const ParamBlock& b : groups_[g].blocks) blocks.push_back({b.offset, b.size});
    groups.push_back(
        {{"name", groups_[g].name}, {"size", groups_[g].size()}, {"alpha", alpha_[g]}, {"blocks", blocks}});
  }
  nlohmann::json j = {{"dim", dim()}, {"groups", groups}};
  if (smoothing_) {
    nlohmann::json edges = nlohmann::json::array();
    for (const auto& [a, b, weight] : smoothing_->graph.edges) edges.push_back({a, b, weight});
    j["smoothing"] = {
        {"group", smoothing_->group},   {"nodes", smoothing_->graph.nodes},     {"edges", edges},
        {"copies", smoothing_->copies}, {"node_major", smoothing_->node_major}, {"lambda", smoothing_->lambda}};
  }
  return j;
}

namespace {

// A JSON integer as an Index. nlohmann converts a float or an unsigned beyond 2⁶³ by a cast that
// overflows, so anything but an integer that fits is refused, naming the field.
Index index_from_json(const nlohmann::json& j, const char* field) {
  if (j.is_number_integer() &&
      !(j.is_number_unsigned() && j.get<std::uint64_t>() > static_cast<std::uint64_t>(kMaxParameters))) {
    return j.get<Index>();
  }
  throw Error(ErrorKind::kInvalidInput, std::string("'") + field + "' must be an integer in 0.." +
                                            std::to_string(kMaxParameters) + ", got " + j.dump());
}

}  // namespace

Prior Prior::from_json(const nlohmann::json& j) {
  try {
    const Index dim = index_from_json(j.at("dim"), "dim");
    std::vector<ParamGroup> groups;
    std::vector<double> alpha;
    for (const auto& g : j.at("groups")) {
      ParamGroup group{g.at("name").get<std::string>(), {}};
      for (const auto& b : g.at("blocks")) {
        group.blocks.push_back({index_from_json(b.at(0), "blocks offset"), index_from_json(b.at(1), "blocks size")});
      }
      groups.push_back(std::move(group));
      alpha.push_back(g.at("alpha").get<double>());
    }
    Prior prior(dim, std::move(groups),
                Eigen::Map<const Eigen::VectorXd>(alpha.data(), static_cast<Index>(alpha.size())));
    if (j.contains("smoothing")) {
      const auto& sj = j.at("smoothing");
      Smoothing smoothing;
      smoothing.group =
          static_cast<int>(std::min<Index>(index_from_json(sj.at("group"), "smoothing group"), prior.num_groups()));
      smoothing.graph.nodes = index_from_json(sj.at("nodes"), "smoothing nodes");
      for (const auto& e : sj.at("edges")) {
        smoothing.graph.edges.emplace_back(index_from_json(e.at(0), "smoothing edge"),
                                           index_from_json(e.at(1), "smoothing edge"), e.at(2).get<double>());
      }
      smoothing.copies = index_from_json(sj.at("copies"), "smoothing copies");
      smoothing.node_major = sj.at("node_major").get<bool>();
      smoothing.lambda = sj.at("lambda").get<double>();
      prior.set_smoothing(std::move(smoothing));
    }
    return prior;
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::kInvalidInput, std::string("prior description is malformed: ") + e.what());
  } catch (const Error& e) {
    throw Error(ErrorKind::kInvalidInput, std::string("prior description is inconsistent: ") + e.what());
  }
}

namespace {

// Graphs are built edge by edge: a node count is checked before anything that size is allocated.
void require_graph_size(Index nodes, const std::string& what) {
  if (nodes > kMaxGraphNodes) {
    throw Error(ErrorKind::kInvalidArgument, what + " has " + std::to_string(nodes) + " nodes, more than the " +
                                                 std::to_string(kMaxGraphNodes) +
                                                 " nodes a smoothing graph may have (one node per network input)");
  }
}

}  // namespace

Graph chain_graph(Index nodes) {
  if (nodes < 2) throw Error(ErrorKind::kInvalidArgument, "a chain graph needs at least 2 nodes");
  require_graph_size(nodes, "the chain graph");
  Graph g{nodes, {}};
  for (Index i = 0; i + 1 < nodes; ++i) g.edges.emplace_back(i, i + 1, 1.0);
  return g;
}

Graph grid_graph(Index rows, Index cols) {
  const std::string grid = std::to_string(rows) + "x" + std::to_string(cols);
  if (rows < 1 || cols < 1 || (rows == 1 && cols == 1)) {
    throw Error(ErrorKind::kInvalidArgument, "a grid graph needs at least 2 nodes, got " + grid);
  }
  // rows·cols formed only once it is known not to overflow.
  if (cols > kMaxGraphNodes / rows) {
    throw Error(ErrorKind::kInvalidArgument, "the grid graph " + grid + " has more than the " +
                                                 std::to_string(kMaxGraphNodes) +
                                                 " nodes a smoothing graph may have (one node per network input)");
  }
  Graph g{rows * cols, {}};
  for (Index r = 0; r < rows; ++r) {
    for (Index c = 0; c < cols; ++c) {
      const Index i = r * cols + c;
      if (c + 1 < cols) g.edges.emplace_back(i, i + 1, 1.0);
      if (r + 1 < rows) g.edges.emplace_back(i, i + cols, 1.0);
    }
  }
  return g;
}

namespace {

bool parse_index(std::string_view text, long long* value) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return ec == std::errc() && end == text.data() + text.size();
}

std::string_view trim_view(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

}  // namespace

Graph parse_grid(std::string_view text) {
  const auto x = text.find('x');
  long long rows = 0, cols = 0;
  const bool ok = x == std::string_view::npos
                      ? parse_index(text, &rows) && (cols = 1, true)
                      : parse_index(text.substr(0, x), &rows) && parse_index(text.substr(x + 1), &cols);
  if (!ok || rows < 1 || cols < 1) {
    throw Error(ErrorKind::kInvalidArgument,
                "grid must be ROWSxCOLS (e.g. 20x20) or a chain length (e.g. 40), got '" + std::string(text) + "'");
  }
  return cols == 1 ? chain_graph(rows) : grid_graph(rows, cols);
}

Graph read_edge_list(const std::string& path, Index nodes) {
  require_graph_size(nodes, "the graph of " + path);
  const std::string text = read_file(path);
  Graph g{nodes, {}};
  std::size_t start = 0, line_number = 0;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    std::string_view line(text.data() + start, end - start);
    start = end + 1;
    ++line_number;
    if (const auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = trim_view(line);
    if (line.empty()) continue;
    const auto where = path + ":" + std::to_string(line_number) + ": ";
    std::vector<std::string_view> cells;
    std::size_t s = 0;
    while (true) {
      const auto comma = line.find(',', s);
      cells.push_back(trim_view(line.substr(s, comma == std::string_view::npos ? std::string_view::npos : comma - s)));
      if (comma == std::string_view::npos) break;
      s = comma + 1;
    }
    long long a = 0, b = 0;
    if ((cells.size() != 2 && cells.size() != 3) || !parse_index(cells[0], &a) || !parse_index(cells[1], &b)) {
      throw Error(ErrorKind::kInvalidInput, where + "expected an edge 'i,j' or 'i,j,weight' with 0-based node indices");
    }
    if (a < 0 || b < 0 || a >= nodes || b >= nodes || a == b) {
      throw Error(ErrorKind::kInvalidInput, where + "edge " + std::to_string(a) + "," + std::to_string(b) +
                                                " must join two different nodes in 0.." + std::to_string(nodes - 1));
    }
    double weight = 1.0;
    if (cells.size() == 3) {
      const auto [ptr, ec] = std::from_chars(cells[2].data(), cells[2].data() + cells[2].size(), weight);
      if (ec != std::errc() || ptr != cells[2].data() + cells[2].size() || !(weight > 0.0) || !std::isfinite(weight)) {
        throw Error(ErrorKind::kInvalidInput, where + "the edge weight must be a positive number");
      }
    }
    g.edges.emplace_back(a, b, weight);
  }
  if (g.edges.empty()) throw Error(ErrorKind::kInvalidInput, path + ": no edges");
  return g;
}

Eigen::SparseMatrix<double> graph_laplacian(const Graph& graph) {
  std::vector<Eigen::Triplet<double>> triplets;
  for (const auto& [a, b, weight] : graph.edges) {
    if (a < 0 || b < 0 || a >= graph.nodes || b >= graph.nodes || a == b || !(weight > 0.0)) {
      throw Error(ErrorKind::kInvalidArgument, "graph: bad edge " + std::to_string(a) + "," + std::to_string(b));
    }
    triplets.emplace_back(a, a, weight);
    triplets.emplace_back(b, b, weight);
    triplets.emplace_back(a, b, -weight);
    triplets.emplace_back(b, a, -weight);
  }
  Eigen::SparseMatrix<double> L(graph.nodes, graph.nodes);
  L.setFromTriplets(triplets.begin(), triplets.end());  // duplicates are summed
  return L;
}

PriorKind parse_prior_kind(std::string_view name) { return enum_names<PriorKind>().parse(name); }

const char* to_string(PriorKind kind) { return enum_names<PriorKind>().name(kind); }

namespace {

// Where a network's first-layer weights lie: the index of the default group holding them, how
// many copies of the input set they hold (outputs or hidden units) and their layout.
struct InputWeights {
  int group = -1;
  Index copies = 1;
  bool node_major = false;
};

InputWeights input_weights(const Network& network, const std::vector<ParamGroup>& groups) {
  const std::optional<InputWeightLayout> layout = network.input_weight_layout();
  if (!layout)
    throw Error(ErrorKind::kInvalidArgument, "this prior needs a network with first-layer weights (linear or mlp)");
  InputWeights iw;
  iw.copies = layout->copies;
  iw.node_major = layout->node_major;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].name == layout->group) iw.group = static_cast<int>(g);
  }
  if (iw.group < 0 || groups[iw.group].blocks.size() != 1 ||
      groups[iw.group].size() != network.num_inputs() * iw.copies) {
    throw Error(ErrorKind::kInvalidArgument, "this prior cannot find the network's first-layer weights");
  }
  return iw;
}

}  // namespace

Prior make_prior(const Network& network, const PriorSpec& spec) {
  if (!(spec.alpha > 0.0) || !std::isfinite(spec.alpha)) {
    throw Error(ErrorKind::kInvalidArgument, "prior: the starting alpha must be positive and finite");
  }
  const Index W = network.num_params();
  switch (spec.kind) {
    case PriorKind::kRidge:
      return Prior::from_network(network, AlphaGroups::kSingle, spec.alpha);
    case PriorKind::kGroups:
      return Prior::from_network(network, AlphaGroups::kDefault, spec.alpha);
    case PriorKind::kArd: {
      const std::vector<ParamGroup> defaults = network.default_groups();
      const InputWeights iw = input_weights(network, defaults);
      const Index D = network.num_inputs();
      if (!spec.input_names.empty() && static_cast<Index>(spec.input_names.size()) != D) {
        throw Error(ErrorKind::kInvalidArgument, "prior: " + std::to_string(spec.input_names.size()) +
                                                     " input names for " + std::to_string(D) + " inputs");
      }
      const Index offset = defaults[iw.group].blocks[0].offset;
      std::vector<ParamGroup> groups;
      for (Index d = 0; d < D; ++d) {
        ParamGroup g{spec.input_names.empty() ? "input_" + std::to_string(d + 1) : "input:" + spec.input_names[d], {}};
        if (iw.node_major) {
          g.blocks.push_back({offset + d * iw.copies, iw.copies});
        } else {
          for (Index c = 0; c < iw.copies; ++c) g.blocks.push_back({offset + c * D + d, 1});
        }
        groups.push_back(std::move(g));
      }
      for (std::size_t g = 0; g < defaults.size(); ++g) {
        if (static_cast<int>(g) != iw.group) groups.push_back(defaults[g]);
      }
      const auto count = static_cast<Index>(groups.size());
      return Prior(W, std::move(groups), Eigen::VectorXd::Constant(count, spec.alpha));
    }
    case PriorKind::kLaplacian: {
      if (!spec.graph)
        throw Error(ErrorKind::kInvalidArgument, "the laplacian prior needs a graph over the inputs (PriorSpec.graph)");
      if (spec.graph->nodes != network.num_inputs()) {
        throw Error(ErrorKind::kInvalidArgument, "the smoothing graph has " + std::to_string(spec.graph->nodes) +
                                                     " nodes but the network has " +
                                                     std::to_string(network.num_inputs()) + " inputs");
      }
      Prior prior = Prior::from_network(network, AlphaGroups::kDefault, spec.alpha);
      const InputWeights iw = input_weights(network, prior.groups());
      prior.set_smoothing({iw.group, *spec.graph, iw.copies, iw.node_major, spec.smoothing});
      return prior;
    }
  }
  throw Error(ErrorKind::kInvalidArgument, "unknown prior kind");
}

}  // namespace occam
