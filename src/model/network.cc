// network.cc — what every Network shares: parameter groups, the default curvature matrix, the
// argument checks, and the factory that rebuilds a network from its JSON description.

#include "occam/network.h"

#include <nlohmann/json.hpp>
#include <string>

#include "model/network_checks.h"
#include "occam/linear.h"
#include "occam/mlp.h"
#include "occam/status.h"

namespace occam {

Index ParamGroup::size() const {
  Index n = 0;
  for (const ParamBlock& block : blocks) n += block.size;
  return n;
}

// One curvature_vp per unit vector: W passes, each with its own forward pass. Networks with a
// cheaper form override this.
void Network::curvature_matrix(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                               const Eigen::MatrixXd& G, Eigen::MatrixXd* out) const {
  const Index W = num_params();
  out->resize(W, W);
  Eigen::VectorXd e = Eigen::VectorXd::Zero(W), column;
  for (Index j = 0; j < W; ++j) {
    e[j] = 1.0;
    curvature_vp(w, X, G, e, &column);
    out->col(j) = column;
    e[j] = 0.0;
  }
}

bool Network::curvature_blocks(const Eigen::Ref<const Eigen::VectorXd>&, const Eigen::Ref<const Eigen::MatrixXd>&,
                               const Eigen::MatrixXd&, CurvatureBlocks*) const {
  return false;
}

void Linearisation::hessian_vp(const Eigen::MatrixXd& G, const OutputHessian& output_hessian,
                               const Eigen::Ref<const Eigen::VectorXd>& v, Eigen::VectorXd* out) const {
  Eigen::MatrixXd Jv;
  jvp(v, &Jv);
  Eigen::VectorXd gauss_newton, second_order;
  vjp(output_hessian(Jv), &gauss_newton);
  curvature_vp(G, v, &second_order);
  *out = gauss_newton + second_order;
}

namespace {

// A Linearisation that keeps w, X and F and calls the network's own products.
class DirectLinearisation final : public Linearisation {
 public:
  DirectLinearisation(const Network& net, const Eigen::Ref<const Eigen::VectorXd>& w,
                      const Eigen::Ref<const Eigen::MatrixXd>& X)
      : net_(net), w_(w), X_(X) {
    net.forward(w_, X_, &F_);
  }
  const Eigen::MatrixXd& output() const override { return F_; }
  void jvp(const Eigen::Ref<const Eigen::VectorXd>& v, Eigen::MatrixXd* Jv) const override { net_.jvp(w_, X_, v, Jv); }
  void vjp(const Eigen::MatrixXd& G, Eigen::VectorXd* grad) const override { net_.backward(w_, X_, G, grad); }
  void curvature_vp(const Eigen::MatrixXd& G, const Eigen::Ref<const Eigen::VectorXd>& v,
                    Eigen::VectorXd* out) const override {
    net_.curvature_vp(w_, X_, G, v, out);
  }

