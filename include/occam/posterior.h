// posterior.h — Network × Likelihood × Prior on a data set: the log density every engine uses.
//
// log p(w, D | α, β) = log p(D | w, β) + log p(w | α), normalising constants included, so that
// −evaluate() is MacKay's S(w) = α E_W + β E_D plus terms that do not depend on w.
//
//   occam::Posterior post(std::make_unique<occam::Mlp>(1, std::vector<Index>{8}, occam::Activation::kTanh),
//                         std::make_unique<occam::GaussianLikelihood>(10.0), prior, X, Y);
//   double lp; Eigen::VectorXd g; post.evaluate(w, &lp, &g);
#pragma once

#include <Eigen/Core>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "occam/likelihood.h"
#include "occam/log_density.h"
#include "occam/network.h"
#include "occam/parallel.h"
#include "occam/prior.h"

namespace occam {

enum class HessianKind {
  kGgn,    // the Gauss–Newton matrix JᵀΛJ: positive semi-definite, the default
  kExact,  // the exact Hessian JᵀΛJ + Σ_n g_n ∇²f_n (R-operator); may be indefinite
};
HessianKind parse_hessian_kind(std::string_view name);  // "ggn" | "exact"

// How the damped Gauss–Newton system A = H + P + μI is held and factored (Levenberg–Marquardt,
// Newton, the Laplace approximation): the W × W matrix, or — with n = m·K rows of Jacobian and a
// group-diagonal prior — the n × n capacitance matrix of the Woodbury identity.
enum class CurvatureForm {
  kAuto,      // kWoodbury when n < W, the prior is group-diagonal and H is Gauss–Newton; else kDense
  kDense,     // the W × W matrix: m·W² to form, W³/3 to factor
  kWoodbury,  // the n × n matrix I + Λ^½J D⁻¹ JᵀΛ^½: m²·W + m³/3 to factor, nothing W × W
};
CurvatureForm parse_curvature_form(std::string_view name);  // "auto" | "dense" | "woodbury"
const char* to_string(CurvatureForm form);

// Which of the data's rows this process holds, and how the sums over them are formed. Every sum
// over the rows (value, gradient, Hessian-vector product) adds per-block terms along a tree fixed by
// the number of blocks (include/occam/parallel.h), so it has the same bits on one process or many,
// with one thread or several. A posterior spread over several processes answers evaluate(),
// log_likelihood() and data_hessian_vp() — all its processes calling each together — and refuses
// the engines that need all rows in one place (require_one_process()).
// Rows per chunk of a minibatch (Posterior::batch_log_likelihood): the unit of work that processes
// and threads share, fixed so that the sum does not depend on how many there are.
inline constexpr Index kBatchChunkRows = 32;

struct DataShard {
  const Communicator* communicator = nullptr;  // the processes (null: this one alone); must outlive the posterior
  Index num_rows = 0;                          // m over all processes (0: the rows given here, one process)
  Index first_row = 0;                         // this process's first row in the whole data
  Index block_rows = 4096;                     // rows per block: on a block boundary, as RowBlocks deals them
  int threads = 1;                             // threads computing this process's blocks
};

class Posterior final : public LogDensity {
 public:
  // X is m × D, Y is m × T (this process's rows under a DataShard). Throws Error(kInvalidArgument) on
  // inconsistent sizes or a shard not on block boundaries, and Error(kInvalidInput) on targets the
  // likelihood rejects.
  Posterior(std::unique_ptr<Network> network, std::unique_ptr<Likelihood> likelihood, Prior prior, Eigen::MatrixXd X,
            Eigen::MatrixXd Y, DataShard shard = {});

  const Network& network() const { return *network_; }
  const Likelihood& likelihood() const { return *likelihood_; }
  Likelihood& likelihood() { return *likelihood_; }
  const Prior& prior() const { return prior_; }
  Prior& prior() { return prior_; }
  const Eigen::MatrixXd& X() const { return X_; }  // this process's rows
  const Eigen::MatrixXd& Y() const { return Y_; }
  Index num_data() const { return num_rows_; }  // m, over all processes
  const DataShard& shard() const { return shard_; }
  // True when the rows are spread over more than one process.
  bool distributed() const { return shard_.communicator != nullptr && shard_.communicator->size() > 1; }
  // Throws Error(kInvalidArgument) naming `what` when the rows are spread over processes: for the
  // engines that read X() and Y() as the whole data set.
  void require_one_process(const std::string& what) const;

  // LogDensity: log p(D|w) + log p(w|α). Returns false when the value or gradient is not finite.
  Index dim() const override { return network_->num_params(); }
  bool evaluate(const Eigen::Ref<const Eigen::VectorXd>& w, double* log_p, Eigen::VectorXd* grad) const override;

  // The same on a minibatch of rows, the likelihood term scaled by m/|rows| so that it is an
  // unbiased estimate of the full-data value and gradient (batch_log_likelihood below: a collective
  // when the rows are spread over processes).
  bool evaluate_batch(const Eigen::Ref<const Eigen::VectorXd>& w, const std::vector<Index>& rows, double* log_p,
                      Eigen::VectorXd* grad) const;

  // Σ_{n∈rows} log p(y_n | w) and its gradient (grad null: the value alone), rows being distinct
  // indices into the whole data (0 … m − 1) in batch order. The batch is cut into chunks of
  // kBatchChunkRows rows in batch order, whose terms are added along the fixed-order tree over the
  // chunks; spread over processes, every process calls it with the same rows, they all-gather the
  // batch's rows (a few kilobytes) and each computes the chunks RowBlocks deals it, on
  // shard().threads threads. The chunks depend on the batch alone, so the value has the same bits
  // on any number of processes and threads. False when the value or gradient is not finite.
  bool batch_log_likelihood(const Eigen::Ref<const Eigen::VectorXd>& w, const std::vector<Index>& rows, double* value,
                            Eigen::VectorXd* grad) const;

  // log p(D | w) alone.
  double log_likelihood(const Eigen::Ref<const Eigen::VectorXd>& w) const;

  // −∇∇ log p(D | w), W × W: the Gauss–Newton matrix or the exact Hessian. For the Gaussian
  // likelihood this is β∇∇E_D, whose eigenvalues are MacKay's λ_i.
  Eigen::MatrixXd data_hessian(const Eigen::Ref<const Eigen::VectorXd>& w, HessianKind kind) const;

  // −∇∇ log p(D | w) · v, exact (R-operator) or Gauss–Newton, without forming the matrix.
  Eigen::VectorXd data_hessian_vp(const Eigen::Ref<const Eigen::VectorXd>& w,
                                  const Eigen::Ref<const Eigen::VectorXd>& v, HessianKind kind) const;

  // Σ over the blocks of rows (RowBlocks of shard().block_rows, counted from row 0 of the whole
  // data) of term(first local row, rows, out), every term of one size, added along the fixed-order
  // tree (occam/parallel.h) and exchanged between the processes: the same bits on one process or
  // many, with one thread or several. Every process calls it together; term is called from
  // shard().threads threads at once. For sums the methods above do not cover (curvature factors).
  Eigen::VectorXd sum_over_rows(const std::function<void(Index, Index, Eigen::VectorXd*)>& term) const;

 private:
  std::unique_ptr<Network> network_;
  std::unique_ptr<Likelihood> likelihood_;
  Prior prior_;

  Eigen::MatrixXd X_;
  Eigen::MatrixXd Y_;
  DataShard shard_;
  Index num_rows_ = 0;
};

}  // namespace occam
