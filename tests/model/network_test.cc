// Network derivatives against finite differences and against an independent per-example forward
// pass, for every activation, one and two hidden layers, one and two outputs, and Linear.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "occam/linear.h"
#include "occam/mlp.h"
#include "occam/status.h"
#include "testing/finite_difference.h"

namespace occam {
namespace {

using Eigen::Index;
using Eigen::MatrixXd;
using Eigen::VectorXd;
using testing::fd_directional;
using testing::fd_jacobian;
using testing::relative_error;

constexpr double kFdTolerance = 1e-6;      // central differences, step 1e-5: errors are ~1e-9
constexpr double kExactTolerance = 1e-12;  // two exact computations of the same quantity

// ℓ(F) = Σ ½(F − Y)² + log cosh F: not quadratic, so its Hessian Λ = 1 + sech²F varies with F.
class TestLoss final : public OutputLoss {
 public:
  explicit TestLoss(MatrixXd Y) : Y_(std::move(Y)) {}
  double operator()(const MatrixXd& F, MatrixXd* dF) const override {
    *dF = (F - Y_).array() + F.array().tanh();
    return 0.5 * (F - Y_).squaredNorm() + F.array().cosh().log().sum();
  }
  MatrixXd hessian(const MatrixXd& F) const { return 2.0 - F.array().tanh().square(); }  // Λ_nk (diagonal)

 private:
  MatrixXd Y_;
};

double activate_reference(Activation act, double a) {
  switch (act) {
    case Activation::kTanh:
      return std::tanh(a);
    case Activation::kRelu:
      return std::max(a, 0.0);
    case Activation::kSigmoid:
      return a >= 0 ? 1.0 / (1.0 + std::exp(-a)) : std::exp(a) / (1.0 + std::exp(a));
    case Activation::kSoftplus:
      return std::max(a, 0.0) + std::log1p(std::exp(-std::abs(a)));
    case Activation::kIdentity:
      return a;
  }
  return NAN;
}

// One example at a time with std:: functions, from the documented layout alone; also reports the
// smallest |pre-activation| of a hidden unit (how far the data sit from a ReLU kink).
MatrixXd reference_forward(const Mlp& net, const VectorXd& w, const MatrixXd& X, double* margin = nullptr) {
  const auto& n = net.layer_sizes();
  MatrixXd F(X.rows(), n.back());
  double smallest = std::numeric_limits<double>::infinity();
  for (Index e = 0; e < X.rows(); ++e) {
    VectorXd h = X.row(e).transpose();
    Index offset = 0;
    for (std::size_t l = 1; l < n.size(); ++l) {
      Eigen::Map<const MatrixXd> W(w.data() + offset, n[l], n[l - 1]);
      Eigen::Map<const VectorXd> b(w.data() + offset + n[l] * n[l - 1], n[l]);
      offset += n[l] * (n[l - 1] + 1);
      VectorXd a = W * h + b;
      if (l + 1 < n.size()) {
        smallest = std::min(smallest, a.cwiseAbs().minCoeff());
        for (Index i = 0; i < a.size(); ++i) a[i] = activate_reference(net.activation(), a[i]);
      }
      h = a;
    }
    F.row(e) = h.transpose();
  }
  if (margin) *margin = smallest;
  return F;
}

struct Case {
  std::string name;
  std::function<std::unique_ptr<Network>()> make;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (Activation act :
       {Activation::kTanh, Activation::kRelu, Activation::kSigmoid, Activation::kSoftplus, Activation::kIdentity})
    for (const std::vector<Index>& hidden : {std::vector<Index>{5}, std::vector<Index>{5, 3}})
      for (Index K : {1, 2}) {
        std::string name = std::string("mlp_3_");
        for (Index h : hidden) name += std::to_string(h) + "_";
        name += std::to_string(K) + "_" + to_string(act);
        cases.push_back({name, [=] { return std::make_unique<Mlp>(3, hidden, act, K); }});
      }
  auto mlp = [](std::vector<Index> hidden, Activation act, Index K) {
    return [=] { return std::make_unique<Mlp>(3, hidden, act, K); };
  };
  cases.push_back({"mlp_3_2_tanh_no_hidden", mlp({}, Activation::kTanh, 2)});
  cases.push_back({"mlp_3_2_3_tanh", mlp({2}, Activation::kTanh, 3)});  // fewer hidden units than inputs + 1
  cases.push_back({"mlp_3_5_4_3_2_softplus", mlp({5, 4, 3}, Activation::kSoftplus, 2)});
  cases.push_back({"linear_3_1_intercept", [] { return std::make_unique<Linear>(3, 1, true); }});
  cases.push_back({"linear_3_2_intercept", [] { return std::make_unique<Linear>(3, 2, true); }});
  cases.push_back({"linear_3_2_no_intercept", [] { return std::make_unique<Linear>(3, 2, false); }});
  return cases;
}

class NetworkTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    net_ = GetParam().make();
    const Index D = net_->num_inputs(), K = net_->num_outputs(), W = net_->num_params();
    // Draw until every hidden pre-activation is at least 0.05 from 0, so that no finite difference
    // straddles a ReLU kink (a needless but harmless condition for the smooth activations).
    for (std::uint64_t seed = 1;; ++seed) {
      Rng rng(seed);
      X_ = Eigen::Map<MatrixXd>(rng.normal_vector(kM * D).data(), kM, D);
      w_ = 0.8 * rng.normal_vector(W);
      double margin = 1.0;
      if (auto* mlp = dynamic_cast<const Mlp*>(net_.get())) reference_forward(*mlp, w_, X_, &margin);
      if (margin > 0.05) {
        v_ = rng.normal_vector(W);
        G_ = Eigen::Map<MatrixXd>(rng.normal_vector(kM * K).data(), kM, K);
        Y_ = Eigen::Map<MatrixXd>(rng.normal_vector(kM * K).data(), kM, K);
        break;
      }
      ASSERT_LT(seed, 1000u) << "no draw keeps the pre-activations away from 0";
    }
  }

