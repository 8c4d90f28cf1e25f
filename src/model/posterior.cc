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

// One block's (or chunk's) term of a sum over rows: log p(Y | f(X; w)) in out[0] and, with
// `gradient`, its gradient in out[1 … W]. Each block's rows come as matrices of their own, so its
// term has the same bits whichever process or thread computes it (the same operands, the same layout).
void rows_term(const Network& network, const Likelihood& likelihood, const Eigen::Ref<const Eigen::VectorXd>& w,
               const Eigen::MatrixXd& X, const Eigen::MatrixXd& Y, bool gradient, Eigen::VectorXd* out) {
  const Index W = network.num_params();
  out->resize(gradient ? 1 + W : 1);
  if (gradient) {
    Eigen::VectorXd g;
    (*out)(0) = network.value_gradient(w, X, LogLikelihoodLoss(likelihood, Y), &g);
    out->tail(W) = g;
  } else {
    Eigen::MatrixXd F;
    network.forward(w, X, &F);
    (*out)(0) = likelihood.log_likelihood(F, Y, nullptr);
  }
}

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
  const Index W = dim();
  const Eigen::VectorXd data = sum_over_rows([&](Index start, Index rows, Eigen::VectorXd* out) {
    rows_term(*network_, *likelihood_, w, X_.middleRows(start, rows), Y_.middleRows(start, rows), grad != nullptr, out);
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
  if (rows.empty()) throw Error(ErrorKind::kInvalidArgument, "posterior: empty minibatch");
  const double scale = static_cast<double>(num_data()) / static_cast<double>(rows.size());
  double value;
  const bool finite = batch_log_likelihood(w, rows, &value, grad);
  value *= scale;
  if (grad != nullptr) {
    *grad *= scale;
    Eigen::VectorXd prior_grad;
    value += prior_.log_density(w, &prior_grad);
    *grad += prior_grad;
  } else {
    value += prior_.log_density(w, nullptr);
  }
  *log_p = value;
  return finite && std::isfinite(value) && (grad == nullptr || grad->allFinite());
}

namespace {

// The inputs and targets of a minibatch's rows, in batch order, on every process of the posterior.
// Spread over processes, each contributes the rows of the batch it holds (with their places in
// the batch) and an all-gather gives every process the whole batch: a few kilobytes, since the
// rows are global indices and every process draws the same batch.
void batch_rows(const Posterior& p, const std::vector<Index>& rows, Eigen::MatrixXd* X, Eigen::MatrixXd* Y) {
  if (!p.distributed()) {
    for (const Index n : rows) {
      if (n < 0 || n >= p.num_data()) {
        throw Error(ErrorKind::kInvalidArgument, "minibatch: row " + std::to_string(n) + " is not a row of the " +
                                                     std::to_string(p.num_data()) + " rows of the data");
      }
    }
    *X = p.X()(rows, Eigen::all);
    *Y = p.Y()(rows, Eigen::all);
    return;
  }
  const Index D = p.X().cols(), T = p.Y().cols(), first = p.shard().first_row, local = p.X().rows();
  std::vector<double> mine;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Index n = rows[i] - first;
    if (n < 0 || n >= local) continue;
    mine.push_back(static_cast<double>(i));
    for (Index j = 0; j < D; ++j) mine.push_back(p.X()(n, j));
    for (Index j = 0; j < T; ++j) mine.push_back(p.Y()(n, j));
  }
  const std::vector<double> all = p.shard().communicator->allgather(mine);
  const auto b = static_cast<Index>(rows.size());
  X->resize(b, D);
  Y->resize(b, T);
  std::vector<char> seen(rows.size(), 0);
  const auto stride = static_cast<std::size_t>(1 + D + T);
  if (all.size() % stride != 0) throw Error(ErrorKind::kIo, "minibatch: a process sent a truncated row");
  for (std::size_t k = 0; k < all.size(); k += stride) {
    const double place = all[k];
    if (!(place >= 0.0 && place < static_cast<double>(b)) || seen[static_cast<std::size_t>(place)]) {
      throw Error(ErrorKind::kInvalidArgument, "minibatch: the processes' shards overlap (DataShard.first_row)");
    }
    const auto i = static_cast<Index>(place);
    seen[static_cast<std::size_t>(i)] = 1;
    for (Index j = 0; j < D; ++j) (*X)(i, j) = all[k + 1 + static_cast<std::size_t>(j)];
    for (Index j = 0; j < T; ++j) (*Y)(i, j) = all[k + 1 + static_cast<std::size_t>(D + j)];
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!seen[i]) {
      throw Error(ErrorKind::kInvalidArgument, "minibatch: no process holds row " + std::to_string(rows[i]) +
                                                   " of the data (the shards do not cover DataShard.num_rows rows)");
    }
  }
}

}  // namespace

bool Posterior::batch_log_likelihood(const Eigen::Ref<const Eigen::VectorXd>& w, const std::vector<Index>& rows,
                                     double* value, Eigen::VectorXd* grad) const {
  if (rows.empty()) throw Error(ErrorKind::kInvalidArgument, "posterior: empty minibatch");
  Eigen::MatrixXd Xb, Yb;
  batch_rows(*this, rows, &Xb, &Yb);
  const RowBlocks chunks{.num_rows = static_cast<Index>(rows.size()), .block_rows = kBatchChunkRows};
  const internal::FixedOrderSum tree(chunks.num_blocks());
  static const SerialCommunicator kSerial;
  const Communicator& comm = distributed() ? *shard_.communicator : kSerial;
  const auto [first, last] = chunks.blocks_of(comm.rank(), comm.size());
  const Index W = dim();
  const internal::BlockTerm term = [&](Index chunk, Eigen::VectorXd* out) {
    const auto [begin, end] = chunks.rows_of_block(chunk);
    rows_term(*network_, *likelihood_, w, Xb.middleRows(begin, end - begin), Yb.middleRows(begin, end - begin),
              grad != nullptr, out);
  };
  const Eigen::VectorXd total = tree.sum(comm, first, last, term, std::max(1, shard_.threads));
  *value = total(0);
  if (grad != nullptr) *grad = total.tail(W);
  return std::isfinite(*value) && (grad == nullptr || grad->allFinite());
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
