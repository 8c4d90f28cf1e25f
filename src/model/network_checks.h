// network_checks.h — argument checks shared by the Network implementations (internal).
#pragma once

#include "occam/network.h"

namespace occam::detail {

// Throws Error(kInvalidArgument) unless w has num_params() entries and X num_inputs() columns,
// and, where given, G is X.rows() × num_outputs() and v has num_params() entries.
void check_args(const Network& net, const Eigen::Ref<const Eigen::VectorXd>& w,
                const Eigen::Ref<const Eigen::MatrixXd>& X, const Eigen::MatrixXd* G = nullptr,
                const Eigen::Ref<const Eigen::VectorXd>* v = nullptr);

// Throws Error(kInvalidArgument) unless the seeds of Network::layer_gradients are rows × K².
void check_seeds(const Network& net, const Eigen::MatrixXd& seeds, Index rows);

}  // namespace occam::detail