  MatrixXd forward(const VectorXd& w) const {
    MatrixXd F;
    net_->forward(w, X_, &F);
    return F;
  }
  VectorXd backward(const VectorXd& w, const MatrixXd& G) const {
    VectorXd g;
    net_->backward(w, X_, G, &g);
    return g;
  }

  static constexpr Index kM = 7;
  std::unique_ptr<Network> net_;
  MatrixXd X_, G_, Y_;
  VectorXd w_, v_;
};

TEST_P(NetworkTest, ForwardMatchesPerExampleReference) {
  const MatrixXd F = forward(w_);
  ASSERT_EQ(F.rows(), kM);
  ASSERT_EQ(F.cols(), net_->num_outputs());
  MatrixXd expected;
  if (auto* mlp = dynamic_cast<const Mlp*>(net_.get())) {
    expected = reference_forward(*mlp, w_, X_);
  } else {
    auto* linear = dynamic_cast<const Linear*>(net_.get());
    const Index D = net_->num_inputs(), K = net_->num_outputs();
    expected = X_ * Eigen::Map<const MatrixXd>(w_.data(), D, K);
    if (linear->intercept()) expected.rowwise() += w_.tail(K).transpose();
  }
  EXPECT_LT(relative_error(F, expected), kExactTolerance);
}

TEST_P(NetworkTest, BackwardMatchesFiniteDifferences) {
  auto phi = [&](const VectorXd& w) { return (G_.array() * forward(w).array()).sum(); };
  const VectorXd fd = testing::fd_gradient(phi, w_);
  EXPECT_LT(relative_error(backward(w_, G_), fd), kFdTolerance);
}

TEST_P(NetworkTest, ValueGradientMatchesLossAndFiniteDifferences) {
  const TestLoss loss(Y_);
  auto value = [&](const VectorXd& w) {
    MatrixXd dF;
    return loss(forward(w), &dF);
  };
  VectorXd grad;
  const double v = net_->value_gradient(w_, X_, loss, &grad);
  EXPECT_NEAR(v, value(w_), 1e-13 * std::abs(v));
  EXPECT_LT(relative_error(grad, testing::fd_gradient(value, w_)), kFdTolerance);
}

TEST_P(NetworkTest, JvpMatchesFiniteDifferencesAndJacobian) {
  MatrixXd Jv, J;
  net_->jvp(w_, X_, v_, &Jv);
  net_->jacobian(w_, X_, &J);
  ASSERT_EQ(Jv.rows(), kM);
  ASSERT_EQ(Jv.cols(), net_->num_outputs());
  const VectorXd jv = Eigen::Map<const VectorXd>(Jv.data(), Jv.size());  // column-major = output-major
  EXPECT_LT(relative_error(jv, fd_directional([&](const VectorXd& w) { return forward(w); }, w_, v_)), kFdTolerance);
  EXPECT_LT(relative_error(jv, J * v_), kExactTolerance);
}

