// evidence_boundary — where the evidence ascent stalls at a saddle, is the Laplace log-evidence at
// a constrained maximum? A diagnostic, not a method (docs/evidence.md, "Why the ascent stalls").
//
// It fits as `occam fit --hidden H --seed S` does (LaplaceMethod, MacKay's four α groups, the
// gaussian likelihood, inputs and target standardised), then works at the fit's end in
// φ = (log α_g, log β). Along the branch of stationary points of S through w — w tracked by
// Newton's method on the exact Hessian ∇∇S, which converges to the nearby stationary point
// whatever its curvature — it computes by central differences in φ:
//   - the gradient g of L(φ), the Laplace (Gauss–Newton) log-evidence;
//   - the gradient n_c of each small eigenvalue λ_c of ∇∇S (equal eigenvalues, identical pruned
//     units, are one constraint: the mean of vᵀ(d∇∇S/dφ)v over their eigenvectors).
// The region where w is a minimum is {λ_c ≥ 0}. At a maximum of L over it (Karush–Kuhn–Tucker)
// g = −Σ μ_c n_c with μ_c ≥ 0 over the constraints at zero: the part of g outside their span, the
// tangential gradient t, vanishes. It then climbs L along that boundary — steps along t, each
// followed by steps along the n_c back to λ_c = ε where it fell below zero — until max |t| ≤ 1e-4 or no step gains.
//
// Usage: evidence_boundary (--toy M | --data FILE --target NAME) [--hidden H] [--seed S]
//                          [--iterations K]
// --toy M: M rows x ~ U(−3, 3), y = sin x + 0.1·N(0, 1) from Rng(7). Prints one line per step.
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "occam/data.h"
#include "occam/fit.h"
#include "occam/laplace.h"
#include "occam/model_spec.h"
#include "occam/posterior.h"
#include "occam/rng.h"

using namespace occam;

