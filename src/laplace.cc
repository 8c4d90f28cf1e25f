#include "occam/laplace.h"

#include <Eigen/Cholesky>
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <limits>
#include <numbers>

#include "curvature.h"
#include "linalg.h"
#include "occam/status.h"
#include "structured/structured.h"

namespace occam {

namespace {

// f(s) = ((1 + s)^-½ − 1)/s = −1/(√(1+s)(1 + √(1+s))), written without the cancellation at s → 0.
Eigen::ArrayXd root_coefficients(const Eigen::VectorXd& s) {
  const Eigen::ArrayXd r = (1.0 + s.array()).sqrt();
  return -1.0 / (r * (1.0 + r));
}

std::vector<double> as_vector(const Eigen::Ref<const Eigen::MatrixXd>& m) {
  return std::vector<double>(m.data(), m.data() + m.size());
}

bool is_diagonal(const LaplaceApproximation& q) { return q.structure.kind == HessianStructureKind::kDiagonal; }
bool is_last_layer(const LaplaceApproximation& q) { return q.structure.kind == HessianStructureKind::kLastLayer; }
bool is_kronecker(const LaplaceApproximation& q) { return q.structure.kind == HessianStructureKind::kKronecker; }
bool is_lowrank(const LaplaceApproximation& q) { return q.structure.kind == HessianStructureKind::kLowRank; }

// (λ_g,i λ_q,j + α)^power for a Kronecker block, rows × cols.
Eigen::ArrayXXd block_eigenvalues(const KroneckerBlock& b, double power) {
  return ((b.output_values * b.input_values.transpose()).array() + b.prior_precision).pow(power);
}

// The block's part of a vector of θ as its rows × cols matrix.
Eigen::Map<const Eigen::MatrixXd> block_of(const KroneckerBlock& b, const Eigen::Ref<const Eigen::VectorXd>& v) {
  return {v.data() + b.offset, b.rows, b.cols};
}

// Eᵀg for the W × p embedding E of the integrated weights: the rows of G they index.
Eigen::MatrixXd integrated_rows(const LaplaceApproximation& q, const Eigen::MatrixXd& G) {
  Eigen::MatrixXd out(static_cast<Eigen::Index>(q.integrated.size()), G.cols());
  for (std::size_t i = 0; i < q.integrated.size(); ++i) out.row(static_cast<Eigen::Index>(i)) = G.row(q.integrated[i]);
  return out;
}

}  // namespace

HessianStructure parse_hessian_structure(std::string_view text) {
  if (text == "full") return {HessianStructureKind::kFull};
  if (text == "diag") return {HessianStructureKind::kDiagonal};
  if (text == "last-layer") return {HessianStructureKind::kLastLayer};
  if (text == "kron") return {HessianStructureKind::kKronecker};
  constexpr std::string_view kLowRank = "lowrank:";
  if (text.starts_with(kLowRank)) {
    // K: decimal digits only (no sign, no spaces), at least 1, small enough to be a count of weights.
    const std::string_view digits = text.substr(kLowRank.size());
    if (!digits.empty() && digits.size() <= 12 &&
        std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      const auto rank = static_cast<Eigen::Index>(std::stoll(std::string(digits)));
      if (rank >= 1) return {HessianStructureKind::kLowRank, rank};
    }
  }
  throw Error(ErrorKind::kInvalidArgument,
              "hessian_structure must be one of full, diag, last-layer, kron, lowrank:K (K a positive integer, at most "
              "the number of weights); got '" + std::string(text) + "'");
}

std::string to_string(const HessianStructure& structure) {
  switch (structure.kind) {
    case HessianStructureKind::kFull: return "full";
    case HessianStructureKind::kDiagonal: return "diag";
    case HessianStructureKind::kLastLayer: return "last-layer";
    case HessianStructureKind::kKronecker: return "kron";
    case HessianStructureKind::kLowRank: return "lowrank:" + std::to_string(structure.rank);
  }
  return "unknown";
}

void check_hessian_structure(const HessianStructure& structure, Eigen::Index num_weights) {
  if (structure.kind == HessianStructureKind::kLowRank && (structure.rank < 1 || structure.rank > num_weights)) {
    throw Error(ErrorKind::kInvalidArgument, "hessian_structure " + to_string(structure) + " is not lowrank:K with 1 ≤ K ≤ " +
                                                 std::to_string(num_weights) + ", the number of weights");
  }
}

Eigen::Index LaplaceApproximation::integrated_dim() const {
  return is_last_layer(*this) ? static_cast<Eigen::Index>(integrated.size()) : dim();
}

LaplaceApproximation LaplaceApproximation::from_woodbury(Eigen::VectorXd mean, Eigen::VectorXd diagonal,
                                                         Eigen::MatrixXd root) {
  if (diagonal.size() != mean.size() || root.cols() != mean.size()) {
    throw Error(ErrorKind::kInvalidArgument, "laplace: the Woodbury factor does not match the mean's size");
  }
  if (!(diagonal.array() > 0.0).all() || !diagonal.allFinite() || !root.allFinite()) {
    throw Error(ErrorKind::kNumerical, "laplace: the Woodbury factor has a non-positive or non-finite entry");
  }
  LaplaceApproximation q;
  q.mean = std::move(mean);
  q.woodbury_diagonal = std::move(diagonal);
  q.woodbury_root = std::move(root);
  Eigen::MatrixXd gram = Eigen::MatrixXd::Zero(q.woodbury_root.rows(), q.woodbury_root.rows());
  internal::rank_update_lower(q.woodbury_root, &gram);
  if (!internal::symmetric_eigen(gram, &q.capacitance_eigenvalues, &q.capacitance_eigenvectors)) {
    throw Error(ErrorKind::kNumerical, "laplace: eigendecomposition of UUᵀ failed");
  }
  q.capacitance_eigenvalues = q.capacitance_eigenvalues.cwiseMax(0.0);  // UUᵀ ⪰ 0: rounding only
  // |A| = |D| · |I + UᵀU| = |D| · |I + UUᵀ| (Sylvester's determinant identity).
  q.log_det_precision = q.woodbury_diagonal.array().log().sum() + q.capacitance_eigenvalues.array().log1p().sum();
  return q;
}

Eigen::VectorXd LaplaceApproximation::covariance_diagonal() const {
  const Eigen::Index W = dim();
  if (is_diagonal(*this)) return diagonal_precision.cwiseInverse();
  if (is_kronecker(*this)) {
    Eigen::VectorXd out(W);
    for (const KroneckerBlock& b : kronecker) {
      // (A⁻¹)_(i,j) = Σ_ab U_g(i,a)² U_q(j,b)² / (λ_g,a λ_q,b + α) = ((U_g∘U_g) M (U_q∘U_q)ᵀ)_ij.
      const Eigen::MatrixXd M = block_eigenvalues(b, -1.0).matrix();
      const Eigen::MatrixXd V = b.output_vectors.cwiseAbs2() * M * b.input_vectors.cwiseAbs2().transpose();
      out.segment(b.offset, V.size()) = Eigen::Map<const Eigen::VectorXd>(V.data(), V.size());
    }
    return out;
  }
  if (is_last_layer(*this)) {
    // Zero for the weights held at the mode; the integrated block's from L⁻¹ as below.
    const auto p = static_cast<Eigen::Index>(integrated.size());
    Eigen::MatrixXd L_inv = Eigen::MatrixXd::Identity(p, p);
    precision_cholesky.triangularView<Eigen::Lower>().solveInPlace(L_inv);
    const Eigen::VectorXd block = L_inv.colwise().squaredNorm().transpose();
    Eigen::VectorXd out = Eigen::VectorXd::Zero(W);
    for (Eigen::Index i = 0; i < p; ++i) out[integrated[static_cast<std::size_t>(i)]] = block[i];
    return out;
  }
  if (form() == CurvatureForm::kWoodbury) {
    // (A⁻¹)_ii = (1 − u_iᵀ(I + UUᵀ)⁻¹u_i)/d_i, with (I + UUᵀ)⁻¹ = Q diag(1/(1+s)) Qᵀ.
    const Eigen::MatrixXd V = (1.0 + capacitance_eigenvalues.array()).rsqrt().matrix().asDiagonal() *
                              (capacitance_eigenvectors.transpose() * woodbury_root);
    return (1.0 - V.colwise().squaredNorm().transpose().array()) / woodbury_diagonal.array();
  }
  // diag(A⁻¹) = column norms² of L⁻¹, since A⁻¹ = L⁻ᵀL⁻¹.
  Eigen::MatrixXd L_inv = Eigen::MatrixXd::Identity(W, W);
  precision_cholesky.triangularView<Eigen::Lower>().solveInPlace(L_inv);
  return L_inv.colwise().squaredNorm().transpose();
}

Eigen::VectorXd LaplaceApproximation::precision_diagonal() const {
  if (is_diagonal(*this)) return diagonal_precision;
  if (is_kronecker(*this)) {
    // diag(Q ⊗ G) + α = diag(G) diag(Q)ᵀ + α.
    Eigen::VectorXd out(dim());
    for (const KroneckerBlock& b : kronecker) {
      const Eigen::VectorXd dq = b.input_vectors.cwiseAbs2() * b.input_values;
      const Eigen::VectorXd dg = b.output_vectors.cwiseAbs2() * b.output_values;
      const Eigen::MatrixXd V = ((dg * dq.transpose()).array() + b.prior_precision).matrix();
      out.segment(b.offset, V.size()) = Eigen::Map<const Eigen::VectorXd>(V.data(), V.size());
    }
    return out;
  }
  if (is_last_layer(*this)) {
    // A weight held at the mode has no finite precision: +∞ (a point mass).
    Eigen::VectorXd out = Eigen::VectorXd::Constant(dim(), std::numeric_limits<double>::infinity());
    const Eigen::VectorXd block =
        precision_cholesky.triangularView<Eigen::Lower>().toDenseMatrix().rowwise().squaredNorm();
    for (std::size_t i = 0; i < integrated.size(); ++i) out[integrated[i]] = block[static_cast<Eigen::Index>(i)];
    return out;
  }
  if (form() == CurvatureForm::kWoodbury) {
    return woodbury_diagonal.cwiseProduct((1.0 + woodbury_root.colwise().squaredNorm().array()).matrix().transpose());
  }
  // A_ii = ‖row i of L‖².
  return precision_cholesky.triangularView<Eigen::Lower>().toDenseMatrix().rowwise().squaredNorm();
}

Eigen::MatrixXd LaplaceApproximation::covariance() const {
  const Eigen::MatrixXd S_t = covariance_factor_transpose(Eigen::MatrixXd::Identity(dim(), dim()));
  return S_t.transpose() * S_t;  // A⁻¹ = S Sᵀ = (Sᵀ)ᵀ Sᵀ
}

Eigen::MatrixXd LaplaceApproximation::covariance_factor_transpose(const Eigen::MatrixXd& G) const {
  if (is_diagonal(*this)) return diagonal_precision.array().rsqrt().matrix().asDiagonal() * G;
  if (is_last_layer(*this)) return precision_cholesky.triangularView<Eigen::Lower>().solve(integrated_rows(*this, G));
  if (is_kronecker(*this)) {
    // Sᵀ = diag(·)^-½ (U_q ⊗ U_g)ᵀ per block: vec(U_gᵀ X U_q) scaled, X the block of g as a matrix.
    Eigen::MatrixXd out(G.rows(), G.cols());
    for (const KroneckerBlock& b : kronecker) {
      const Eigen::ArrayXXd scale = block_eigenvalues(b, -0.5);
      for (Eigen::Index c = 0; c < G.cols(); ++c) {
        const Eigen::MatrixXd Y = (b.output_vectors.transpose() * block_of(b, G.col(c)) * b.input_vectors).array() * scale;
        out.col(c).segment(b.offset, Y.size()) = Eigen::Map<const Eigen::VectorXd>(Y.data(), Y.size());
      }
    }
    return out;
  }
  if (form() == CurvatureForm::kDense) {
    // A = LLᵀ, so A⁻¹ = L⁻ᵀL⁻¹ and S = L⁻ᵀ: a triangular solve, never an inverse.
    return precision_cholesky.triangularView<Eigen::Lower>().solve(G);
  }
  // S is symmetric: Sᵀg = (I + UᵀQ f(s) QᵀU) D^-½ g.
  Eigen::MatrixXd Y = woodbury_diagonal.array().rsqrt().matrix().asDiagonal() * G;
  const Eigen::MatrixXd T = root_coefficients(capacitance_eigenvalues).matrix().asDiagonal() *
                            (capacitance_eigenvectors.transpose() * (woodbury_root * Y));
  Y.noalias() += woodbury_root.transpose() * (capacitance_eigenvectors * T);
  return Y;
}

Eigen::VectorXd LaplaceApproximation::quadratic_form_inverse(const Eigen::MatrixXd& G) const {
  // gᵀA⁻¹g = ‖Sᵀg‖².
  return covariance_factor_transpose(G).colwise().squaredNorm().transpose();
}

Eigen::VectorXd LaplaceApproximation::sample(Rng& rng) const {
  if (is_last_layer(*this)) {
    // w = mean + E L⁻ᵀz with z ~ N(0, I_p): the held weights stay at the mode.
    Eigen::VectorXd z = rng.normal_vector(static_cast<Eigen::Index>(integrated.size()));
    precision_cholesky.triangularView<Eigen::Lower>().transpose().solveInPlace(z);
    Eigen::VectorXd w = mean;
    for (std::size_t i = 0; i < integrated.size(); ++i) w[integrated[i]] += z[static_cast<Eigen::Index>(i)];
    return w;
  }
  Eigen::VectorXd z = rng.normal_vector(dim());
  if (is_diagonal(*this)) return mean + covariance_factor_transpose(z);
  if (is_kronecker(*this)) {
    // w = mean + Sz, S = (U_q ⊗ U_g) diag(·)^-½ per block: vec(U_g (Z∘scale) U_qᵀ).
    Eigen::VectorXd w = mean;
    for (const KroneckerBlock& b : kronecker) {
      const Eigen::MatrixXd Zs = (block_of(b, z).array() * block_eigenvalues(b, -0.5)).matrix();
      const Eigen::MatrixXd Y = b.output_vectors * Zs * b.input_vectors.transpose();
      w.segment(b.offset, Y.size()) += Eigen::Map<const Eigen::VectorXd>(Y.data(), Y.size());
    }
    return w;
  }
  if (form() == CurvatureForm::kWoodbury) return mean + covariance_factor_transpose(z);  // S = Sᵀ
  precision_cholesky.triangularView<Eigen::Lower>().transpose().solveInPlace(z);  // L⁻ᵀz ~ N(0, A⁻¹)
  return mean + z;
}

nlohmann::json LaplaceApproximation::to_json() const {
  const Eigen::Index W = dim();
  nlohmann::json j = {{"mean", std::vector<double>(mean.data(), mean.data() + W)},
                      {"log_det_precision", log_det_precision},
                      {"clipped_eigenvalues", clipped_eigenvalues}};
  if (!structure.full()) j["hessian_structure"] = to_string(structure);
  if (is_diagonal(*this)) {
    j["form"] = "diagonal";
    j["diagonal_precision"] = as_vector(diagonal_precision);
    return j;
  }
  if (is_kronecker(*this)) {
    j["form"] = "kronecker";
    nlohmann::json blocks = nlohmann::json::array();
    for (const KroneckerBlock& b : kronecker) {
      blocks.push_back({{"offset", b.offset}, {"rows", b.rows}, {"cols", b.cols}, {"prior_precision", b.prior_precision},
                        {"input_vectors", as_vector(b.input_vectors)}, {"input_values", as_vector(b.input_values)},
                        {"output_vectors", as_vector(b.output_vectors)}, {"output_values", as_vector(b.output_values)}});
    }
    j["kronecker_blocks"] = blocks;
    return j;
  }
  if (form() == CurvatureForm::kWoodbury) {
    j["form"] = "woodbury";
    j["woodbury_diagonal"] = as_vector(woodbury_diagonal);
    j["woodbury_root_rows"] = woodbury_root.rows();
    j["woodbury_root"] = as_vector(woodbury_root);  // column-major, n × W
    j["capacitance_eigenvectors"] = as_vector(capacitance_eigenvectors);
    j["capacitance_eigenvalues"] = as_vector(capacitance_eigenvalues);
    if (is_lowrank(*this)) {
      j["lanczos"] = {{"steps", lanczos.steps}, {"max_relative_residual", lanczos.max_relative_residual},
                      {"converged", lanczos.converged}};
    }
    return j;
  }
  // The dense factor, of all W weights or (last-layer) of the p integrated ones.
  const Eigen::Index p = precision_cholesky.rows();
  if (is_last_layer(*this)) j["integrated"] = integrated;
  std::vector<double> packed;
  packed.reserve(static_cast<std::size_t>(p * (p + 1) / 2));
  for (Eigen::Index c = 0; c < p; ++c) {
    for (Eigen::Index r = c; r < p; ++r) packed.push_back(precision_cholesky(r, c));
  }
  j["precision_cholesky_lower_packed"] = packed;
  return j;
}

LaplaceApproximation LaplaceApproximation::from_json(const nlohmann::json& j) {
  LaplaceApproximation q;
  try {
    const auto mean = j.at("mean").get<std::vector<double>>();
    const auto W = static_cast<Eigen::Index>(mean.size());
    q.mean = Eigen::Map<const Eigen::VectorXd>(mean.data(), W);
    q.log_det_precision = j.at("log_det_precision").get<double>();
    q.clipped_eigenvalues = j.at("clipped_eigenvalues").get<int>();
    const std::string form = j.value("form", std::string("dense"));
    q.structure = parse_hessian_structure(j.value("hessian_structure", std::string("full")));
    auto read_from = [&](const nlohmann::json& from, const char* name, Eigen::Index rows, Eigen::Index cols) {
      const auto values = from.at(name).get<std::vector<double>>();
      if (static_cast<Eigen::Index>(values.size()) != rows * cols) {
        throw Error(ErrorKind::kInvalidInput, std::string("posterior '") + name + "' has " + std::to_string(values.size()) +
                                                  " entries, expected " + std::to_string(rows * cols));
      }
      if (!std::all_of(values.begin(), values.end(), [](double v) { return std::isfinite(v); })) {
        throw Error(ErrorKind::kInvalidInput, std::string("posterior '") + name + "' has a non-finite entry");
      }
      return Eigen::MatrixXd(Eigen::Map<const Eigen::MatrixXd>(values.data(), rows, cols));
    };
    auto read = [&](const char* name, Eigen::Index rows, Eigen::Index cols) { return read_from(j, name, rows, cols); };
    if (form == "diagonal") {
      if (!is_diagonal(q)) throw Error(ErrorKind::kInvalidInput, "posterior form \"diagonal\" needs hessian_structure \"diag\"");
      q.diagonal_precision = read("diagonal_precision", W, 1);
      if (!(q.diagonal_precision.array() > 0.0).all()) {
        throw Error(ErrorKind::kInvalidInput, "posterior 'diagonal_precision' has a non-positive entry");
      }
      return q;
    }
    if (form == "kronecker") {
      if (!is_kronecker(q)) throw Error(ErrorKind::kInvalidInput, "posterior form \"kronecker\" needs hessian_structure \"kron\"");
      Eigen::Index next = 0;  // the blocks partition θ in order
      for (const nlohmann::json& jb : j.at("kronecker_blocks")) {
        KroneckerBlock b;
        b.offset = jb.at("offset").get<Eigen::Index>();
        b.rows = jb.at("rows").get<Eigen::Index>();
        b.cols = jb.at("cols").get<Eigen::Index>();
        b.prior_precision = jb.at("prior_precision").get<double>();
        if (b.offset != next || b.rows < 1 || b.cols < 1 || b.offset + b.rows * b.cols > W || !(b.prior_precision > 0.0)) {
          throw Error(ErrorKind::kInvalidInput, "posterior 'kronecker_blocks' do not partition the weights in order, or "
                                                "a block's prior precision is not positive");
        }
        next = b.offset + b.rows * b.cols;
        b.input_vectors = read_from(jb, "input_vectors", b.cols, b.cols);
        b.input_values = read_from(jb, "input_values", b.cols, 1);
        b.output_vectors = read_from(jb, "output_vectors", b.rows, b.rows);
        b.output_values = read_from(jb, "output_values", b.rows, 1);
        if ((b.input_values.array() < 0.0).any() || (b.output_values.array() < 0.0).any()) {
          throw Error(ErrorKind::kInvalidInput, "posterior 'kronecker_blocks' has a negative eigenvalue");
        }
        q.kronecker.push_back(std::move(b));
      }
      if (next != W) throw Error(ErrorKind::kInvalidInput, "posterior 'kronecker_blocks' do not cover every weight");
      return q;
    }
    if (is_lowrank(q) && form != "woodbury") {
      throw Error(ErrorKind::kInvalidInput, "hessian_structure \"" + to_string(q.structure) + "\" needs posterior form \"woodbury\"");
    }
    if (form == "woodbury") {
      const auto n = j.at("woodbury_root_rows").get<Eigen::Index>();
      if (n < 0) throw Error(ErrorKind::kInvalidInput, "posterior 'woodbury_root_rows' is negative");
      q.woodbury_diagonal = read("woodbury_diagonal", W, 1);
      q.woodbury_root = read("woodbury_root", n, W);
      q.capacitance_eigenvectors = read("capacitance_eigenvectors", n, n);
      q.capacitance_eigenvalues = read("capacitance_eigenvalues", n, 1);
      if (!(q.woodbury_diagonal.array() > 0.0).all() || (q.capacitance_eigenvalues.array() < 0.0).any()) {
        throw Error(ErrorKind::kInvalidInput, "posterior Woodbury factor has a non-positive diagonal or a negative eigenvalue");
      }
      if (is_lowrank(q)) {
        // U's rows are the K kept eigenpairs.
        if (n != q.structure.rank) {
          throw Error(ErrorKind::kInvalidInput, "posterior 'woodbury_root_rows' is " + std::to_string(n) +
                                                    " but hessian_structure " + to_string(q.structure) + " keeps " +
                                                    std::to_string(q.structure.rank) + " eigenpairs");
        }
        const nlohmann::json& l = j.at("lanczos");
        q.lanczos = {l.at("steps").get<int>(), l.at("max_relative_residual").get<double>(), l.at("converged").get<bool>()};
      }
      return q;
    }
    if (form != "dense") {
      throw Error(ErrorKind::kInvalidInput,
                  "posterior 'form' must be \"dense\", \"woodbury\", \"diagonal\" or \"kronecker\", got \"" + form + "\"");
    }
    Eigen::Index p = W;
    if (is_last_layer(q)) {
      q.integrated = j.at("integrated").get<std::vector<Eigen::Index>>();
      p = static_cast<Eigen::Index>(q.integrated.size());
      if (!std::is_sorted(q.integrated.begin(), q.integrated.end()) ||
          std::adjacent_find(q.integrated.begin(), q.integrated.end()) != q.integrated.end() ||
          std::any_of(q.integrated.begin(), q.integrated.end(), [W](Eigen::Index i) { return i < 0 || i >= W; })) {
        throw Error(ErrorKind::kInvalidInput, "posterior 'integrated' must list distinct weight indices in [0, " +
                                                  std::to_string(W) + ") in increasing order");
      }
    }
    const auto packed = j.at("precision_cholesky_lower_packed").get<std::vector<double>>();
    if (static_cast<Eigen::Index>(packed.size()) != p * (p + 1) / 2) {
      throw Error(ErrorKind::kInvalidInput, "posterior factor has " + std::to_string(packed.size()) +
                                                " entries; a lower triangle of order " + std::to_string(p) +
                                                " has " + std::to_string(p * (p + 1) / 2));
    }
    q.precision_cholesky = Eigen::MatrixXd::Zero(p, p);
    std::size_t k = 0;
    for (Eigen::Index c = 0; c < p; ++c) {
      for (Eigen::Index r = c; r < p; ++r) q.precision_cholesky(r, c) = packed[k++];
    }
    if (!(q.precision_cholesky.diagonal().array() > 0.0).all()) {
      throw Error(ErrorKind::kInvalidInput, "posterior factor has a non-positive diagonal entry");
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::kInvalidInput, std::string("posterior description is malformed: ") + e.what());
  }
  return q;
}

Eigen::MatrixXd positive_data_hessian(const Posterior& posterior, const Eigen::VectorXd& w, HessianKind kind,
                                      int* clipped) {
  Eigen::MatrixXd H = posterior.data_hessian(w, kind);
  int count = 0;
  if (kind == HessianKind::kExact) {
    // Away from an exact minimum, or at a saddle, the exact Hessian can be indefinite; its negative
    // eigenvalues are set to zero so that A = H + αI stays a valid precision (MacKay 1992b, §3.2).
    Eigen::VectorXd lambda;
    Eigen::MatrixXd vectors;
    if (!internal::symmetric_eigen(H, &lambda, &vectors)) {
      throw Error(ErrorKind::kNumerical, "eigendecomposition of the Hessian failed");
    }
    for (Eigen::Index i = 0; i < lambda.size(); ++i) {
      if (lambda[i] < 0.0) {
        lambda[i] = 0.0;
        ++count;
      }
    }
    if (count > 0) H = vectors * lambda.asDiagonal() * vectors.transpose();
  }
  if (clipped != nullptr) *clipped = count;
  return H;
}

LaplaceApproximation laplace_from_hessian(const Posterior& posterior, const Eigen::VectorXd& w,
                                          const Eigen::MatrixXd& data_hessian) {
  Eigen::MatrixXd A = data_hessian;
  posterior.prior().add_precision_to(&A);
  Eigen::LLT<Eigen::MatrixXd> llt(A);
  if (llt.info() != Eigen::Success) {
    throw Error(ErrorKind::kNumerical,
                "the posterior precision A = H + prior precision is not positive definite (a non-finite Hessian?)");
  }
  LaplaceApproximation q;
  q.mean = w;
  q.precision_cholesky = llt.matrixL();
  q.log_det_precision = 2.0 * q.precision_cholesky.diagonal().array().log().sum();
  return q;
}

LaplaceApproximation laplace(const Posterior& posterior, const Eigen::VectorXd& w, HessianKind kind) {
  internal::Curvature curvature(posterior, w, {.hessian = kind});
  if (!curvature.factor(0.0)) {
    throw Error(ErrorKind::kNumerical,
                "the posterior precision A = H + prior precision is not positive definite (a non-finite Hessian?)");
  }
  return curvature.laplace(w);
}

LaplaceApproximation laplace(const Posterior& posterior, const Eigen::VectorXd& w, HessianKind kind,
                             const HessianStructure& structure) {
  if (structure.full()) return laplace(posterior, w, kind);
  if (kind != HessianKind::kGgn) {
    throw Error(ErrorKind::kInvalidArgument, "hessian_structure " + to_string(structure) +
                                                 " approximates the Gauss–Newton matrix: it needs hessian ggn, not exact");
  }
  if (!posterior.prior().is_group_diagonal()) {
    throw Error(ErrorKind::kInvalidArgument, "hessian_structure " + to_string(structure) +
                                                 " needs a group-diagonal prior (not graph-Laplacian smoothing)");
  }
  if (w.size() != posterior.dim()) {
    throw Error(ErrorKind::kInvalidArgument, "laplace: w has " + std::to_string(w.size()) +
                                                 " entries but the network has " + std::to_string(posterior.dim()));
  }
  check_hessian_structure(structure, posterior.dim());
  switch (structure.kind) {
    case HessianStructureKind::kDiagonal: return internal::diagonal_laplace(posterior, w);
    case HessianStructureKind::kLastLayer: return internal::last_layer_laplace(posterior, w);
    case HessianStructureKind::kKronecker: return internal::kronecker_laplace(posterior, w);
    case HessianStructureKind::kLowRank: return internal::lowrank_laplace(posterior, w, structure.rank);
    case HessianStructureKind::kFull: break;
  }
  return laplace(posterior, w, kind);
}

double log_evidence(const Posterior& posterior, const LaplaceApproximation& q) {
  // log ∫ p(D|w) p(w|α) dw ≈ log p(D|w*) + log p(w*|α) + (W/2) log 2π − ½ log|A|  (MacKay 1992a, eq. 10).
  double log_joint;
  if (!posterior.evaluate(q.mean, &log_joint, nullptr)) {
    throw Error(ErrorKind::kNumerical, "log-evidence: the log density is not finite at w_MAP");
  }
  // With a structure, log|A| is the structure's and the Gaussian is over the integrated weights only
  // (last-layer: the held weights' prior density at the mode stays in log p(w*|α); laplace.h).
  return log_joint + 0.5 * static_cast<double>(q.integrated_dim()) * std::log(2.0 * std::numbers::pi) -
         0.5 * q.log_det_precision;
}

double symmetry_log_factor(const Network& network) { return network.symmetry_log_factor(); }

}  // namespace occam