TEST_P(NetworkTest, JacobianMatchesFiniteDifferences) {
  MatrixXd J;
  net_->jacobian(w_, X_, &J);
  ASSERT_EQ(J.rows(), kM * net_->num_outputs());
  ASSERT_EQ(J.cols(), net_->num_params());
  EXPECT_LT(relative_error(J, fd_jacobian([&](const VectorXd& w) { return forward(w); }, w_)), kFdTolerance);
}

// The gradient of Σ G∘F is backward(G); its derivative along v is Σ G_nk ∇²f_k v.
TEST_P(NetworkTest, CurvatureVpMatchesFiniteDifferencesOfBackward) {
  VectorXd Cv;
  net_->curvature_vp(w_, X_, G_, v_, &Cv);
  const VectorXd fd = fd_directional([&](const VectorXd& w) { return backward(w, G_); }, w_, v_);
  EXPECT_LT(relative_error(Cv, fd), kFdTolerance);
}

TEST_P(NetworkTest, CurvatureMatrixStacksCurvatureVpAndIsSymmetric) {
  const Index W = net_->num_params();
  MatrixXd C, stacked(W, W);
  net_->curvature_matrix(w_, X_, G_, &C);
  VectorXd column;
  for (Index j = 0; j < W; ++j) {
    net_->curvature_vp(w_, X_, G_, VectorXd::Unit(W, j), &column);
    stacked.col(j) = column;
  }
  EXPECT_LT(relative_error(C, stacked), kExactTolerance);
  EXPECT_LT(relative_error(C, MatrixXd(C.transpose())), kExactTolerance);
  // The default (one curvature_vp per column) agrees with the override.
  MatrixXd by_default;
  net_->Network::curvature_matrix(w_, X_, G_, &by_default);
  EXPECT_EQ(by_default, stacked);
}

// Where a network gives the second-order term as blocks (one hidden layer: a block per hidden
// unit), the blocks are on disjoint sets of weights, they equal curvature_matrix's entries there,
// and curvature_matrix is zero outside them. Deeper networks and Linear give none.
TEST_P(NetworkTest, CurvatureBlocksAreTheCurvatureMatrix) {
  const Index W = net_->num_params();
  MatrixXd C;
  net_->curvature_matrix(w_, X_, G_, &C);
  CurvatureBlocks blocks;
  const auto* mlp = dynamic_cast<const Mlp*>(net_.get());
  const bool one_hidden_layer = mlp != nullptr && mlp->layer_sizes().size() == 3;
  ASSERT_EQ(net_->curvature_blocks(w_, X_, G_, &blocks), one_hidden_layer);
  if (!one_hidden_layer) return;
  ASSERT_EQ(blocks.index.size(), blocks.block.size());
  EXPECT_EQ(static_cast<Index>(blocks.index.size()), mlp->layer_sizes()[1]);  // one per hidden unit
  MatrixXd assembled = MatrixXd::Zero(W, W);
  std::vector<int> covered(static_cast<std::size_t>(W), 0);
  for (std::size_t b = 0; b < blocks.index.size(); ++b) {
    const std::vector<Index>& index = blocks.index[b];
    ASSERT_EQ(blocks.block[b].rows(), static_cast<Index>(index.size()));
    ASSERT_EQ(blocks.block[b].cols(), static_cast<Index>(index.size()));
    for (std::size_t i = 0; i < index.size(); ++i) {
      ++covered[static_cast<std::size_t>(index[i])];
      for (std::size_t j = 0; j < index.size(); ++j) {
        assembled(index[i], index[j]) = blocks.block[b](static_cast<Index>(i), static_cast<Index>(j));
      }
    }
  }
  for (Index j = 0; j < W; ++j) EXPECT_LE(covered[static_cast<std::size_t>(j)], 1) << "weight " << j;
  // The output biases are in no block: f is linear in them.
  EXPECT_EQ(std::count(covered.begin(), covered.end(), 0), net_->num_outputs());
  EXPECT_LT(relative_error(assembled, C), kExactTolerance);
}

// The exact Hessian of Σℓ(f_n) is JᵀΛJ + curvature_matrix(G = ∂ℓ/∂F).
TEST_P(NetworkTest, GaussNewtonPlusCurvatureIsTheHessian) {
  const TestLoss loss(Y_);
  const MatrixXd F = forward(w_);
  MatrixXd dF, J, C;
  loss(F, &dF);
  net_->jacobian(w_, X_, &J);
  net_->curvature_matrix(w_, X_, dF, &C);
  const VectorXd lambda = Eigen::Map<const VectorXd>(loss.hessian(F).data(), F.size());
  const MatrixXd hessian = J.transpose() * lambda.asDiagonal() * J + C;
  auto gradient = [&](const VectorXd& w) {
    VectorXd g;
    net_->value_gradient(w, X_, loss, &g);
    return g;
  };
  const MatrixXd fd = testing::fd_hessian_from_gradient(gradient, w_);
  EXPECT_LT(relative_error(hessian, fd), kFdTolerance);
}