namespace {

constexpr double kStep = 1e-4;       // central differences in φ
constexpr double kEpsilon = 1e-6;    // the boundary is kept at λ_c = ε ≥ 0
constexpr double kTolerance = 1e-4;  // max |t|: the fit's hyper_gradient_tolerance

struct Point {
  bool ok = false;
  double log_z = -std::numeric_limits<double>::infinity();
  Eigen::VectorXd w, lambda;
  Eigen::MatrixXd V, H;
};

Eigen::MatrixXd exact_hessian(const Posterior& p, const Eigen::VectorXd& w) {
  Eigen::MatrixXd H = p.data_hessian(w, HessianKind::kExact);
  p.prior().add_precision_to(&H);
  return H;
}

// The stationary point near w at φ, its ∇∇S's eigensystem and L.
Point at(Posterior* p, const Eigen::VectorXd& phi, Eigen::VectorXd w) {
  Point out;
  try {
    const Index G = p->prior().num_hyperparameters();
    if (!phi.allFinite() || phi.cwiseAbs().maxCoeff() > 30.0) return out;
    p->prior().set_hyperparameters(phi.head(G).array().exp().matrix());
    p->likelihood().set_precision(std::exp(phi[G]));
    for (int it = 0; it < 30; ++it) {
      double log_p;
      Eigen::VectorXd grad;
      if (!p->evaluate(w, &log_p, &grad)) return out;
      w += exact_hessian(*p, w).partialPivLu().solve(grad);
      if (!w.allFinite()) return out;
      if (grad.norm() < 1e-12 * std::max(1.0, w.norm())) break;
    }
    out.H = exact_hessian(*p, w);
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eigen(out.H);
    out.lambda = eigen.eigenvalues();
    out.V = eigen.eigenvectors();
    out.w = w;
    out.log_z = log_evidence(*p, laplace(*p, w, HessianKind::kGgn));
    out.ok = std::isfinite(out.log_z);
  } catch (const Error&) {
    out.ok = false;
  }
  return out;
}

// "alpha (…), beta …" at φ = (log α_g, log β).
std::string hyperparameters(const Eigen::VectorXd& phi) {
  std::string out = "alpha";
  char number[32];
  for (Index k = 0; k + 1 < phi.size(); ++k) {
    std::snprintf(number, sizeof number, " %.4g", std::exp(phi[k]));
    out += number;
  }
  std::snprintf(number, sizeof number, ", beta %.5g", std::exp(phi[phi.size() - 1]));
  return out + number;
}

Dataset toy_data(Index m) {
  Rng rng(7);
  Dataset d;
  d.X.resize(m, 1);
  d.Y.resize(m, 1);
  for (Index i = 0; i < m; ++i) {
    d.X(i, 0) = -3.0 + 6.0 * rng.uniform();
    d.Y(i, 0) = std::sin(d.X(i, 0)) + 0.1 * rng.normal();
  }
  d.feature_names = {"x"};
  d.target_name.push_back('y');  // (= "y": GCC 12 warns falsely on the assignment, -Wrestrict)
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  std::string data_file, target;
  Index toy = 0, hidden = 5;
  std::uint64_t seed = 1;
  int iterations = 60;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--toy")
      toy = std::stol(value);
    else if (flag == "--data")
      data_file = value;
    else if (flag == "--target")
      target = value;
    else if (flag == "--hidden")
      hidden = std::stol(value);
    else if (flag == "--seed")
      seed = std::stoull(value);
    else if (flag == "--iterations")
      iterations = std::stoi(value);
    else {
      std::fprintf(stderr, "evidence_boundary: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (toy <= 0 && (data_file.empty() || target.empty())) {
    std::fprintf(
        stderr,
        "usage: evidence_boundary (--toy M | --data FILE --target NAME) [--hidden H] [--seed S] [--iterations K]\n");
    return 2;
  }
  try {
    ModelSpec spec;
    spec.network.hidden = {hidden};
    const Dataset data = toy > 0 ? toy_data(toy) : make_training_data(read_csv(data_file), target, spec);
    LaplaceMethod method;
    method.start.seed = seed;
    method.evidence.map.seed = seed;
    const FittedModel model = fit(spec, data, method);
    std::printf("fit: %s — %s\n", to_string(model.summary.termination), model.summary.message.c_str());

    Posterior post(model.network->clone(), model.likelihood->clone(), model.prior,
                   model.standardizer.transform_inputs(data.X), model.standardizer.transform_targets(data.Y));
    const Index G = post.prior().num_hyperparameters(), K = G + 1;
    Eigen::VectorXd phi(K);
    phi << post.prior().hyperparameters().array().log().matrix(), std::log(post.likelihood().precision());
    Point current = at(&post, phi, posterior_mean(model.posterior));
    if (!current.ok) throw Error(ErrorKind::kNumerical, "no stationary point near the fit's w");
    std::printf("at the fit's end: %s\n", hyperparameters(phi).c_str());
    double start = current.log_z;
    bool started_feasible = current.lambda[0] >= -1e-5;
    double radius = 0.1;
    for (int it = 0; it <= iterations; ++it) {
      // The constraints at zero: clusters of eigenvalues below 1e-5 of the median one (the
      // boundary is held at ε; a larger eigenvalue is a constraint not yet reached).
      const Index W = current.lambda.size();
      const double small = 1e-5 * std::max(1e-2, current.lambda[W / 2]);
      std::vector<std::pair<Index, Index>> clusters;
      for (Index i = 0; i < W && current.lambda[i] < small;) {
        Index j = i + 1;
        while (j < W &&
               std::abs(current.lambda[j] - current.lambda[i]) <= 1e-6 * std::max(1e-3, std::abs(current.lambda[i])))
          ++j;
        clusters.push_back({i, j});
        i = j;
      }
      const Index C = static_cast<Index>(clusters.size());
      Eigen::MatrixXd N(C, K);
      Eigen::VectorXd g(K);
      for (Index k = 0; k < K; ++k) {
        Eigen::VectorXd up = phi, down = phi;
        up[k] += kStep;
        down[k] -= kStep;
        const Point a = at(&post, up, current.w), b = at(&post, down, current.w);
        if (!a.ok || !b.ok) throw Error(ErrorKind::kNumerical, "a difference step left the branch");
        const Eigen::MatrixXd dH = (a.H - b.H) / (2.0 * kStep);
        for (Index c = 0; c < C; ++c) {
          double sum = 0.0;
          for (Index i = clusters[c].first; i < clusters[c].second; ++i)
            sum += current.V.col(i).dot(dH * current.V.col(i));
          N(c, k) = sum / static_cast<double>(clusters[c].second - clusters[c].first);
        }
        g[k] = (a.log_z - b.log_z) / (2.0 * kStep);
      }
      // The active set: constraints below zero, or whose multiplier μ_c = −[(NNᵀ)⁻¹Ng]_c is positive.
      std::vector<Index> active;
      for (Index c = 0; c < C; ++c) active.push_back(c);
      Eigen::VectorXd t = g;
      Eigen::MatrixXd Na;
      for (int pass = 0; pass < 5; ++pass) {
        Na.resize(static_cast<Index>(active.size()), K);
        for (std::size_t a = 0; a < active.size(); ++a) Na.row(static_cast<Index>(a)) = N.row(active[a]);
        const Eigen::VectorXd mu =
            active.empty() ? Eigen::VectorXd() : Eigen::VectorXd(-(Na * Na.transpose()).ldlt().solve(Na * g));
        t = active.empty() ? g : Eigen::VectorXd(g + Na.transpose() * mu);
        std::vector<Index> keep;
        for (std::size_t a = 0; a < active.size(); ++a) {
          if (mu[static_cast<Index>(a)] > 0.0 || current.lambda[clusters[active[a]].first] < 0.0)
            keep.push_back(active[a]);
        }
        if (keep.size() == active.size()) break;
        active = std::move(keep);
      }
      const double tangential = t.cwiseAbs().maxCoeff();
      std::printf(
          "step %2d: L %.10g, smallest eigenvalue %+.3e, %ld constraint(s) of %ld near zero, max |g| %.4g, max |t| %.3e\n",
          it, current.log_z, current.lambda[0], static_cast<long>(active.size()), static_cast<long>(C),
          g.cwiseAbs().maxCoeff(), tangential);
      if (tangential <= kTolerance) {
        std::printf("KKT: the tangential gradient is below %g with %ld constraint(s) at zero\n", kTolerance,
                    static_cast<long>(active.size()));
        break;
      }
      if (it == iterations) break;
      // From a saddle (some λ_c < 0) the first move is back to the boundary alone, whatever it
      // costs in L: L is compared only between points where w is a minimum.
      const bool feasible = current.lambda[0] >= -1e-5;
      bool moved = false;
      for (int tries = 0; tries < 40 && !moved; ++tries) {
        Eigen::VectorXd trial_phi = feasible ? Eigen::VectorXd(phi + radius * t / tangential) : phi;
        Point trial = at(&post, trial_phi, current.w);
        for (int c = 0; c < 5 && trial.ok && !active.empty(); ++c) {  // back to λ_c = ε, least norm
          Eigen::VectorXd violation(static_cast<Index>(active.size()));
          // Only what lies below zero is moved back (to ε); a constraint above it is met.
          for (std::size_t a = 0; a < active.size(); ++a) {
            const double lambda = trial.lambda[clusters[active[a]].first];
            violation[static_cast<Index>(a)] = lambda < 0.0 ? kEpsilon - lambda : 0.0;
          }
          if (violation.maxCoeff() <= 0.0) break;
          Eigen::VectorXd back = Na.transpose() * (Na * Na.transpose()).ldlt().solve(violation);
          if (back.cwiseAbs().maxCoeff() > 0.5) back *= 0.5 / back.cwiseAbs().maxCoeff();
          trial_phi += back;
          trial = at(&post, trial_phi, trial.w);
        }
        if (trial.ok && trial.lambda[0] > -1e-5 && (!feasible || trial.log_z > current.log_z)) {
          if (!feasible) std::printf("to the boundary: L %.10g, %s\n", trial.log_z, hyperparameters(trial_phi).c_str());
          if (!feasible && !started_feasible) {
            start = trial.log_z;
            started_feasible = true;
          }
          phi = trial_phi;
          current = std::move(trial);
          radius *= 2.0;
          moved = true;
        } else {
          radius *= 0.5;
        }
      }
      if (!moved) {
        std::printf("no step along the boundary raises L\n");
        break;
      }
    }
    std::printf("L %.10g where w first is a minimum, %.10g at the end (%+.4g); smallest eigenvalues", start,
                current.log_z, current.log_z - start);
    for (Index i = 0; i < std::min<Index>(4, current.lambda.size()); ++i) std::printf(" %.3e", current.lambda[i]);
    std::printf("\nat the end: %s\n", hyperparameters(phi).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "evidence_boundary: %s\n", e.what());
    return 1;
  }
  return 0;
}
