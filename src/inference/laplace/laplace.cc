#include "occam/laplace.h"

#include <Eigen/Cholesky>
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <limits>
#include <numbers>

#include "inference/curvature/curvature.h"
#include "core/linalg.h"
#include "occam/status.h"
#include "inference/laplace/structured/precision_factors.h"
#include "inference/laplace/structured/structured.h"

namespace occam {

namespace internal {

std::vector<double> as_vector(const Eigen::Ref<const Eigen::MatrixXd>& m) {
  return std::vector<double>(m.data(), m.data() + m.size());
}

Eigen::MatrixXd read_matrix(const nlohmann::json& from, const char* name, Index rows, Index cols) {
  const auto values = from.at(name).get<std::vector<double>>();
  if (static_cast<Index>(values.size()) != rows * cols) {
    throw Error(ErrorKind::kInvalidInput, std::string("posterior '") + name + "' has " + std::to_string(values.size()) +
                                              " entries, expected " + std::to_string(rows * cols));
  }
  if (!std::all_of(values.begin(), values.end(), [](double v) { return std::isfinite(v); })) {
    throw Error(ErrorKind::kInvalidInput, std::string("posterior '") + name + "' has a non-finite entry");
  }
  return Eigen::Map<const Eigen::MatrixXd>(values.data(), rows, cols);
}

}  // namespace internal

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
              "the number of weights); got '" +
                  std::string(text) + "'");
}

std::string to_string(const HessianStructure& structure) {
  switch (structure.kind) {
    case HessianStructureKind::kFull:
      return "full";
    case HessianStructureKind::kDiagonal:
      return "diag";
    case HessianStructureKind::kLastLayer:
      return "last-layer";
    case HessianStructureKind::kKronecker:
      return "kron";
    case HessianStructureKind::kLowRank:
      return "lowrank:" + std::to_string(structure.rank);
  }
  return "unknown";
}

void check_hessian_structure(const HessianStructure& structure, Eigen::Index num_weights) {
  if (structure.kind == HessianStructureKind::kLowRank && (structure.rank < 1 || structure.rank > num_weights)) {
    throw Error(ErrorKind::kInvalidArgument, "hessian_structure " + to_string(structure) +
                                                 " is not lowrank:K with 1 ≤ K ≤ " + std::to_string(num_weights) +
                                                 ", the number of weights");
  }
}

const PrecisionFactor& LaplaceApproximation::factor() const {
  if (precision == nullptr) {
    throw Error(ErrorKind::kInvalidArgument,
                "laplace: the approximation has no precision factor (default-constructed)");
  }
  return *precision;
}

Eigen::MatrixXd LaplaceApproximation::covariance() const {
  const Eigen::MatrixXd S_t = covariance_factor_transpose(Eigen::MatrixXd::Identity(dim(), dim()));
  return S_t.transpose() * S_t;  // A⁻¹ = S Sᵀ = (Sᵀ)ᵀ Sᵀ
}

Eigen::VectorXd LaplaceApproximation::quadratic_form_inverse(const Eigen::MatrixXd& G) const {
  // gᵀA⁻¹g = ‖Sᵀg‖².
  return covariance_factor_transpose(G).colwise().squaredNorm().transpose();
}

nlohmann::json LaplaceApproximation::to_json() const {
  nlohmann::json j = {{"mean", std::vector<double>(mean.data(), mean.data() + mean.size())},
                      {"log_det_precision", log_det_precision()},
                      {"clipped_eigenvalues", clipped_eigenvalues}};
  if (!structure().full()) j["hessian_structure"] = to_string(structure());
  factor().write(&j);
  return j;
}

LaplaceApproximation LaplaceApproximation::from_json(const nlohmann::json& j) {
  LaplaceApproximation q;
  try {
    const auto mean = j.at("mean").get<std::vector<double>>();
    const auto W = static_cast<Index>(mean.size());
    q.mean = Eigen::Map<const Eigen::VectorXd>(mean.data(), W);
    const double log_det = j.at("log_det_precision").get<double>();
    q.clipped_eigenvalues = j.at("clipped_eigenvalues").get<int>();
    const std::string form = j.value("form", std::string("dense"));
    const HessianStructure structure = parse_hessian_structure(j.value("hessian_structure", std::string("full")));
    // Which forms each structure is held in (laplace.h): a file that pairs them otherwise is corrupt.
    auto needs = [&](bool allowed, const std::string& what) {
      if (!allowed) {
        throw Error(ErrorKind::kInvalidInput, "posterior form \"" + form + "\" needs hessian_structure " + what +
                                                  ", not \"" + to_string(structure) + "\"");
      }
    };
    using Kind = HessianStructureKind;
    if (form == "diagonal") {
      needs(structure.kind == Kind::kDiagonal, "\"diag\"");
      q.precision = internal::DiagonalPrecision::read(j, W, log_det);
    } else if (form == "kronecker") {
      needs(structure.kind == Kind::kKronecker, "\"kron\"");
      q.precision = internal::KroneckerPrecision::read(j, W, log_det);
    } else if (form == "woodbury") {
      needs(structure.kind == Kind::kFull || structure.kind == Kind::kLowRank, "\"full\" or \"lowrank:K\"");
      q.precision = internal::WoodburyPrecision::read(j, W, log_det, structure);
    } else if (form == "dense") {
      needs(structure.kind == Kind::kFull || structure.kind == Kind::kLastLayer, "\"full\" or \"last-layer\"");
      if (structure.kind == Kind::kLastLayer) {
        q.precision = internal::LastLayerPrecision::read(j, W, log_det);
      } else {
        q.precision = internal::DensePrecision::read(j, W, log_det);
      }
    } else {
      throw Error(
          ErrorKind::kInvalidInput,
          "posterior 'form' must be \"dense\", \"woodbury\", \"diagonal\" or \"kronecker\", got \"" + form + "\"");
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
  Eigen::MatrixXd L = llt.matrixL();
  const double log_det = 2.0 * L.diagonal().array().log().sum();
  return {.mean = w, .precision = std::make_shared<internal::DensePrecision>(std::move(L), log_det)};
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
    throw Error(ErrorKind::kInvalidArgument,
                "hessian_structure " + to_string(structure) +
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
    case HessianStructureKind::kDiagonal:
      return internal::diagonal_laplace(posterior, w);
    case HessianStructureKind::kLastLayer:
      return internal::last_layer_laplace(posterior, w);
    case HessianStructureKind::kKronecker:
      return internal::kronecker_laplace(posterior, w);
    case HessianStructureKind::kLowRank:
      return internal::lowrank_laplace(posterior, w, structure.rank);
    case HessianStructureKind::kFull:
      break;
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
         0.5 * q.log_det_precision();
}

double symmetry_log_factor(const Network& network) { return network.symmetry_log_factor(); }

}  // namespace occam