// A Linearisation keeps the forward pass at w; its products equal the network's own (each with a
// forward pass of its own) to rounding, in any order and repeated, and hessian_vp is the exact
// Hessian JᵀΛJ + Σ G∇²f of a non-quadratic loss times v.
TEST_P(NetworkTest, LinearisationProductsEqualTheUncachedOnes) {
  const Index W = net_->num_params();
  const auto lin = net_->linearise(w_, X_);
  EXPECT_LT(relative_error(lin->output(), forward(w_)), kExactTolerance);
  const TestLoss loss(Y_);
  MatrixXd dF, J, C;
  loss(forward(w_), &dF);
  const MatrixXd lambda = loss.hessian(forward(w_));
  net_->jacobian(w_, X_, &J);
  net_->curvature_matrix(w_, X_, dF, &C);
  const VectorXd lambda_flat = Eigen::Map<const VectorXd>(lambda.data(), lambda.size());
  const MatrixXd hessian = J.transpose() * lambda_flat.asDiagonal() * J + C;
  Rng rng(17);
  for (int repeat = 0; repeat < 3; ++repeat) {
    SCOPED_TRACE("repeat " + std::to_string(repeat));
    const VectorXd v = repeat == 0 ? v_ : rng.normal_vector(W);
    const MatrixXd G = repeat == 0 ? G_
                                   : MatrixXd(Eigen::Map<MatrixXd>(rng.normal_vector(kM * net_->num_outputs()).data(),
                                                                   kM, net_->num_outputs()));
    MatrixXd Jv, Jv_direct;
    lin->jvp(v, &Jv);
    net_->jvp(w_, X_, v, &Jv_direct);
    EXPECT_LT(relative_error(Jv, Jv_direct), kExactTolerance);
    VectorXd g, g_direct;
    lin->vjp(G, &g);
    g_direct = backward(w_, G);
    EXPECT_LT(relative_error(g, g_direct), kExactTolerance);
    VectorXd Cv, Cv_direct;
    lin->curvature_vp(G, v, &Cv);
    net_->curvature_vp(w_, X_, G, v, &Cv_direct);
    EXPECT_LT(relative_error(Cv, Cv_direct), kExactTolerance);
    VectorXd Hv;
    lin->hessian_vp(
        dF, [&](const MatrixXd& R) { return MatrixXd(lambda.array() * R.array()); }, v, &Hv);
    EXPECT_LT(relative_error(Hv, hessian * v), kExactTolerance);
    // The default hessian_vp (jvp, vjp and curvature_vp) gives the same.
    VectorXd Hv_default;
    lin->Linearisation::hessian_vp(
        dF, [&](const MatrixXd& R) { return MatrixXd(lambda.array() * R.array()); }, v, &Hv_default);
    EXPECT_LT(relative_error(Hv_default, hessian * v), kExactTolerance);
  }
  // Shapes are checked.
  VectorXd out;
  EXPECT_THROW(lin->curvature_vp(G_, VectorXd::Zero(W + 1), &out), Error);
}

TEST_P(NetworkTest, JsonRoundTrip) {
  const nlohmann::json j = net_->to_json();
  const auto copy = network_from_json(nlohmann::json::parse(j.dump()));
  EXPECT_EQ(copy->to_json(), j);
  EXPECT_EQ(copy->describe(), net_->describe());
  EXPECT_EQ(copy->num_params(), net_->num_params());
  MatrixXd F;
  copy->forward(w_, X_, &F);
  EXPECT_EQ(F, forward(w_));
}

TEST_P(NetworkTest, CloneComputesTheSame) {
  const auto copy = net_->clone();
  MatrixXd F;
  copy->forward(w_, X_, &F);
  EXPECT_EQ(F, forward(w_));
  EXPECT_EQ(copy->describe(), net_->describe());
}

