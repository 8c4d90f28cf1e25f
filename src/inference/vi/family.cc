// family.cc — the Gaussian variational families and their closed-form pieces.
//
// Each family is a map λ ↦ (m, V) on unconstrained λ, with the reparameterisation w = m + T(λ)v
// (T = L, diag σ or [B, D]) and closed forms for log|V| and diag V. Gradients are written out by
// hand for each family (no autodiff): the derivations are in the comments next to the code.

#include <Eigen/Cholesky>
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numbers>

#include "occam/status.h"
#include "occam/vi.h"

namespace occam {

std::string VariationalFamily::name() const {
  switch (kind) {
    case FamilyKind::kFullRank:
      return "fullrank";
    case FamilyKind::kMeanField:
      return "meanfield";
    case FamilyKind::kLowRank:
      return "lowrank:" + std::to_string(rank);
  }
  return "?";
}

namespace {

// B is W × R: a rank above W adds nothing (BBᵀ has rank at most W) and R·W must stay a size.
void require_rank(Index rank, Index W, ErrorKind kind) {
  if (rank < 1 || rank > std::max<Index>(W, 1)) {
    throw Error(kind, "low-rank family: family.rank = " + std::to_string(rank) + " must lie in 1.." +
                          std::to_string(std::max<Index>(W, 1)) + " (the number of weights)");
  }
}

}  // namespace

VariationalFamily parse_variational_family(std::string_view text) {
  if (text == "fullrank" || text == "full-rank") return {FamilyKind::kFullRank, 0};
  if (text == "meanfield" || text == "mean-field") return {FamilyKind::kMeanField, 0};
  if (text.starts_with("lowrank:")) {
    const std::string rank(text.substr(8));
    std::size_t used = 0;
    long long r = 0;
    try {
      r = std::stoll(rank, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == rank.size() && used > 0 && r >= 1) return {FamilyKind::kLowRank, static_cast<Index>(r)};
  }
  throw Error(ErrorKind::kInvalidArgument,
              "family must be 'fullrank', 'meanfield' or 'lowrank:R' with R a positive integer, got '" +
                  std::string(text) + "'");
}

GaussianVariational::GaussianVariational(VariationalFamily family, const Eigen::VectorXd& mean, double initial_std,
                                         Rng* rng)
    : family_(family), mean_(mean) {
  const Index W = mean.size();
  if (!(initial_std > 0.0) || !std::isfinite(initial_std)) {
    throw Error(ErrorKind::kInvalidArgument, "variational family: the initial standard deviation must be positive");
  }
  switch (family.kind) {
    case FamilyKind::kFullRank:
      L_ = initial_std * Eigen::MatrixXd::Identity(W, W);
      break;
    case FamilyKind::kMeanField:
      log_sd_ = Eigen::VectorXd::Constant(W, std::log(initial_std));
      break;
    case FamilyKind::kLowRank: {
      require_rank(family.rank, W, ErrorKind::kInvalidArgument);
      if (rng == nullptr)
        throw Error(ErrorKind::kInvalidArgument, "low-rank family: an initial draw of B needs an Rng");
      log_sd_ = Eigen::VectorXd::Constant(W, std::log(initial_std));
      // B = 0 is a stationary point of E_q (every term's B-gradient vanishes there in expectation),
      // so B starts as a small random matrix.
      B_.resize(W, family.rank);
      for (Index r = 0; r < family.rank; ++r) B_.col(r) = 0.1 * initial_std * rng->normal_vector(W);
      break;
    }
  }
}

GaussianVariational GaussianVariational::from_laplace(VariationalFamily family, const LaplaceApproximation& laplace,
                                                      Rng* rng) {
  GaussianVariational q(family, laplace.mean, 1.0, rng);
  const Eigen::VectorXd precision_diagonal = laplace.precision_diagonal();
  switch (family.kind) {
    case FamilyKind::kFullRank:
      // Not A⁻¹ itself: a Gauss–Newton Laplace covariance is wide along directions where the
      // network is nonlinear, and draws from it through the network fit the data badly (Immer,
      // Korzepa & Bauer 2021). The diagonal 1/A_ii is narrower in every direction, a safe start.
      q.L_ = (-0.5 * precision_diagonal.array().log()).exp().matrix().asDiagonal();
      break;
    case FamilyKind::kMeanField:
    case FamilyKind::kLowRank:
      q.log_sd_ = -0.5 * precision_diagonal.array().log();
      if (family.kind == FamilyKind::kLowRank) {
        for (Index r = 0; r < family.rank; ++r) {
          q.B_.col(r) = 0.1 * q.log_sd_.array().exp().matrix().cwiseProduct(rng->normal_vector(q.dim()));
        }
      }
      break;
  }
  return q;
}

Index GaussianVariational::num_params() const {
  const Index W = dim();
  switch (family_.kind) {
    case FamilyKind::kFullRank:
      return W + W * (W + 1) / 2;
    case FamilyKind::kMeanField:
      return 2 * W;
    case FamilyKind::kLowRank:
      return W + W * family_.rank + W;
  }
  return 0;
}

Index GaussianVariational::noise_dim() const {
  return family_.kind == FamilyKind::kLowRank ? family_.rank + dim() : dim();
}

Eigen::VectorXd GaussianVariational::params() const {
  const Index W = dim();
  Eigen::VectorXd lambda(num_params());
  lambda.head(W) = mean_;
  switch (family_.kind) {
    case FamilyKind::kFullRank: {
      Index k = W;
      for (Index j = 0; j < W; ++j) {
        lambda[k++] = std::log(L_(j, j));
        for (Index i = j + 1; i < W; ++i) lambda[k++] = L_(i, j);
      }
      break;
    }
    case FamilyKind::kMeanField:
      lambda.tail(W) = log_sd_;
      break;
    case FamilyKind::kLowRank:
      lambda.segment(W, B_.size()) = Eigen::Map<const Eigen::VectorXd>(B_.data(), B_.size());
      lambda.tail(W) = log_sd_;
      break;
  }
  return lambda;
}

void GaussianVariational::set_params(const Eigen::Ref<const Eigen::VectorXd>& lambda) {
  const Index W = dim();
  if (lambda.size() != num_params()) {
    throw Error(ErrorKind::kInvalidArgument, "variational family: expected " + std::to_string(num_params()) +
                                                 " parameters, got " + std::to_string(lambda.size()));
  }
  mean_ = lambda.head(W);
  switch (family_.kind) {
    case FamilyKind::kFullRank: {
      Index k = W;
      for (Index j = 0; j < W; ++j) {
        L_(j, j) = std::exp(lambda[k++]);
        for (Index i = j + 1; i < W; ++i) L_(i, j) = lambda[k++];
      }
      break;
    }
    case FamilyKind::kMeanField:
      log_sd_ = lambda.tail(W);
      break;
    case FamilyKind::kLowRank:
      B_ = Eigen::Map<const Eigen::MatrixXd>(lambda.data() + W, W, family_.rank);
      log_sd_ = lambda.tail(W);
      break;
  }
}

Eigen::VectorXd GaussianVariational::transform(const Eigen::Ref<const Eigen::VectorXd>& v) const {
  const Index W = dim();
  switch (family_.kind) {
    case FamilyKind::kFullRank:
      return mean_ + L_.triangularView<Eigen::Lower>() * v;
    case FamilyKind::kMeanField:
      return mean_ + log_sd_.array().exp().matrix().cwiseProduct(v);
    case FamilyKind::kLowRank:
      return mean_ + B_ * v.head(family_.rank) + log_sd_.array().exp().matrix().cwiseProduct(v.tail(W));
  }
  return mean_;
}

Eigen::VectorXd GaussianVariational::sample(Rng& rng) const { return transform(rng.normal_vector(noise_dim())); }

void GaussianVariational::add_transform_gradient(const Eigen::MatrixXd& noise, const Eigen::MatrixXd& g_w,
                                                 Eigen::VectorXd* grad) const {
  // For one draw, w = m + T v and ∂(gᵀw)/∂m = g, ∂(gᵀw)/∂T = g vᵀ; a log-stored scale t = e^s
  // adds the factor t (∂t/∂s = t). Summing over draws, Σ_s g_s v_sᵀ = G Nᵀ is one matrix product.
  const Index W = dim();
  grad->head(W) += g_w.rowwise().sum();
  switch (family_.kind) {
    case FamilyKind::kFullRank: {
      const Eigen::MatrixXd outer = g_w * noise.transpose();
      Index k = W;
      for (Index j = 0; j < W; ++j) {
        (*grad)[k++] += outer(j, j) * L_(j, j);
        grad->segment(k, W - j - 1) += outer.col(j).tail(W - j - 1);
        k += W - j - 1;
      }
      break;
    }
    case FamilyKind::kMeanField:
      grad->tail(W).array() += g_w.cwiseProduct(noise).rowwise().sum().array() * log_sd_.array().exp();
      break;
    case FamilyKind::kLowRank: {
      const Index R = family_.rank;
      const Eigen::MatrixXd outer = g_w * noise.topRows(R).transpose();  // W × R
      grad->segment(W, W * R) += Eigen::Map<const Eigen::VectorXd>(outer.data(), W * R);
      grad->tail(W).array() += g_w.cwiseProduct(noise.bottomRows(W)).rowwise().sum().array() * log_sd_.array().exp();
      break;
    }
  }
}

double GaussianVariational::entropy(Eigen::VectorXd* grad) const {
  // H[N(m, V)] = (W/2)(1 + log 2π) + ½ log|V|.
  const Index W = dim();
  const double constant = 0.5 * static_cast<double>(W) * (1.0 + std::log(2.0 * std::numbers::pi));
  switch (family_.kind) {
    case FamilyKind::kFullRank: {
      // ½ log|LLᵀ| = Σ_j log L_jj = Σ_j s_j: gradient 1 on each log-diagonal entry.
      double half_log_det = 0.0;
      Index k = W;
      for (Index j = 0; j < W; ++j) {
        half_log_det += std::log(L_(j, j));
        if (grad != nullptr) (*grad)[k] += 1.0;
        k += W - j;
      }
      return constant + half_log_det;
    }
    case FamilyKind::kMeanField:
      if (grad != nullptr) grad->tail(W).array() += 1.0;
      return constant + log_sd_.sum();
    case FamilyKind::kLowRank: {
      // V = BBᵀ + D², D = diag(e^d). Matrix determinant lemma: log|V| = 2Σd + log|C| with
      // C = I_R + BᵀD⁻²B. Woodbury gives V⁻¹B = D⁻²BC⁻¹, so ∂(½ log|V|)/∂B = V⁻¹B = D⁻²BC⁻¹ and
      // ∂(½ log|V|)/∂d_i = e^{2d_i}(V⁻¹)_ii = 1 − e^{−2d_i} b_iᵀC⁻¹b_i (b_i the i-th row of B).
      const Index R = family_.rank;
      const Eigen::VectorXd inv_d2 = (-2.0 * log_sd_).array().exp();
      const Eigen::MatrixXd K = inv_d2.asDiagonal() * B_;  // D⁻²B
      Eigen::MatrixXd C = B_.transpose() * K;
      C.diagonal().array() += 1.0;
      const Eigen::LLT<Eigen::MatrixXd> llt(C);
      const double half_log_det_C = llt.matrixLLT().diagonal().array().log().sum();
      if (grad != nullptr) {
        const Eigen::MatrixXd KCinv = llt.solve(K.transpose()).transpose();  // D⁻²BC⁻¹, W × R
        grad->segment(W, W * R) += Eigen::Map<const Eigen::VectorXd>(KCinv.data(), W * R);
        grad->tail(W).array() += 1.0 - KCinv.cwiseProduct(B_).rowwise().sum().array();
      }
      return constant + log_sd_.sum() + half_log_det_C;
    }
  }
  return constant;
}

Eigen::VectorXd GaussianVariational::variances() const {
  switch (family_.kind) {
    case FamilyKind::kFullRank:
      return L_.rowwise().squaredNorm();  // L is zero above the diagonal
    case FamilyKind::kMeanField:
      return (2.0 * log_sd_).array().exp();
    case FamilyKind::kLowRank:
      return B_.rowwise().squaredNorm() + (2.0 * log_sd_).array().exp().matrix();
  }
  return {};
}

void GaussianVariational::add_variance_gradient(const Eigen::VectorXd& c, Eigen::VectorXd* grad) const {
  // V_ii = Σ_j T_ij² for every family, so ∂(Σ_i c_i V_ii)/∂T_ij = 2c_i T_ij; a log-stored
  // diagonal scale t = e^s gives 2c_i t².
  const Index W = dim();
  switch (family_.kind) {
    case FamilyKind::kFullRank: {
      Index k = W;
      for (Index j = 0; j < W; ++j) {
        (*grad)[k++] += 2.0 * c[j] * L_(j, j) * L_(j, j);
        grad->segment(k, W - j - 1).array() += 2.0 * c.tail(W - j - 1).array() * L_.col(j).tail(W - j - 1).array();
        k += W - j - 1;
      }
      break;
    }
    case FamilyKind::kMeanField:
      grad->tail(W).array() += 2.0 * c.array() * (2.0 * log_sd_).array().exp();
      break;
    case FamilyKind::kLowRank: {
      const Eigen::MatrixXd d = 2.0 * c.asDiagonal() * B_;
      grad->segment(W, B_.size()) += Eigen::Map<const Eigen::VectorXd>(d.data(), d.size());
      grad->tail(W).array() += 2.0 * c.array() * (2.0 * log_sd_).array().exp();
      break;
    }
  }
}

Eigen::VectorXd GaussianVariational::quadratic_form(const Eigen::MatrixXd& G) const {
  switch (family_.kind) {
    case FamilyKind::kFullRank:
      return (L_.triangularView<Eigen::Lower>().transpose() * G).colwise().squaredNorm().transpose();
    case FamilyKind::kMeanField:
      return ((2.0 * log_sd_).array().exp().matrix().asDiagonal() * G.cwiseAbs2()).colwise().sum().transpose();
    case FamilyKind::kLowRank:
      return (B_.transpose() * G).colwise().squaredNorm().transpose() +
             ((2.0 * log_sd_).array().exp().matrix().asDiagonal() * G.cwiseAbs2()).colwise().sum().transpose();
  }
  return {};
}

Eigen::MatrixXd GaussianVariational::factor_transpose(const Eigen::MatrixXd& G) const {
  switch (family_.kind) {
    case FamilyKind::kFullRank:
      return L_.triangularView<Eigen::Lower>().transpose() * G;
    case FamilyKind::kMeanField:
      return log_sd_.array().exp().matrix().asDiagonal() * G;
    case FamilyKind::kLowRank: {
      Eigen::MatrixXd Z(B_.cols() + G.rows(), G.cols());
      Z.topRows(B_.cols()) = B_.transpose() * G;
      Z.bottomRows(G.rows()) = log_sd_.array().exp().matrix().asDiagonal() * G;
      return Z;
    }
  }
  return {};
}

Eigen::MatrixXd GaussianVariational::covariance() const {
  switch (family_.kind) {
    case FamilyKind::kFullRank: {
      const Eigen::MatrixXd L = L_.triangularView<Eigen::Lower>();
      return L * L.transpose();
    }
    case FamilyKind::kMeanField:
      return (2.0 * log_sd_).array().exp().matrix().asDiagonal();
    case FamilyKind::kLowRank: {
      Eigen::MatrixXd V = B_ * B_.transpose();
      V.diagonal() += (2.0 * log_sd_).array().exp().matrix();
      return V;
    }
  }
  return {};
}

nlohmann::json GaussianVariational::to_json() const {
  const Index W = dim();
  nlohmann::json j = {{"family", family_.name()}, {"mean", std::vector<double>(mean_.data(), mean_.data() + W)}};
  switch (family_.kind) {
    case FamilyKind::kFullRank: {
      std::vector<double> packed;
      packed.reserve(static_cast<std::size_t>(W * (W + 1) / 2));
      for (Index c = 0; c < W; ++c) {
        for (Index r = c; r < W; ++r) packed.push_back(L_(r, c));
      }
      j["covariance_cholesky_lower_packed"] = packed;
      break;
    }
    case FamilyKind::kMeanField:
      j["log_sd"] = std::vector<double>(log_sd_.data(), log_sd_.data() + W);
      break;
    case FamilyKind::kLowRank:
      j["factor_column_major"] = std::vector<double>(B_.data(), B_.data() + B_.size());
      j["log_diagonal_sd"] = std::vector<double>(log_sd_.data(), log_sd_.data() + W);
      break;
  }
  return j;
}

GaussianVariational GaussianVariational::from_json(const nlohmann::json& j) {
  GaussianVariational q;
  try {
    q.family_ = parse_variational_family(j.at("family").get<std::string>());
    const auto mean = j.at("mean").get<std::vector<double>>();
    const auto W = static_cast<Index>(mean.size());
    q.mean_ = Eigen::Map<const Eigen::VectorXd>(mean.data(), W);
    const auto expect = [](const std::vector<double>& v, Index n, const char* what) {
      if (static_cast<Index>(v.size()) != n) {
        throw Error(ErrorKind::kInvalidInput,
                    std::string(what) + " has " + std::to_string(v.size()) + " entries, expected " + std::to_string(n));
      }
      for (double x : v) {
        if (!std::isfinite(x)) throw Error(ErrorKind::kInvalidInput, std::string(what) + " has a non-finite entry");
      }
    };
    expect(mean, W, "mean");
    switch (q.family_.kind) {
      case FamilyKind::kFullRank: {
        const auto packed = j.at("covariance_cholesky_lower_packed").get<std::vector<double>>();
        expect(packed, W * (W + 1) / 2, "covariance_cholesky_lower_packed");
        q.L_ = Eigen::MatrixXd::Zero(W, W);
        std::size_t k = 0;
        for (Index c = 0; c < W; ++c) {
          for (Index r = c; r < W; ++r) q.L_(r, c) = packed[k++];
        }
        if (!(q.L_.diagonal().array() > 0.0).all()) {
          throw Error(ErrorKind::kInvalidInput, "covariance factor has a non-positive diagonal entry");
        }
        break;
      }
      case FamilyKind::kMeanField: {
        const auto s = j.at("log_sd").get<std::vector<double>>();
        expect(s, W, "log_sd");
        q.log_sd_ = Eigen::Map<const Eigen::VectorXd>(s.data(), W);
        break;
      }
      case FamilyKind::kLowRank: {
        require_rank(q.family_.rank, W, ErrorKind::kInvalidInput);  // before W·R is formed
        const auto b = j.at("factor_column_major").get<std::vector<double>>();
        const auto s = j.at("log_diagonal_sd").get<std::vector<double>>();
        expect(b, W * q.family_.rank, "factor_column_major");
        expect(s, W, "log_diagonal_sd");
        q.B_ = Eigen::Map<const Eigen::MatrixXd>(b.data(), W, q.family_.rank);
        q.log_sd_ = Eigen::Map<const Eigen::VectorXd>(s.data(), W);
        break;
      }
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::kInvalidInput, std::string("variational posterior is malformed: ") + e.what());
  } catch (const Error& e) {
    throw Error(ErrorKind::kInvalidInput, std::string("variational posterior is invalid: ") + e.what());
  }
  return q;
}

}  // namespace occam