 private:
  const Network& net_;
  const Eigen::VectorXd w_;
  const Eigen::Ref<const Eigen::MatrixXd> X_;
  Eigen::MatrixXd F_;
};

}  // namespace

std::unique_ptr<Linearisation> Network::linearise(const Eigen::Ref<const Eigen::VectorXd>& w,
                                                  const Eigen::Ref<const Eigen::MatrixXd>& X) const {
  return std::make_unique<DirectLinearisation>(*this, w, X);
}

void Network::layer_gradients(const Eigen::Ref<const Eigen::VectorXd>& /*w*/,
                              const Eigen::Ref<const Eigen::MatrixXd>& /*X*/, const SeedsAt& /*seeds_at*/,
                              LayerGradients* /*out*/) const {
  throw Error(ErrorKind::kInvalidArgument, describe() + " has no dense layers (Network::layer_gradients)");
}

void Network::layer_gradients(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                              const Eigen::MatrixXd& seeds, LayerGradients* out) const {
  layer_gradients(w, X, SeedsAt([&seeds](const Eigen::MatrixXd&, Eigen::MatrixXd* s) { *s = seeds; }), out);
}

namespace detail {

void check_seeds(const Network& net, const Eigen::MatrixXd& seeds, Index rows) {
  const Index K = net.num_outputs();
  if (seeds.rows() != rows || seeds.cols() != K * K) {
    throw Error(ErrorKind::kInvalidArgument, net.describe() + ": layer_gradients: seeds must be " +
                                                 std::to_string(rows) + " × " + std::to_string(K * K) + ", got " +
                                                 std::to_string(seeds.rows()) + " × " + std::to_string(seeds.cols()));
  }
}

void check_args(const Network& net, const Eigen::Ref<const Eigen::VectorXd>& w,
                const Eigen::Ref<const Eigen::MatrixXd>& X, const Eigen::MatrixXd* G,
                const Eigen::Ref<const Eigen::VectorXd>* v) {
  auto fail = [&](const std::string& what) { throw Error(ErrorKind::kInvalidArgument, net.describe() + ": " + what); };
  auto shape = [](Index rows, Index cols) { return std::to_string(rows) + " × " + std::to_string(cols); };
  if (w.size() != net.num_params())
    fail("w has " + std::to_string(w.size()) + " entries, expected " + std::to_string(net.num_params()));
  if (X.cols() != net.num_inputs())
    fail("X has " + std::to_string(X.cols()) + " columns, expected " + std::to_string(net.num_inputs()));
  if (G && (G->rows() != X.rows() || G->cols() != net.num_outputs()))
    fail("the output derivative is " + shape(G->rows(), G->cols()) + ", expected " +
         shape(X.rows(), net.num_outputs()));
  if (v && v->size() != net.num_params())
    fail("v has " + std::to_string(v->size()) + " entries, expected " + std::to_string(net.num_params()));
}

}  // namespace detail

namespace {

[[noreturn]] void invalid(const nlohmann::json& j, const std::string& why) {
  throw Error(ErrorKind::kInvalidInput, "network description " + j.dump() + ": " + why);
}

Index positive_integer(const nlohmann::json& j, const nlohmann::json& value, const std::string& name) {
  if (!value.is_number_integer() || value.get<long long>() < 1) invalid(j, name + " must be a positive integer");
  return static_cast<Index>(value.get<long long>());
}

}  // namespace

std::unique_ptr<Network> network_from_json(const nlohmann::json& j) {
  if (!j.is_object()) invalid(j, "expected an object");
  if (!j.contains("type") || !j["type"].is_string()) invalid(j, "missing \"type\" (\"mlp\" or \"linear\")");
  const std::string type = j["type"].get<std::string>();
  if (type == "mlp") {
    if (!j.contains("layers") || !j["layers"].is_array() || j["layers"].size() < 2)
      invalid(j, "\"layers\" must list at least the input and output sizes, e.g. [13, 50, 1]");
    std::vector<Index> sizes;
    for (const auto& n : j["layers"]) sizes.push_back(positive_integer(j, n, "every layer size"));
    if (!j.contains("activation") || !j["activation"].is_string()) invalid(j, "missing \"activation\"");
    Activation activation;
    try {
      activation = parse_activation(j["activation"].get<std::string>());
    } catch (const Error& e) {
      invalid(j, e.what());
    }
    return std::make_unique<Mlp>(sizes.front(), std::vector<Index>(sizes.begin() + 1, sizes.end() - 1), activation,
                                 sizes.back());
  }
  if (type == "linear") {
    if (!j.contains("inputs")) invalid(j, "missing \"inputs\"");
    const Index inputs = positive_integer(j, j["inputs"], "\"inputs\"");
    const Index outputs = j.contains("outputs") ? positive_integer(j, j["outputs"], "\"outputs\"") : 1;
    bool intercept = true;
    if (j.contains("intercept")) {
      if (!j["intercept"].is_boolean()) invalid(j, "\"intercept\" must be true or false");
      intercept = j["intercept"].get<bool>();
    }
    return std::make_unique<Linear>(inputs, outputs, intercept);
  }
  invalid(j, "unknown type \"" + type + "\" (expected \"mlp\" or \"linear\")");
}

}  // namespace occam