TEST_P(NetworkTest, DefaultGroupsPartitionTheParameters) {
  std::vector<int> hits(net_->num_params(), 0);
  std::set<std::string> names;
  for (const ParamGroup& group : net_->default_groups()) {
    EXPECT_TRUE(names.insert(group.name).second) << "duplicate group " << group.name;
    Index size = 0;
    for (const ParamBlock& block : group.blocks) {
      ASSERT_GE(block.offset, 0);
      ASSERT_LE(block.offset + block.size, net_->num_params());
      for (Index i = block.offset; i < block.offset + block.size; ++i) ++hits[i];
      size += block.size;
    }
    EXPECT_EQ(group.size(), size);
    EXPECT_GT(group.size(), 0) << group.name;
  }
  for (Index i = 0; i < net_->num_params(); ++i) EXPECT_EQ(hits[i], 1) << "parameter " << i;
}

TEST_P(NetworkTest, WrongShapesAreRejected) {
  const Index W = net_->num_params(), D = net_->num_inputs(), K = net_->num_outputs();
  MatrixXd F;
  VectorXd g;
  auto kind_of = [](auto&& call) {
    try {
      call();
    } catch (const Error& e) {
      return static_cast<int>(e.kind());
    }
    return -1;
  };
  const int invalid_argument = static_cast<int>(ErrorKind::kInvalidArgument);
  EXPECT_EQ(kind_of([&] { net_->forward(VectorXd::Zero(W + 1), X_, &F); }), invalid_argument);
  EXPECT_EQ(kind_of([&] { net_->forward(w_, MatrixXd::Zero(kM, D + 1), &F); }), invalid_argument);
  EXPECT_EQ(kind_of([&] { net_->backward(w_, X_, MatrixXd::Zero(kM, K + 1), &g); }), invalid_argument);
  EXPECT_EQ(kind_of([&] { net_->curvature_vp(w_, X_, G_, VectorXd::Zero(W - 1), &g); }), invalid_argument);
  struct WrongLoss final : OutputLoss {
    double operator()(const MatrixXd& F, MatrixXd* dF) const override {
      dF->setZero(F.rows() + 1, F.cols());
      return 0.0;
    }
  };
  EXPECT_EQ(kind_of([&] { net_->value_gradient(w_, X_, WrongLoss(), &g); }), invalid_argument);
}

// A loss may itself evaluate the network (the workspace of the outer call must survive it), and
// threads may share one network.
TEST_P(NetworkTest, ReentrantAndThreadSafe) {
  struct NestedLoss final : OutputLoss {
    NestedLoss(const Network& net, const MatrixXd& X, const VectorXd& w, const MatrixXd& Y)
        : net(&net), X(&X), w(&w), inner(Y) {}
    const Network* net;
    const MatrixXd* X;
    const VectorXd* w;
    TestLoss inner;
    double operator()(const MatrixXd& F, MatrixXd* dF) const override {
      MatrixXd other;
      VectorXd g;
      net->forward(*w * 0.5, *X, &other);
      net->value_gradient(*w * 0.25, *X, inner, &g);
      return inner(F, dF);
    }
  };
  const TestLoss loss(Y_);
  const NestedLoss nested(*net_, X_, w_, Y_);
  VectorXd expected, g;
  const double value = net_->value_gradient(w_, X_, loss, &expected);
  EXPECT_EQ(net_->value_gradient(w_, X_, nested, &g), value);
  EXPECT_EQ(g, expected);

  std::vector<VectorXd> results(4);
  std::vector<std::thread> threads;
  for (auto& r : results)
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) net_->value_gradient(w_, X_, loss, &r);
    });
  for (auto& t : threads) t.join();
  for (const auto& r : results) EXPECT_EQ(r, expected);
}

