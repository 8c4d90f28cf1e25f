// demo_mcmc.h — `occam demo mcmc`, and the pieces of `occam demo` it shares.
#pragma once

#include <string>

#include "commands.h"
#include "occam/data.h"
#include "occam/rng.h"

namespace occam::cli {

// The demo's toy data: x uniform on [−1, −0.3] ∪ [0.3, 1], y = sin(πx) + N(0, 0.1²) (demo.cc).
Dataset toy_data(Eigen::Index m, Rng& rng);

// Registers `mcmc` under the demo command.
Command add_demo_mcmc_command(CLI::App& demo);

}  // namespace occam::cli
