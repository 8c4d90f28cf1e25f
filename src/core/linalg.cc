// linalg.cc — the dense symmetric kernels on LAPACKE + OpenBLAS (OCCAM_HAVE_LAPACK) or Eigen.

#include "core/linalg.h"

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>
#include <atomic>
#include <mutex>
#include <string>

#include "occam/linear_algebra.h"
#include "occam/status.h"

#ifdef OCCAM_HAVE_LAPACK
#include <cblas.h>
#include <lapacke.h>
#endif

namespace occam {
namespace {

std::atomic<int> requested_threads{1};

#ifdef OCCAM_HAVE_LAPACK
// OpenBLAS starts as many threads as there are cores; occam's default is one. Every kernel sets
// the count it may use first. Only kernels whose bits do not depend on the count get more than
// one: OpenBLAS partitions the output of dsyrk and dtrsm among its threads, each entry summed by
// one thread in the same order, but its dpotrf, dsyevd (and dgemm) change their last bits with
// the thread count (tests/core/linear_algebra_test.cc), so they always run on one.
// Kernels run on occam's own worker threads too (the networks' passes over row blocks, the chains,
// a committee's members), so the count applied is an atomic and is changed under a lock.
enum class Threads { kRequested, kOne };
std::atomic<int> applied_threads{0};
std::mutex applied_threads_mutex;
void apply_threads(Threads which) {
  const int threads = which == Threads::kOne ? 1 : requested_threads.load(std::memory_order_relaxed);
  if (threads == applied_threads.load(std::memory_order_acquire)) return;
  const std::lock_guard<std::mutex> lock(applied_threads_mutex);
  if (threads != applied_threads.load(std::memory_order_relaxed)) {
    openblas_set_num_threads(threads);
    applied_threads.store(threads, std::memory_order_release);
  }
}
#endif

}  // namespace

const char* linear_algebra_backend() {
#ifdef OCCAM_HAVE_LAPACK
  return "openblas";
#else
  return "eigen";
#endif
}

void set_linear_algebra_threads(int threads) {
  if (threads < 1) invalid_option("set_linear_algebra_threads", "threads", threads, "must be at least 1");
  requested_threads.store(threads, std::memory_order_relaxed);
}

int linear_algebra_threads() { return requested_threads.load(std::memory_order_relaxed); }

namespace internal {

#ifdef OCCAM_HAVE_LAPACK
using blas_int = lapack_int;
blas_int as_int(Eigen::Index n) { return static_cast<blas_int>(n); }
#endif

void rank_update_upper(const Eigen::Ref<const Eigen::MatrixXd>& Z, Eigen::MatrixXd* M) {
  if (Z.rows() == 0) return;
#ifdef OCCAM_HAVE_LAPACK
  apply_threads(Threads::kRequested);
  cblas_dsyrk(CblasColMajor, CblasUpper, CblasTrans, as_int(M->rows()), as_int(Z.rows()), 1.0, Z.data(),
              as_int(Z.outerStride()), 1.0, M->data(), as_int(M->outerStride()));
#else
  M->selfadjointView<Eigen::Upper>().rankUpdate(Z.transpose());
#endif
}

void rank_update_lower(const Eigen::Ref<const Eigen::MatrixXd>& U, Eigen::MatrixXd* K, double beta) {
  if (U.cols() == 0) {
    if (beta == 0.0)
      K->triangularView<Eigen::Lower>().setZero();
    else if (beta != 1.0)
      K->triangularView<Eigen::Lower>() *= beta;
    return;
  }
#ifdef OCCAM_HAVE_LAPACK
  apply_threads(Threads::kRequested);
  cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, as_int(K->rows()), as_int(U.cols()), 1.0, U.data(),
              as_int(U.outerStride()), beta, K->data(), as_int(K->outerStride()));
#else
  if (beta == 0.0)
    K->triangularView<Eigen::Lower>().setZero();
  else if (beta != 1.0)
    K->triangularView<Eigen::Lower>() *= beta;
  K->selfadjointView<Eigen::Lower>().rankUpdate(U);
#endif
}

bool cholesky_lower_in_place(Eigen::MatrixXd* A) {
  if (A->rows() == 0) return true;
#ifdef OCCAM_HAVE_LAPACK
  apply_threads(Threads::kOne);
  return LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', as_int(A->rows()), A->data(), as_int(A->outerStride())) == 0;
#else
  Eigen::LLT<Eigen::Ref<Eigen::MatrixXd>, Eigen::Lower> llt(*A);
  return llt.info() == Eigen::Success;
#endif
}

void cholesky_inverse_lower_in_place(Eigen::MatrixXd* L) {
  if (L->rows() == 0) return;
#ifdef OCCAM_HAVE_LAPACK
  apply_threads(Threads::kOne);
  LAPACKE_dpotri_work(LAPACK_COL_MAJOR, 'L', as_int(L->rows()), L->data(), as_int(L->outerStride()));
#else
  // L⁻¹ by a triangular solve, then L⁻ᵀL⁻¹ into the lower triangle.
  const Eigen::Index n = L->rows();
  Eigen::MatrixXd L_inverse = Eigen::MatrixXd::Identity(n, n);
  L->triangularView<Eigen::Lower>().solveInPlace(L_inverse);
  L_inverse.triangularView<Eigen::StrictlyUpper>().setZero();
  const Eigen::MatrixXd inverse = L_inverse.transpose() * L_inverse;
  L->triangularView<Eigen::Lower>() = inverse;
#endif
}

void triangular_solve_lower(const Eigen::MatrixXd& L, bool transpose, Eigen::Ref<Eigen::MatrixXd> X) {
  if (X.size() == 0) return;
#ifdef OCCAM_HAVE_LAPACK
  if (X.cols() == 1) {
    // One right-hand side (a preconditioner's or a Newton step's solve, several a MAP iteration):
    // dtrsv reads the triangle once, where dtrsm first packs it (n²/2 numbers copied per call, as
    // much memory traffic as the solve itself; ~9% of a 455-row Woodbury fit's time in the copy).
    apply_threads(Threads::kOne);
    cblas_dtrsv(CblasColMajor, CblasLower, transpose ? CblasTrans : CblasNoTrans, CblasNonUnit, as_int(L.rows()),
                L.data(), as_int(L.outerStride()), X.data(), 1);
    return;
  }
  apply_threads(Threads::kRequested);
  cblas_dtrsm(CblasColMajor, CblasLeft, CblasLower, transpose ? CblasTrans : CblasNoTrans, CblasNonUnit,
              as_int(X.rows()), as_int(X.cols()), 1.0, L.data(), as_int(L.outerStride()), X.data(),
              as_int(X.outerStride()));
#else
  if (transpose)
    L.triangularView<Eigen::Lower>().transpose().solveInPlace(X);
  else
    L.triangularView<Eigen::Lower>().solveInPlace(X);
#endif
}

void multiply(const Eigen::Ref<const Eigen::MatrixXd>& A, bool transpose_a, const Eigen::Ref<const Eigen::MatrixXd>& B,
              double beta, Eigen::Ref<Eigen::MatrixXd> C) {
  multiply(A, transpose_a, B, false, beta, C);
}

void multiply(const Eigen::Ref<const Eigen::MatrixXd>& A, bool transpose_a, const Eigen::Ref<const Eigen::MatrixXd>& B,
              bool transpose_b, double beta, Eigen::Ref<Eigen::MatrixXd> C) {
  if (C.size() == 0) return;
  const Eigen::Index k = transpose_a ? A.rows() : A.cols();
  if (k == 0) {
    if (beta == 0.0)
      C.setZero();
    else
      C *= beta;
    return;
  }
#ifdef OCCAM_HAVE_LAPACK
  apply_threads(Threads::kOne);
  cblas_dgemm(CblasColMajor, transpose_a ? CblasTrans : CblasNoTrans, transpose_b ? CblasTrans : CblasNoTrans,
              as_int(C.rows()), as_int(C.cols()), as_int(k), 1.0, A.data(), as_int(A.outerStride()), B.data(),
              as_int(B.outerStride()), beta, C.data(), as_int(C.outerStride()));
#else
  if (beta == 0.0)
    C.setZero();
  else
    C *= beta;
  if (transpose_a && transpose_b)
    C.noalias() += A.transpose() * B.transpose();
  else if (transpose_a)
    C.noalias() += A.transpose() * B;
  else if (transpose_b)
    C.noalias() += A * B.transpose();
  else
    C.noalias() += A * B;
#endif
}

bool symmetric_eigen(const Eigen::MatrixXd& A, Eigen::VectorXd* values, Eigen::MatrixXd* vectors) {
  const Eigen::Index n = A.rows();
  if (n == 0) {
    values->resize(0);
    if (vectors) vectors->resize(0, 0);
    return true;
  }
#ifdef OCCAM_HAVE_LAPACK
  apply_threads(Threads::kOne);
  // Divide and conquer (dsyevd): the fastest of LAPACK's drivers when every eigenvector is wanted
  // (and with 'N', eigenvalues only, the tridiagonal QL/QR of dsterf).
  Eigen::MatrixXd work;
  Eigen::MatrixXd& M = vectors ? *vectors : work;
  M = A;
  values->resize(n);
  return LAPACKE_dsyevd(LAPACK_COL_MAJOR, vectors ? 'V' : 'N', 'L', as_int(n), M.data(), as_int(M.outerStride()),
                        values->data()) == 0;
#else
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(A, vectors ? Eigen::ComputeEigenvectors : Eigen::EigenvaluesOnly);
  if (eig.info() != Eigen::Success) return false;
  *values = eig.eigenvalues();
  if (vectors) *vectors = eig.eigenvectors();
  return true;
#endif
}

void pack_lower(const Eigen::MatrixXd& A, Eigen::VectorXd* packed) {
  const Eigen::Index p = A.rows();
  packed->resize(p * (p + 1) / 2);
  for (Eigen::Index j = 0, at = 0; j < p; at += p - j, ++j) packed->segment(at, p - j) = A.col(j).tail(p - j);
}

Eigen::MatrixXd symmetric_from_packed_lower(const Eigen::VectorXd& packed, Eigen::Index p) {
  Eigen::MatrixXd A(p, p);
  for (Eigen::Index j = 0, at = 0; j < p; at += p - j, ++j) A.col(j).tail(p - j) = packed.segment(at, p - j);
  return A.selfadjointView<Eigen::Lower>();
}

}  // namespace internal
}  // namespace occam
