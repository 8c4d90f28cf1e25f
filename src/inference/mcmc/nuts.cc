#include "occam/mcmc/nuts.h"

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "occam/status.h"

namespace occam::mcmc {
namespace {

constexpr double kNegativeInfinity = -std::numeric_limits<double>::infinity();

double log_sum_exp(double a, double b) {
  if (a == kNegativeInfinity) return b;
  if (b == kNegativeInfinity) return a;
  const double m = std::max(a, b);
  return m + std::log(std::exp(a - m) + std::exp(b - m));
}

// A stretch of consecutive trajectory points, described by what the no-U-turn criterion needs:
// the momenta at its two ends and their velocities M⁻¹p (Betancourt's "sharp" momenta), and ρ,
// the sum of the momenta over all its points. The ends are named by integration time, whichever
// direction the stretch was built in: `backward` is its earliest point, `forward` its latest.
struct Span {
  Eigen::VectorXd p_backward, p_sharp_backward;
  Eigen::VectorXd p_forward, p_sharp_forward;
  Eigen::VectorXd rho;
};

// The generalised no-U-turn criterion (Betancourt 2017, "A Conceptual Introduction to Hamiltonian
// Monte Carlo", appendix A.4.2): a stretch has not turned back on itself while its summed momentum
// ρ still points along the velocities at both of its ends, p♯₋·ρ > 0 and p♯₊·ρ > 0.
template <class Rho>
bool no_u_turn(const Eigen::VectorXd& p_sharp_backward, const Eigen::VectorXd& p_sharp_forward,
               const Eigen::MatrixBase<Rho>& rho) {
  return p_sharp_forward.dot(rho) > 0 && p_sharp_backward.dot(rho) > 0;
}

// Joins two adjacent stretches — `earlier` ends one leapfrog step before `later` begins — into
// *joined, and tells whether the trajectory may go on growing. The criterion must hold across the
// joined stretch, whose ends are the *outer* ends of the two (earlier's backward end, later's
// forward end), and, as Stan checks it, across each stretch extended by the neighbouring point of
// the other: a U-turn at the seam between them is invisible to either stretch alone. Every check
// reads only the ends the two stretches really have, so the answer does not depend on which of
// them was built first; that symmetry is what keeps the sampler reversible.
bool join(const Span& earlier, const Span& later, Span* joined) {
  bool persist = no_u_turn(earlier.p_sharp_backward, later.p_sharp_forward, earlier.rho + later.rho);
  persist = persist && no_u_turn(earlier.p_sharp_backward, later.p_sharp_backward, earlier.rho + later.p_backward);
  persist = persist && no_u_turn(earlier.p_sharp_forward, later.p_sharp_forward, later.rho + earlier.p_forward);
  joined->rho = earlier.rho + later.rho;
  joined->p_backward = earlier.p_backward;
  joined->p_sharp_backward = earlier.p_sharp_backward;
  joined->p_forward = later.p_forward;
  joined->p_sharp_forward = later.p_sharp_forward;
  return persist;
}

// Scratch for the subtree being built at one depth: its two halves and the far half's draw. The
// recursion is depth-first, so one subtree per depth is being built at any time.
struct TreeLevel {
  Span near_half, far_half;
  PhasePoint far_proposal;
};

// The state of one transition while its tree grows (Hoffman & Gelman 2014, Alg. 3, with
// multinomial instead of slice sampling, Betancourt 2017 §A.3): what every leaf adds to.
class TreeBuilder {
 public:
  TreeBuilder(const Hamiltonian& hamiltonian, double step_size, double H0, std::vector<TreeLevel>* levels)
      : hamiltonian_(hamiltonian), step_size_(step_size), H0_(H0), levels_(*levels) {}

  // Builds a subtree of 2^depth leapfrog steps from *z in direction `sign` (+1 forwards in time,
  // −1 backwards), leaving *z at its outermost point. Its ends and ρ go to *span, a draw from it
  // (multinomial in the weights e^{H0 − H}) to *proposal, the log of its summed weights to
  // *log_weight. Returns false when the subtree diverged or turned back on itself inside; the
  // caller then discards it.
  bool build(int depth, double sign, PhasePoint* z, Span* span, PhasePoint* proposal, double* log_weight, Rng& rng) {
    if (depth == 0) return leaf(sign, z, span, proposal, log_weight);

    // The half nearer the start is built first; in time order it is the earlier half when
    // building forwards and the later one when building backwards.
    auto& level = levels_[static_cast<std::size_t>(depth)];
    double log_weight_near = kNegativeInfinity;
    if (!build(depth - 1, sign, z, &level.near_half, proposal, &log_weight_near, rng)) return false;
    double log_weight_far = kNegativeInfinity;
    if (!build(depth - 1, sign, z, &level.far_half, &level.far_proposal, &log_weight_far, rng)) return false;

    // Uniform progressive sampling between the halves: the far half's draw replaces the near
    // half's with probability w_far / (w_near + w_far).
    *log_weight = log_sum_exp(log_weight_near, log_weight_far);
    if (log_weight_far > *log_weight || rng.uniform() < std::exp(log_weight_far - *log_weight)) {
      std::swap(*proposal, level.far_proposal);
    }
    return sign > 0 ? join(level.near_half, level.far_half, span) : join(level.far_half, level.near_half, span);
  }

