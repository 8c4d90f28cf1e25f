// curvature_kernels.cc — weighted Jacobians, blocked Gauss–Newton accumulation, the capacitance matrix.

#include "inference/curvature/curvature_kernels.h"

#include <Eigen/Eigenvalues>
#include <algorithm>

#include "core/linalg.h"

namespace occam::internal {

Network::SeedsAt output_hessian_root_seeds(const Likelihood& likelihood, const Eigen::MatrixXd& Y, bool* psd) {
  return [&likelihood, &Y, psd](const Eigen::MatrixXd& F, Eigen::MatrixXd* seeds) {
    OutputDerivatives d;
    likelihood.neg_log_derivatives(F, Y, &d);
    const Index K = F.cols();
    *psd = output_hessian_root(d.hessian, F.rows(), K, seeds);
    if (!*psd) seeds->setZero(F.rows(), K * K);
  };
}

void jacobian_block(const Posterior& posterior, const Eigen::Ref<const Eigen::VectorXd>& w, Index start, Index rows,
                    Eigen::MatrixXd* J, OutputDerivatives* d) {
  const auto Xb = posterior.X().middleRows(start, rows);
  const Eigen::MatrixXd Yb = posterior.Y().middleRows(start, rows);
  Eigen::MatrixXd F;
  posterior.network().forward(w, Xb, &F);
  posterior.likelihood().neg_log_derivatives(F, Yb, d);
  posterior.network().jacobian(w, Xb, J);
}

bool output_hessian_root(const Eigen::MatrixXd& lambda, Index rows, Index K, Eigen::MatrixXd* R) {
  R->setZero(rows, K * K);  // R_n(k, l) at column k + l·K of row n
  bool diagonal = true;
  for (Index k = 0; k < K && diagonal; ++k) {
    for (Index l = 0; l < K && diagonal; ++l) {
      if (k != l && (lambda.col(k + l * K).array() != 0.0).any()) diagonal = false;
    }
  }
  if (diagonal) {
    for (Index k = 0; k < K; ++k) {
      if (!(lambda.col(k + k * K).array() >= 0.0).all()) return false;
      R->col(k + k * K) = lambda.col(k + k * K).array().sqrt().matrix();
    }
    return true;
  }
  // Λ_n = Q diag(e) Qᵀ, R_n = diag(√e)Qᵀ, e clipped at 0 where rounding leaves a zero eigenvalue
  // (softmax: Λ = diag(p) − ppᵀ is singular) slightly negative.
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(K);
  Eigen::MatrixXd Ln(K, K);
  for (Index n = 0; n < rows; ++n) {
    for (Index l = 0; l < K; ++l)
      for (Index k = 0; k < K; ++k) Ln(k, l) = lambda(n, k + l * K);
    eig.compute(Ln);
    const Eigen::VectorXd e = eig.eigenvalues();
    const double tolerance = 1e-12 * std::max(1.0, e.cwiseAbs().maxCoeff());
    if (eig.info() != Eigen::Success || e.minCoeff() < -tolerance) return false;
    const Eigen::MatrixXd Rn = e.cwiseMax(0.0).cwiseSqrt().asDiagonal() * eig.eigenvectors().transpose();
    for (Index l = 0; l < K; ++l)
      for (Index k = 0; k < K; ++k) (*R)(n, k + l * K) = Rn(k, l);
  }
  return true;
}

bool weight_jacobian_rows(const Eigen::MatrixXd& lambda, Index rows, Index K, Eigen::MatrixXd* J) {
  if (K == 1) {
    if (!(lambda.col(0).array() >= 0.0).all()) return false;
    J->array().colwise() *= lambda.col(0).array().sqrt();
    return true;
  }
  Eigen::MatrixXd R;
  if (!output_hessian_root(lambda, rows, K, &R)) return false;
  // Λ_n diagonal (the heteroscedastic Fisher weight): each output's rows scaled.
  bool diagonal = true;
  for (Index k = 0; k < K && diagonal; ++k) {
    for (Index l = 0; l < K && diagonal; ++l) {
      if (k != l && (R.col(k + l * K).array() != 0.0).any()) diagonal = false;
    }
  }
  if (diagonal) {
    for (Index k = 0; k < K; ++k) J->middleRows(k * rows, rows).array().colwise() *= R.col(k + k * K).array();
    return true;
  }
  // Column by column: column j of J (output-major) is a rows × K matrix G_j, and its rows become
  // G_j[n, ·] R_nᵀ. One column and its copy stay in cache, where a pass over all of J per output
  // pair (K² passes of rows × W) is bound by memory.
  Eigen::MatrixXd original(rows, K);
  for (Index j = 0; j < J->cols(); ++j) {
    Eigen::Map<Eigen::MatrixXd> G(J->col(j).data(), rows, K);
    original = G;
    for (Index k = 0; k < K; ++k) {
      G.col(k) = original.col(0).cwiseProduct(R.col(k));
      for (Index l = 1; l < K; ++l) G.col(k) += original.col(l).cwiseProduct(R.col(k + l * K));
    }
  }
  return true;
}

bool weighted_jacobian(const Posterior& posterior, const Eigen::Ref<const Eigen::VectorXd>& w, Index start, Index rows,
                       Eigen::MatrixXd* Z) {
  OutputDerivatives d;
  jacobian_block(posterior, w, start, rows, Z, &d);
  return weight_jacobian_rows(d.hessian, rows, posterior.network().num_outputs(), Z);
}

void add_output_curvature(const Posterior& posterior, const Eigen::Ref<const Eigen::VectorXd>& w, Index block_rows,
                          Eigen::MatrixXd* M) {
  Eigen::MatrixXd F, curvature;
  OutputDerivatives d;
  for (Index start = 0; start < posterior.num_data(); start += block_rows) {
    const Index rows = std::min(block_rows, posterior.num_data() - start);
    const auto Xb = posterior.X().middleRows(start, rows);
    posterior.network().forward(w, Xb, &F);
    posterior.likelihood().neg_log_derivatives(F, posterior.Y().middleRows(start, rows), &d);
    posterior.network().curvature_matrix(w, Xb, d.gradient, &curvature);
    *M += curvature;
  }
}

void accumulate_gauss_newton_upper(const Posterior& posterior, const Eigen::Ref<const Eigen::VectorXd>& w,
                                   Index block_rows, Eigen::MatrixXd* M, bool from_layers) {
  const Index W = posterior.dim(), m = posterior.num_data(), K = posterior.network().num_outputs();
  if (from_layers && gauss_newton_from_layers_pays(posterior) &&
      accumulate_gauss_newton_from_layers(posterior, w, block_rows, M))
    return;
  M->resize(W, W);
  M->triangularView<Eigen::Upper>().setZero();
  Eigen::MatrixXd J;
  OutputDerivatives d;
  for (Index start = 0; start < m; start += block_rows) {
    const Index rows = std::min(block_rows, m - start);
    jacobian_block(posterior, w, start, rows, &J, &d);
    if (weight_jacobian_rows(d.hessian, rows, K, &J)) {
      // JᵀΛJ = (Λ^½J)ᵀ(Λ^½J): one symmetric rank-k update, half the flops of a product.
      rank_update_upper(J, M);
      continue;
    }
    // A Λ_n with a negative eigenvalue: Σ_{k,l} J_kᵀ diag(Λ_{·,kl}) J_l directly.
    for (Index k = 0; k < K; ++k) {
      for (Index l = 0; l < K; ++l) {
        M->triangularView<Eigen::Upper>() += J.middleRows(k * rows, rows).transpose() *
                                             d.hessian.col(k + l * K).asDiagonal() * J.middleRows(l * rows, rows);
      }
    }
  }
}

void capacitance_lower(const Eigen::MatrixXd& U, Eigen::MatrixXd* K) {
  const Index n = U.rows();
  K->resize(n, n);
  K->triangularView<Eigen::Lower>().setZero();
  K->diagonal().setOnes();
  rank_update_lower(U, K);
}

}  // namespace occam::internal
