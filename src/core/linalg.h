// linalg.h (internal) — the dense symmetric kernels that run on LAPACKE + OpenBLAS when the build
// has them (OCCAM_LAPACK) and on Eigen otherwise: explicit calls in these few functions rather
// than EIGEN_USE_BLAS / EIGEN_USE_LAPACKE, which would change inline code in the headers that a
// user of the installed library compiles too.
//
// Each writes into storage its caller owns and touches only the triangle it names, so that one
// W × W matrix can hold a symmetric matrix in one triangle and a factor in the other.
#pragma once

#include <Eigen/Core>

namespace occam::internal {

// The upper triangle (diagonal included) of *M += ZᵀZ, for Z rows × W and M W × W.
void rank_update_upper(const Eigen::Ref<const Eigen::MatrixXd>& Z, Eigen::MatrixXd* M);

// The lower triangle (diagonal included) of *K ← UUᵀ + beta·K, for U n × W and K n × n (beta = 0:
// K's old contents are not read).
void rank_update_lower(const Eigen::Ref<const Eigen::MatrixXd>& U, Eigen::MatrixXd* K, double beta = 1.0);

// Cholesky factorisation A = LLᵀ in place: reads the lower triangle of *A, writes L there, and
// leaves the strictly upper triangle untouched. False when A is not numerically positive definite.
bool cholesky_lower_in_place(Eigen::MatrixXd* A);

// The lower triangle of A⁻¹ from the Cholesky factor L in the lower triangle of *L (dpotri: 2n³/3
// flops), in place; the strictly upper triangle is left untouched.
void cholesky_inverse_lower_in_place(Eigen::MatrixXd* L);

// X ← L⁻¹X (transpose = false) or L⁻ᵀX (transpose = true) for the lower triangle L of *A.
void triangular_solve_lower(const Eigen::MatrixXd& L, bool transpose, Eigen::Ref<Eigen::MatrixXd> X);

// C ← op(A)·B + beta·C, op(A) = Aᵀ when transpose_a (a general matrix product; one thread, as
// dgemm's last bits change with the thread count).
void multiply(const Eigen::Ref<const Eigen::MatrixXd>& A, bool transpose_a, const Eigen::Ref<const Eigen::MatrixXd>& B,
              double beta, Eigen::Ref<Eigen::MatrixXd> C);
// C ← op(A)·op(B) + beta·C.
void multiply(const Eigen::Ref<const Eigen::MatrixXd>& A, bool transpose_a, const Eigen::Ref<const Eigen::MatrixXd>& B,
              bool transpose_b, double beta, Eigen::Ref<Eigen::MatrixXd> C);

// The eigenvalues (ascending) and orthonormal eigenvectors of the symmetric A, reading its lower
// triangle (the eigenvalues only when vectors is null). False when the iteration fails to converge.
bool symmetric_eigen(const Eigen::MatrixXd& A, Eigen::VectorXd* values, Eigen::MatrixXd* vectors);

// The lower triangle of the p × p A, column by column, into *packed (p(p + 1)/2 numbers): a symmetric
// matrix as one term of a sum over row blocks. symmetric_from_packed_lower is its inverse.
void pack_lower(const Eigen::MatrixXd& A, Eigen::VectorXd* packed);
Eigen::MatrixXd symmetric_from_packed_lower(const Eigen::VectorXd& packed, Eigen::Index p);

}  // namespace occam::internal
