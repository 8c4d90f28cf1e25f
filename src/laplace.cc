#include "occam/laplace.h"

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numbers>

#include "occam/status.h"

namespace occam {

Eigen::VectorXd LaplaceApproximation::covariance_diagonal() const {
  // diag(A⁻¹) = column norms² of L⁻¹, since A⁻¹ = L⁻ᵀL⁻¹.
  const Eigen::Index W = dim();
  Eigen::MatrixXd L_inv = Eigen::MatrixXd::Identity(W, W);
  precision_cholesky.triangularView<Eigen::Lower>().solveInPlace(L_inv);
  return L_inv.colwise().squaredNorm().transpose();
}

Eigen::VectorXd LaplaceApproximation::quadratic_form_inverse(const Eigen::MatrixXd& G) const {
  // gᵀA⁻¹g = ‖L⁻¹g‖²: one triangular solve, never an inverse.
  const Eigen::MatrixXd Z = precision_cholesky.triangularView<Eigen::Lower>().solve(G);
  return Z.colwise().squaredNorm().transpose();
}

Eigen::VectorXd LaplaceApproximation::sample(Rng& rng) const {
  Eigen::VectorXd z = rng.normal_vector(dim());
  precision_cholesky.triangularView<Eigen::Lower>().transpose().solveInPlace(z);  // L⁻ᵀz ~ N(0, A⁻¹)
  return mean + z;
}

nlohmann::json LaplaceApproximation::to_json() const {
  const Eigen::Index W = dim();
  std::vector<double> packed;
  packed.reserve(static_cast<std::size_t>(W * (W + 1) / 2));
  for (Eigen::Index j = 0; j < W; ++j) {
    for (Eigen::Index i = j; i < W; ++i) packed.push_back(precision_cholesky(i, j));
  }
  return {{"mean", std::vector<double>(mean.data(), mean.data() + W)},
          {"precision_cholesky_lower_packed", packed},
          {"log_det_precision", log_det_precision},
          {"clipped_eigenvalues", clipped_eigenvalues}};
}

LaplaceApproximation LaplaceApproximation::from_json(const nlohmann::json& j) {
  LaplaceApproximation q;
  try {
    const auto mean = j.at("mean").get<std::vector<double>>();
    const auto packed = j.at("precision_cholesky_lower_packed").get<std::vector<double>>();
    const auto W = static_cast<Eigen::Index>(mean.size());
    if (static_cast<Eigen::Index>(packed.size()) != W * (W + 1) / 2) {
      throw Error(ErrorKind::kInvalidInput, "posterior factor has " + std::to_string(packed.size()) +
                                                " entries; a lower triangle of order " + std::to_string(W) +
                                                " has " + std::to_string(W * (W + 1) / 2));
    }
    q.mean = Eigen::Map<const Eigen::VectorXd>(mean.data(), W);
    q.precision_cholesky = Eigen::MatrixXd::Zero(W, W);
    std::size_t k = 0;
    for (Eigen::Index c = 0; c < W; ++c) {
      for (Eigen::Index r = c; r < W; ++r) q.precision_cholesky(r, c) = packed[k++];
    }
    if (!(q.precision_cholesky.diagonal().array() > 0.0).all()) {
      throw Error(ErrorKind::kInvalidInput, "posterior factor has a non-positive diagonal entry");
    }
    q.log_det_precision = j.at("log_det_precision").get<double>();
    q.clipped_eigenvalues = j.at("clipped_eigenvalues").get<int>();
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
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(H);
    if (eig.info() != Eigen::Success) throw Error(ErrorKind::kNumerical, "eigendecomposition of the Hessian failed");
    Eigen::VectorXd lambda = eig.eigenvalues();
    for (Eigen::Index i = 0; i < lambda.size(); ++i) {
      if (lambda[i] < 0.0) {
        lambda[i] = 0.0;
        ++count;
      }
    }
    if (count > 0) H = eig.eigenvectors() * lambda.asDiagonal() * eig.eigenvectors().transpose();
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
  int clipped = 0;
  const Eigen::MatrixXd H = positive_data_hessian(posterior, w, kind, &clipped);
  LaplaceApproximation q = laplace_from_hessian(posterior, w, H);
  q.clipped_eigenvalues = clipped;
  return q;
}

double log_evidence(const Posterior& posterior, const LaplaceApproximation& q) {
  // log ∫ p(D|w) p(w|α) dw ≈ log p(D|w*) + log p(w*|α) + (W/2) log 2π − ½ log|A|  (MacKay 1992a, eq. 10).
  double log_joint;
  if (!posterior.evaluate(q.mean, &log_joint, nullptr)) {
    throw Error(ErrorKind::kNumerical, "log-evidence: the log density is not finite at w_MAP");
  }
  return log_joint + 0.5 * static_cast<double>(q.dim()) * std::log(2.0 * std::numbers::pi) - 0.5 * q.log_det_precision;
}

double symmetry_log_factor(const Network& network) { return network.symmetry_log_factor(); }

}  // namespace occam