// Network::dense_layers places every parameter once, layer after layer, and layer_gradients
// factors the seed-mixed Jacobian: row (k, n) of Σ_j S_n(k, j) J_(j,n) is, at unit c's input p of
// layer l, deltas[l](k, n; c) · ã_n(p) (ã: the layer's inputs with a 1 for the biases).
TEST_P(NetworkTest, DenseLayersFactorTheSeededJacobian) {
  const std::vector<DenseLayer> layers = net_->dense_layers();
  ASSERT_FALSE(layers.empty());
  const Index K = net_->num_outputs(), W = net_->num_params();
  EXPECT_EQ(layers.front().in, net_->num_inputs());
  EXPECT_EQ(layers.back().out, K);
  std::vector<int> seen(static_cast<std::size_t>(W), 0);
  for (std::size_t l = 0; l < layers.size(); ++l) {
    if (l > 0) EXPECT_EQ(layers[l].in, layers[l - 1].out);
    for (Index c = 0; c < layers[l].out; ++c) {
      for (Index p = 0; p < layers[l].in + (layers[l].has_biases() ? 1 : 0); ++p) {
        const Index i = layers[l].parameter_index(c, p);
        ASSERT_GE(i, 0);
        ASSERT_LT(i, W);
        ++seen[static_cast<std::size_t>(i)];
      }
    }
  }
  for (Index i = 0; i < W; ++i) EXPECT_EQ(seen[static_cast<std::size_t>(i)], 1) << "parameter " << i;

  Rng rng(7);
  const MatrixXd seeds = Eigen::Map<MatrixXd>(rng.normal_vector(kM * K * K).data(), kM, K * K);
  MatrixXd J, seen_outputs;
  net_->jacobian(w_, X_, &J);
  LayerGradients g;
  net_->layer_gradients(w_, X_, Network::SeedsAt([&](const MatrixXd& F, MatrixXd* S) {
                          seen_outputs = F;
                          *S = seeds;
                        }),
                        &g);
  EXPECT_EQ(seen_outputs, forward(w_));
  ASSERT_EQ(g.inputs.size(), layers.size());
  ASSERT_EQ(g.deltas.size(), layers.size());
  EXPECT_EQ(g.inputs[0], X_);
  MatrixXd Z = MatrixXd::Zero(kM * K, W), factored = MatrixXd::Zero(kM * K, W);
  for (Index k = 0; k < K; ++k) {
    for (Index n = 0; n < kM; ++n) {
      for (Index j = 0; j < K; ++j) Z.row(k * kM + n) += seeds(n, k + j * K) * J.row(j * kM + n);
    }
  }
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const DenseLayer& layer = layers[l];
    ASSERT_EQ(g.inputs[l].rows(), kM);
    ASSERT_EQ(g.inputs[l].cols(), layer.in);
    ASSERT_EQ(g.deltas[l].rows(), kM * K);
    ASSERT_EQ(g.deltas[l].cols(), layer.out);
    for (Index r = 0; r < kM * K; ++r) {
      for (Index c = 0; c < layer.out; ++c) {
        for (Index p = 0; p < layer.in + (layer.has_biases() ? 1 : 0); ++p) {
          const double input = p < layer.in ? g.inputs[l](r % kM, p) : 1.0;
          factored(r, layer.parameter_index(c, p)) = g.deltas[l](r, c) * input;
        }
      }
    }
  }
  EXPECT_LT(relative_error(factored, Z), kExactTolerance);

  LayerGradients given;
  net_->layer_gradients(w_, X_, seeds, &given);
  EXPECT_EQ(given.deltas, g.deltas);
  EXPECT_THROW(net_->layer_gradients(w_, X_, MatrixXd(kM, K * K + 1), &given), Error);
}