  int leapfrog_steps() const { return leapfrog_steps_; }
  double sum_accept_probability() const { return sum_accept_probability_; }
  bool divergent() const { return divergent_; }

 private:
  // One leapfrog step: a subtree of one point.
  bool leaf(double sign, PhasePoint* z, Span* span, PhasePoint* proposal, double* log_weight) {
    hamiltonian_.leapfrog(z, sign * step_size_);
    ++leapfrog_steps_;
    double H = hamiltonian_.energy(*z);
    if (!std::isfinite(H)) H = std::numeric_limits<double>::infinity();
    if (H - H0_ > kMaxEnergyError) divergent_ = true;
    *log_weight = H0_ - H;
    sum_accept_probability_ += H0_ - H > 0 ? 1.0 : std::exp(H0_ - H);
    *proposal = *z;
    span->p_backward = z->p;
    span->p_forward = z->p;
    span->p_sharp_backward = hamiltonian_.velocity(z->p);
    span->p_sharp_forward = span->p_sharp_backward;
    span->rho = z->p;
    return !divergent_;
  }

  const Hamiltonian& hamiltonian_;
  const double step_size_;
  const double H0_;
  std::vector<TreeLevel>& levels_;
  int leapfrog_steps_ = 0;
  double sum_accept_probability_ = 0.0;
  bool divergent_ = false;
};

}  // namespace

// Kept between transitions, so that a transition allocates no tree storage once a tree has been
// that deep before: levels[d] for the subtree being built at depth d, then the trajectory's own.
struct NutsKernel::Workspace {
  std::vector<TreeLevel> levels;
  Span trajectory, subtree, extended;
  PhasePoint z_backward, z_forward, sample, proposal;
};

void NutsOptions::validate() const {
  if (max_depth < 1 || max_depth > 30) invalid_option("NutsOptions", "max_depth", max_depth, "must be in [1, 30]");
}

NutsKernel::NutsKernel(const Hamiltonian& hamiltonian, NutsOptions options)
    : hamiltonian_(hamiltonian), options_(options), workspace_(std::make_unique<Workspace>()) {
  options_.validate();
  workspace_->levels.resize(static_cast<std::size_t>(options_.max_depth));
}

NutsKernel::~NutsKernel() = default;

// Stan's base_nuts transition: the trajectory doubles in a random direction until it turns back
// on itself (checked across the whole trajectory and at the seam with each new subtree) or
// reaches the maximum depth, and the draw is taken by biased progressive sampling between the old
// trajectory and each new subtree (Betancourt 2017, §A.3.2), which favours the new subtree.
TransitionInfo NutsKernel::transition(PhasePoint* z0, Rng& rng) {
  Workspace& w = *workspace_;
  w.z_forward = *z0;
  hamiltonian_.sample_momentum(&w.z_forward, rng);
  w.z_backward = w.z_forward;
  w.sample = w.z_forward;
  const double H0 = hamiltonian_.energy(w.z_forward);
  TreeBuilder tree(hamiltonian_, step_size_, H0, &w.levels);

  // The trajectory so far: the initial point alone, of weight e^{H0 − H0} = 1.
  Span& trajectory = w.trajectory;
  trajectory.p_backward = trajectory.p_forward = trajectory.rho = w.z_forward.p;
  trajectory.p_sharp_backward = hamiltonian_.velocity(w.z_forward.p);
  trajectory.p_sharp_forward = trajectory.p_sharp_backward;
  double log_weight = 0.0;

  int depth = 0;
  while (depth < options_.max_depth) {
    const double sign = rng.uniform() > 0.5 ? 1.0 : -1.0;
    PhasePoint* end = sign > 0 ? &w.z_forward : &w.z_backward;
    double log_weight_subtree = kNegativeInfinity;
    if (!tree.build(depth, sign, end, &w.subtree, &w.proposal, &log_weight_subtree, rng)) break;
    ++depth;

    // Biased progressive sampling: move to the new subtree's draw with probability
    // min(1, w_subtree / w_old).
    if (log_weight_subtree > log_weight || rng.uniform() < std::exp(log_weight_subtree - log_weight)) {
      std::swap(w.sample, w.proposal);
    }
    log_weight = log_sum_exp(log_weight, log_weight_subtree);

    const bool persist = sign > 0 ? join(trajectory, w.subtree, &w.extended) : join(w.subtree, trajectory, &w.extended);
    std::swap(trajectory, w.extended);
    if (!persist) break;
  }

  TransitionInfo info;
  info.tree_depth = depth;
  info.n_leapfrog = tree.leapfrog_steps();
  info.divergent = tree.divergent();
  info.step_size = step_size_;
  info.accept_stat = info.n_leapfrog > 0 ? tree.sum_accept_probability() / info.n_leapfrog : 0.0;
  *z0 = w.sample;
  info.energy = hamiltonian_.energy(*z0);
  return info;
}

}  // namespace occam::mcmc
