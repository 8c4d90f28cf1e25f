#include "occam/posterior.h"

#include <algorithm>
#include <cmath>

#include "inference/curvature/curvature_kernels.h"
#include "model/log_likelihood_loss.h"
#include "model/output_hessian.h"
#include "occam/status.h"
#include "occam/types.h"
#include "core/parallel/fixed_order_sum.h"

namespace occam {
namespace {

// Rows of X handled at once when the data Hessian is accumulated, so that the Jacobian block
// (rows·K × W doubles) stays small whatever m is.
constexpr Index kHessianBlockRows = 2048;

using internal::LogLikelihoodLoss;

}  // namespace

HessianKind parse_hessian_kind(std::string_view name) { return enum_names<HessianKind>().parse(name); }

CurvatureForm parse_curvature_form(std::string_view name) { return enum_names<CurvatureForm>().parse(name); }

const char* to_string(CurvatureForm form) { return enum_names<CurvatureForm>().name(form); }

Posterior::Posterior(std::unique_ptr<Network> network, std::unique_ptr<Likelihood> likelihood, Prior prior,
                     Eigen::MatrixXd X, Eigen::MatrixXd Y, DataShard shard)
    : network_(std::move(network)),
      likelihood_(std::move(likelihood)),
      prior_(std::move(prior)),
      X_(std::move(X)),
      Y_(std::move(Y)),
      shard_(shard) {
  if (!network_ || !likelihood_)
    throw Error(ErrorKind::kInvalidArgument, "posterior: network and likelihood are required");
  if (X_.rows() != Y_.rows()) {
    throw Error(ErrorKind::kInvalidArgument, "posterior: " + std::to_string(X_.rows()) + " input rows but " +
                                                 std::to_string(Y_.rows()) + " target rows");
  }
  num_rows_ = shard_.num_rows > 0 ? shard_.num_rows : X_.rows();
  if (num_rows_ == 0) throw Error(ErrorKind::kInvalidInput, "posterior: the data set has no rows");
  const Index B = shard_.block_rows, end = shard_.first_row + X_.rows();
  if (B < 1 || shard_.threads < 1) {
    throw Error(ErrorKind::kInvalidArgument, "posterior: a data shard needs block_rows and threads of at least 1");
  }
  if (shard_.first_row < 0 || shard_.first_row % B != 0 || end > num_rows_ || (end % B != 0 && end != num_rows_)) {
    throw Error(ErrorKind::kInvalidArgument, "posterior: rows [" + std::to_string(shard_.first_row) + ", " +
                                                 std::to_string(end) + ") of " + std::to_string(num_rows_) +
                                                 " are not whole blocks of " + std::to_string(B) + " rows");
  }
  if (!distributed() && X_.rows() != num_rows_) {
    throw Error(ErrorKind::kInvalidArgument, "posterior: one process holds " + std::to_string(X_.rows()) + " of " +
                                                 std::to_string(num_rows_) + " rows; it must hold them all");
  }
  if (X_.cols() != network_->num_inputs()) {
    throw Error(ErrorKind::kInvalidArgument, "posterior: the network takes " + std::to_string(network_->num_inputs()) +
                                                 " inputs but the data have " + std::to_string(X_.cols()));
  }
  if (network_->num_outputs() != likelihood_->num_outputs()) {
    throw Error(ErrorKind::kInvalidArgument, "posterior: the network has " + std::to_string(network_->num_outputs()) +
                                                 " outputs but the " + likelihood_->name() + " likelihood needs " +
                                                 std::to_string(likelihood_->num_outputs()));
  }
  if (prior_.dim() != network_->num_params()) {
    throw Error(ErrorKind::kInvalidArgument, "posterior: the prior covers " + std::to_string(prior_.dim()) +
                                                 " parameters but the network has " +
                                                 std::to_string(network_->num_params()));
  }
  likelihood_->validate_targets(Y_);
}

void Posterior::require_one_process(const std::string& what) const {
  if (distributed()) {
    throw Error(ErrorKind::kInvalidArgument,
                what + " needs all the rows in one process; with the rows spread over " +
                    std::to_string(shard_.communicator->size()) +
                    " processes a posterior gives its value, gradient and Hessian-vector products only");
  }
}

Eigen::VectorXd Posterior::sum_over_rows(const std::function<void(Index, Index, Eigen::VectorXd*)>& term) const {
  const RowBlocks blocks{.num_rows = num_rows_, .block_rows = shard_.block_rows};
  const internal::FixedOrderSum tree(blocks.num_blocks());
  const Index first = shard_.first_row / shard_.block_rows;
  const Index last = X_.rows() == 0 ? first : (shard_.first_row + X_.rows() - 1) / shard_.block_rows + 1;
  const internal::BlockTerm block_term = [&](Index block, Eigen::VectorXd* out) {
    const auto [begin, end] = blocks.rows_of_block(block);
    term(begin - shard_.first_row, end - begin, out);
  };
  static const SerialCommunicator kSerial;
  return tree.sum(shard_.communicator != nullptr ? *shard_.communicator : kSerial, first, last, block_term,
                  shard_.threads);
}

bool Posterior::evaluate(const Eigen::Ref<const Eigen::VectorXd>& w, double* log_p, Eigen::VectorXd* grad) const {
  // Each block's rows are copied to a matrix of their own, so that a block's term has the same bits
  // whichever process holds it (the same operands, the same layout).
  const Index W = dim();
  const Eigen::VectorXd data = sum_over_rows([&](Index start, Index rows, Eigen::VectorXd* out) {
    const Eigen::MatrixXd Xb = X_.middleRows(start, rows), Yb = Y_.middleRows(start, rows);
    out->resize(grad != nullptr ? 1 + W : 1);
    if (grad != nullptr) {
      const LogLikelihoodLoss loss(*likelihood_, Yb);
      Eigen::VectorXd g;
      (*out)(0) = network_->value_gradient(w, Xb, loss, &g);
      out->tail(W) = g;
    } else {
      Eigen::MatrixXd F;
      network_->forward(w, Xb, &F);
      (*out)(0) = likelihood_->log_likelihood(F, Yb, nullptr);
    }
  });
  double value = data(0);
  if (grad != nullptr) {
    *grad = data.tail(W);
    Eigen::VectorXd prior_grad;
    value += prior_.log_density(w, &prior_grad);
    *grad += prior_grad;
  } else {
    value += prior_.log_density(w, nullptr);
  }
  *log_p = value;
  return std::isfinite(value) && (grad == nullptr || grad->allFinite());
}

bool Posterior::evaluate_batch(const Eigen::Ref<const Eigen::VectorXd>& w, const std::vector<Index>& rows,
                               double* log_p, Eigen::VectorXd* grad) const {
  require_one_process("minibatch evaluation");
  if (rows.empty()) throw Error(ErrorKind::kInvalidArgument, "posterior: empty minibatch");
  const Eigen::MatrixXd Xb = X_(rows, Eigen::all);
  const Eigen::MatrixXd Yb = Y_(rows, Eigen::all);
  const double scale = static_cast<double>(num_data()) / static_cast<double>(rows.size());
  const LogLikelihoodLoss loss(*likelihood_, Yb);
  Eigen::VectorXd prior_grad;
  double value;
  if (grad != nullptr) {
    value = scale * network_->value_gradient(w, Xb, loss, grad);
    *grad *= scale;
    value += prior_.log_density(w, &prior_grad);
    *grad += prior_grad;
  } else {
    Eigen::MatrixXd F;
    network_->forward(w, Xb, &F);
    value = scale * likelihood_->log_likelihood(F, Yb, nullptr) + prior_.log_density(w, nullptr);
  }
  *log_p = value;
  return std::isfinite(value) && (grad == nullptr || grad->allFinite());
}

double Posterior::log_likelihood(const Eigen::Ref<const Eigen::VectorXd>& w) const {
  return sum_over_rows([&](Index start, Index rows, Eigen::VectorXd* out) {
    const Eigen::MatrixXd Xb = X_.middleRows(start, rows), Yb = Y_.middleRows(start, rows);
    Eigen::MatrixXd F;
    network_->forward(w, Xb, &F);
    *out = Eigen::VectorXd::Constant(1, likelihood_->log_likelihood(F, Yb, nullptr));
  })(0);
}

Eigen::MatrixXd Posterior::data_hessian(const Eigen::Ref<const Eigen::VectorXd>& w, HessianKind kind) const {
  require_one_process("the data Hessian in full");
  Eigen::MatrixXd H;
  internal::accumulate_gauss_newton_upper(*this, w, kHessianBlockRows, &H);
  H.triangularView<Eigen::StrictlyLower>() = H.transpose();
  // The exact Hessian adds Σ_n Σ_k g_nk ∇²f_k(x_n), g = ∂(−log p)/∂f (Bishop 1995, §4.10).
  if (kind == HessianKind::kExact) internal::add_output_curvature(*this, w, kHessianBlockRows, &H);
  return H;
}

Eigen::VectorXd Posterior::data_hessian_vp(const Eigen::Ref<const Eigen::VectorXd>& w,
                                           const Eigen::Ref<const Eigen::VectorXd>& v, HessianKind kind) const {
  return sum_over_rows([&](Index start, Index rows, Eigen::VectorXd* out) {
    const Eigen::MatrixXd Xb = X_.middleRows(start, rows), Yb = Y_.middleRows(start, rows);
    Eigen::MatrixXd F, Jv;
    OutputDerivatives d;
    network_->forward(w, Xb, &F);
    likelihood_->neg_log_derivatives(F, Yb, &d);
    network_->jvp(w, Xb, v, &Jv);
    network_->backward(w, Xb, internal::apply_output_hessian(d.hessian, Jv), out);
    if (kind == HessianKind::kExact) {
      Eigen::VectorXd curvature;
      network_->curvature_vp(w, Xb, d.gradient, v, &curvature);
      *out += curvature;
    }
  });
}

}  // namespace occam