INSTANTIATE_TEST_SUITE_P(AllNetworks, NetworkTest, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// ---------------------------------------------------------------------------------------------

// A 1-1-1 net with unit weights and zero biases computes σ itself.
MatrixXd activation_values(Activation act, const VectorXd& a) {
  const Mlp net(1, {1}, act, 1);
  VectorXd w(4);
  w << 1.0, 0.0, 1.0, 0.0;  // W₁, b₁, W₂, b₂
  MatrixXd F;
  net.forward(w, a, &F);
  return F;
}

TEST(Activation, AccurateOverTheWholeRange) {
  // Enough values that most go through Eigen's packet path, plus its scalar tail.
  std::vector<double> values = {-800,    -745, -40,    -20.7, -20.6, -3,   -0.625, -0.6,  -1e-3, -1e-8,
                                -1e-300, 0,    1e-300, 1e-20, 1e-8,  1e-3, 0.3,    0.624, 0.625, 0.626,
                                0.7,     1,    2.5,    19,    20.6,  21,   40,     745,   800};
  for (double x = -25; x <= 25; x += 0.0173) values.push_back(x);
  for (double x = 1e-10; x < 1; x *= 1.1) values.push_back(x);
  const VectorXd a = Eigen::Map<const VectorXd>(values.data(), values.size());
  for (Activation act :
       {Activation::kTanh, Activation::kRelu, Activation::kSigmoid, Activation::kSoftplus, Activation::kIdentity}) {
    const MatrixXd F = activation_values(act, a);
    for (Index i = 0; i < a.size(); ++i) {
      const long double x = a[i];
      long double expected = x;
      if (act == Activation::kTanh) expected = std::tanh(x);
      if (act == Activation::kRelu) expected = std::max(x, 0.0L);
      if (act == Activation::kSigmoid) expected = 1.0L / (1.0L + std::exp(-x));
      if (act == Activation::kSoftplus) expected = std::max(x, 0.0L) + std::log1p(std::exp(-std::abs(x)));
      // A few ulp relative (measured: under 2); results below 1e-300 (underflow) only absolutely.
      EXPECT_LE(std::abs(F(i, 0) - expected), 1e-15L * std::abs(expected) + 1e-300L)
          << to_string(act) << "(" << a[i] << ") = " << F(i, 0) << ", expected " << static_cast<double>(expected);
    }
  }
}

TEST(Activation, NonFiniteInputs) {
  const double inf = std::numeric_limits<double>::infinity();
  VectorXd a(6);
  a << NAN, -inf, inf, NAN, 1.0, NAN;
  for (Activation act :
       {Activation::kTanh, Activation::kRelu, Activation::kSigmoid, Activation::kSoftplus, Activation::kIdentity}) {
    const MatrixXd F = activation_values(act, a);
    EXPECT_TRUE(std::isnan(F(0, 0)) && std::isnan(F(3, 0)) && std::isnan(F(5, 0))) << to_string(act);
  }
  EXPECT_EQ(activation_values(Activation::kTanh, a)(1, 0), -1.0);
  EXPECT_EQ(activation_values(Activation::kTanh, a)(2, 0), 1.0);
  EXPECT_EQ(activation_values(Activation::kSigmoid, a)(2, 0), 1.0);
  EXPECT_NEAR(activation_values(Activation::kSigmoid, a)(1, 0), 0.0, 1e-300);
  EXPECT_NEAR(activation_values(Activation::kSoftplus, a)(1, 0), 0.0, 1e-300);
}

TEST(Activation, NamesAndSymmetry) {
  for (Activation act :
       {Activation::kTanh, Activation::kRelu, Activation::kSigmoid, Activation::kSoftplus, Activation::kIdentity})
    EXPECT_EQ(parse_activation(to_string(act)), act);
  try {
    parse_activation("gelu");
    FAIL() << "gelu parsed";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
  }
  EXPECT_TRUE(is_odd(Activation::kTanh));
  EXPECT_TRUE(is_odd(Activation::kIdentity));
  EXPECT_FALSE(is_odd(Activation::kRelu));
  EXPECT_FALSE(is_odd(Activation::kSigmoid));
  EXPECT_FALSE(is_odd(Activation::kSoftplus));
}

TEST(Mlp, WithoutHiddenLayersIsLinear) {
  const Mlp mlp(3, {}, Activation::kTanh, 2);
  const Linear linear(3, 2, true);
  ASSERT_EQ(mlp.num_params(), linear.num_params());
  Rng rng(5);
  const MatrixXd X = Eigen::Map<MatrixXd>(rng.normal_vector(30).data(), 10, 3);
  const VectorXd w = rng.normal_vector(mlp.num_params());
  // Mlp stores W (2 × 3) then b; Linear stores B = Wᵀ (3 × 2) then b.
  VectorXd theta(linear.num_params());
  Eigen::Map<MatrixXd>(theta.data(), 3, 2) = Eigen::Map<const MatrixXd>(w.data(), 2, 3).transpose();
  theta.tail(2) = w.tail(2);
  MatrixXd F_mlp, F_linear;
  mlp.forward(w, X, &F_mlp);
  linear.forward(theta, X, &F_linear);
  EXPECT_LT(relative_error(F_mlp, F_linear), kExactTolerance);
}

TEST(Mlp, GroupsAndDescription) {
  auto names = [](const Network& net) {
    std::vector<std::string> out;
    for (const auto& g : net.default_groups()) out.push_back(g.name);
    return out;
  };
  using Names = std::vector<std::string>;
  EXPECT_EQ(names(Mlp(13, {50}, Activation::kTanh)),
            (Names{"input_weights", "hidden_biases", "output_weights", "output_biases"}));
  EXPECT_EQ(names(Mlp(13, {5, 4}, Activation::kTanh)),
            (Names{"input_weights", "hidden_biases", "output_weights", "output_biases", "hidden_weights"}));
  EXPECT_EQ(names(Mlp(13, {}, Activation::kTanh)), (Names{"weights", "biases"}));
  EXPECT_EQ(names(Linear(13)), (Names{"weights", "intercept"}));
  EXPECT_EQ(names(Linear(13, 1, false)), (Names{"weights"}));

  const Mlp net(13, {50}, Activation::kTanh, 1);
  EXPECT_EQ(net.num_params(), 751);
  EXPECT_EQ(net.describe(), "mlp 13-50-1 tanh");
  EXPECT_EQ(Linear(13).describe(), "linear 13->1 (intercept)");
  EXPECT_EQ(net.to_json(), nlohmann::json::parse(R"({"type":"mlp","layers":[13,50,1],"activation":"tanh"})"));
  EXPECT_EQ(Linear(13).to_json(),
            nlohmann::json::parse(R"({"type":"linear","inputs":13,"outputs":1,"intercept":true})"));
  // MacKay's groups for a one-hidden-layer net.
  const auto groups = net.default_groups();
  EXPECT_EQ(groups[0].size(), 650);
  EXPECT_EQ(groups[1].size(), 50);
  EXPECT_EQ(groups[2].size(), 50);
  EXPECT_EQ(groups[3].size(), 1);
}

// log(H!) + H log 2 per hidden layer over the units given (the sign flip for tanh only here), and
// over every unit without them; 0 for a Linear.
TEST(Mlp, SymmetryFactorCountsTheGivenUnits) {
  const Mlp tanh_net(3, {4, 2}, Activation::kTanh, 1), relu_net(3, {4, 2}, Activation::kRelu, 1);
  const double ln2 = std::log(2.0);
  EXPECT_DOUBLE_EQ(tanh_net.symmetry_log_factor(), std::lgamma(5.0) + 4 * ln2 + std::lgamma(3.0) + 2 * ln2);
  EXPECT_DOUBLE_EQ(tanh_net.symmetry_log_factor({1, 0}), ln2);
  EXPECT_DOUBLE_EQ(relu_net.symmetry_log_factor({3, 2}), std::lgamma(4.0) + std::lgamma(3.0));
  EXPECT_EQ(Linear(3, 2, true).symmetry_log_factor({}), 0.0);
}

TEST(Mlp, ZeroSizedLayersAreRejected) {
  EXPECT_THROW(Mlp(0, {3}, Activation::kTanh), Error);
  EXPECT_THROW(Mlp(2, {3, 0}, Activation::kTanh), Error);
  EXPECT_THROW(Mlp(2, {3}, Activation::kTanh, 0), Error);
  EXPECT_THROW(Linear(0), Error);
}

TEST(Mlp, InitialParamsAreSeededWithFanInVariance) {
  const Mlp net(400, {300}, Activation::kTanh, 2);
  Rng a(11), b(11);
  const VectorXd w = net.initial_params(a);
  EXPECT_EQ(w, net.initial_params(b));
  const auto groups = net.default_groups();
  auto block = [&](const std::string& name) {
    for (const auto& g : groups)
      if (g.name == name) return w.segment(g.blocks[0].offset, g.blocks[0].size);
    return w.segment(0, 0);
  };
  EXPECT_TRUE(block("hidden_biases").isZero(0.0));
  EXPECT_TRUE(block("output_biases").isZero(0.0));
  // Sample variances of 120 000 and 600 draws: standard errors 0.4% and 6%.
  EXPECT_NEAR(block("input_weights").squaredNorm() / 120000 * 400, 1.0, 0.03);
  EXPECT_NEAR(block("output_weights").squaredNorm() / 600 * 300, 1.0, 0.3);
  EXPECT_TRUE(Linear(3).initial_params(a).isZero(0.0));
}

TEST(NetworkFromJson, RejectsMalformedDescriptions) {
  for (const char* text :
       {R"([1, 2])", R"({"layers": [1, 2], "activation": "tanh"})", R"({"type": "cnn"})", R"({"type": 3})",
        R"({"type": "mlp", "activation": "tanh"})", R"({"type": "mlp", "layers": [3], "activation": "tanh"})",
        R"({"type": "mlp", "layers": [3, 0, 1], "activation": "tanh"})",
        R"({"type": "mlp", "layers": [3, 2.5, 1], "activation": "tanh"})",
        R"({"type": "mlp", "layers": [3, -4, 1], "activation": "tanh"})", R"({"type": "mlp", "layers": [3, 4, 1]})",
        R"({"type": "mlp", "layers": [3, 4, 1], "activation": "gelu"})", R"({"type": "linear"})",
        R"({"type": "linear", "inputs": 0})", R"({"type": "linear", "inputs": 3, "outputs": "two"})",
        R"({"type": "linear", "inputs": 3, "intercept": 1})"}) {
    try {
      network_from_json(nlohmann::json::parse(text));
      ADD_FAILURE() << "accepted " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput) << text;
    }
  }
  // Optional fields take the constructor's defaults.
  EXPECT_EQ(network_from_json(nlohmann::json::parse(R"({"type": "linear", "inputs": 4})"))->describe(),
            "linear 4->1 (intercept)");
}

}  // namespace
}  // namespace occam
