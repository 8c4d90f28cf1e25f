#include "occam/mcmc/nuts.h"

#include <cmath>
#include <limits>

#include "occam/status.h"

namespace occam::mcmc {
namespace {

double log_sum_exp(double a, double b) {
  if (a == -std::numeric_limits<double>::infinity()) return b;
  if (b == -std::numeric_limits<double>::infinity()) return a;
  const double m = std::max(a, b);
  return m + std::log(std::exp(a - m) + std::exp(b - m));
}

// Betancourt (2017), §A.4.2: the trajectory has not turned while the summed momentum ρ still
// points along the velocities at both ends.
bool no_u_turn(const Eigen::VectorXd& p_sharp_minus, const Eigen::VectorXd& p_sharp_plus,
               const Eigen::VectorXd& rho) {
  return p_sharp_plus.dot(rho) > 0 && p_sharp_minus.dot(rho) > 0;
}

}  // namespace

void NutsOptions::validate() const {
  if (max_depth < 1 || max_depth > 30) invalid_option("NutsOptions", "max_depth", max_depth, "must be in [1, 30]");
}

NutsKernel::NutsKernel(const Hamiltonian& hamiltonian, NutsOptions options)
    : hamiltonian_(hamiltonian), options_(options) {
  options_.validate();
}

// Stan's base_nuts::transition (multinomial sampling with biased progressive sampling between
// subtrees, Betancourt 2017 §A.3.2; checks of the criterion across the merged subtrees).
TransitionInfo NutsKernel::transition(PhasePoint* z0, Rng& rng) {
  PhasePoint z = *z0;
  hamiltonian_.sample_momentum(&z, rng);
  const Eigen::Index d = z.q.size();

  PhasePoint z_fwd = z, z_bck = z, z_sample = z, z_propose = z;
  Eigen::VectorXd p_fwd_fwd = z.p, p_sharp_fwd_fwd = hamiltonian_.velocity(z.p);
  Eigen::VectorXd p_fwd_bck = z.p, p_sharp_fwd_bck = p_sharp_fwd_fwd;
  Eigen::VectorXd p_bck_fwd = z.p, p_sharp_bck_fwd = p_sharp_fwd_fwd;
  Eigen::VectorXd p_bck_bck = z.p, p_sharp_bck_bck = p_sharp_fwd_fwd;
  Eigen::VectorXd rho = z.p;

  double log_sum_weight = 0.0;  // log of the weight e^{−H+H0} of the initial point
  const double H0 = hamiltonian_.energy(z);
  int n_leapfrog = 0;
  double sum_metro_prob = 0.0;
  int depth = 0;
  divergent_ = false;

  while (depth < options_.max_depth) {
    Eigen::VectorXd rho_fwd = Eigen::VectorXd::Zero(d), rho_bck = Eigen::VectorXd::Zero(d);
    bool valid_subtree = false;
    double log_sum_weight_subtree = -std::numeric_limits<double>::infinity();

    if (rng.uniform() > 0.5) {  // extend forwards
      z = z_fwd;
      rho_bck = rho;
      p_bck_fwd = p_fwd_bck;
      p_sharp_bck_fwd = p_sharp_fwd_bck;
      valid_subtree = build_tree(depth, &z, &z_propose, &p_sharp_fwd_bck, &p_sharp_fwd_fwd, &rho_fwd, &p_fwd_bck,
                                 &p_fwd_fwd, H0, 1.0, &n_leapfrog, &log_sum_weight_subtree, &sum_metro_prob, rng);
      z_fwd = z;
    } else {  // extend backwards
      z = z_bck;
      rho_fwd = rho;
      p_fwd_bck = p_bck_fwd;
      p_sharp_fwd_bck = p_sharp_bck_fwd;
      valid_subtree = build_tree(depth, &z, &z_propose, &p_sharp_bck_fwd, &p_sharp_bck_bck, &rho_bck, &p_bck_fwd,
                                 &p_bck_bck, H0, -1.0, &n_leapfrog, &log_sum_weight_subtree, &sum_metro_prob, rng);
      z_bck = z;
    }
    if (!valid_subtree) break;
    ++depth;

    // Biased progressive sampling: prefer the new subtree in proportion to its weight.
    if (log_sum_weight_subtree > log_sum_weight) {
      z_sample = z_propose;
    } else if (rng.uniform() < std::exp(log_sum_weight_subtree - log_sum_weight)) {
      z_sample = z_propose;
    }
    log_sum_weight = log_sum_exp(log_sum_weight, log_sum_weight_subtree);

    rho = rho_bck + rho_fwd;
    bool persist = no_u_turn(p_sharp_bck_bck, p_sharp_fwd_fwd, rho);
    // The criterion across the two merged subtrees, each extended by the other's first point.
    Eigen::VectorXd rho_extended = rho_bck + p_fwd_bck;
    persist = persist && no_u_turn(p_sharp_bck_bck, p_sharp_fwd_bck, rho_extended);
    rho_extended = rho_fwd + p_bck_fwd;
    persist = persist && no_u_turn(p_sharp_bck_fwd, p_sharp_fwd_fwd, rho_extended);
    if (!persist) break;
  }

  TransitionInfo info;
  info.tree_depth = depth;
  info.n_leapfrog = n_leapfrog;
  info.divergent = divergent_;
  info.step_size = step_size_;
  info.accept_stat = n_leapfrog > 0 ? sum_metro_prob / n_leapfrog : 0.0;
  *z0 = z_sample;
  info.energy = hamiltonian_.energy(*z0);
  return info;
}

bool NutsKernel::build_tree(int depth, PhasePoint* z, PhasePoint* propose, Eigen::VectorXd* p_sharp_begin,
                            Eigen::VectorXd* p_sharp_end, Eigen::VectorXd* rho, Eigen::VectorXd* p_begin,
                            Eigen::VectorXd* p_end, double H0, double sign, int* n_leapfrog,
                            double* log_sum_weight, double* sum_metro_prob, Rng& rng) {
  if (depth == 0) {  // one leapfrog step
    hamiltonian_.leapfrog(z, sign * step_size_);
    ++*n_leapfrog;
    double h = hamiltonian_.energy(*z);
    if (!std::isfinite(h)) h = std::numeric_limits<double>::infinity();
    if (h - H0 > kMaxEnergyError) divergent_ = true;
    *log_sum_weight = log_sum_exp(*log_sum_weight, H0 - h);
    *sum_metro_prob += H0 - h > 0 ? 1.0 : std::exp(H0 - h);
    *propose = *z;
    *p_sharp_begin = hamiltonian_.velocity(z->p);
    *p_sharp_end = *p_sharp_begin;
    *rho += z->p;
    *p_begin = z->p;
    *p_end = *p_begin;
    return !divergent_;
  }
  const Eigen::Index d = z->q.size();

  // The first half of the subtree.
  double log_sum_weight_init = -std::numeric_limits<double>::infinity();
  Eigen::VectorXd p_init_end(d), p_sharp_init_end(d), rho_init = Eigen::VectorXd::Zero(d);
  if (!build_tree(depth - 1, z, propose, p_sharp_begin, &p_sharp_init_end, &rho_init, p_begin, &p_init_end, H0, sign,
                  n_leapfrog, &log_sum_weight_init, sum_metro_prob, rng)) {
    return false;
  }
  // The second half.
  PhasePoint propose_final = *z;
  double log_sum_weight_final = -std::numeric_limits<double>::infinity();
  Eigen::VectorXd p_final_begin(d), p_sharp_final_begin(d), rho_final = Eigen::VectorXd::Zero(d);
  if (!build_tree(depth - 1, z, &propose_final, &p_sharp_final_begin, p_sharp_end, &rho_final, &p_final_begin, p_end,
                  H0, sign, n_leapfrog, &log_sum_weight_final, sum_metro_prob, rng)) {
    return false;
  }

  // Multinomial sampling between the halves (uniform progressive sampling inside a subtree).
  const double log_sum_weight_subtree = log_sum_exp(log_sum_weight_init, log_sum_weight_final);
  *log_sum_weight = log_sum_exp(*log_sum_weight, log_sum_weight_subtree);
  if (log_sum_weight_final > log_sum_weight_subtree) {
    *propose = propose_final;
  } else if (rng.uniform() < std::exp(log_sum_weight_final - log_sum_weight_subtree)) {
    *propose = propose_final;
  }

  const Eigen::VectorXd rho_subtree = rho_init + rho_final;
  *rho += rho_subtree;
  bool persist = no_u_turn(*p_sharp_begin, *p_sharp_end, rho_subtree);
  Eigen::VectorXd rho_extended = rho_init + p_final_begin;
  persist = persist && no_u_turn(*p_sharp_begin, p_sharp_final_begin, rho_extended);
  rho_extended = rho_final + p_init_end;
  persist = persist && no_u_turn(p_sharp_init_end, *p_sharp_end, rho_extended);
  return persist;
}

}  // namespace occam::mcmc
