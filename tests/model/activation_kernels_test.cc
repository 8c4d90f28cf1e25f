// The AVX2 tanh kernel, chosen at run time, gives the portable kernel's bits on every input, so a
// fit's numbers do not depend on the CPU's vector width (src/model/activation_kernels.h).
#include "model/activation_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "occam/mlp.h"
#include "occam/rng.h"
#include "testing/bitwise.h"

namespace occam {
namespace {

// Inputs where a kernel could part from the other: ±0, subnormals, the smallest and largest
// doubles, ±∞, values about the cap (|a| = 20) and about the points where rint(−2a/ln 2) changes
// (a = (j + ½)·ln 2/2), a fine grid over [−25, 25], tiny values where tanh a ≈ a, and normal draws.
std::vector<double> awkward_inputs() {
  std::vector<double> x = {0.0,
                           -0.0,
                           std::numeric_limits<double>::denorm_min(),
                           -std::numeric_limits<double>::denorm_min(),
                           std::numeric_limits<double>::min(),
                           std::numeric_limits<double>::max(),
                           -std::numeric_limits<double>::max(),
                           std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity(),
                           20.0,
                           -20.0,
                           std::nextafter(20.0, 0.0),
                           std::nextafter(20.0, 30.0),
                           1e-300,
                           -1e-17,
                           3e-9};
  for (int j = -60; j <= 60; ++j) {
    const double tie = (j + 0.5) * std::log(2.0) / 2.0;
    for (const double d : {-1e-15, 0.0, 1e-15}) x.push_back(tie + d);
  }
  for (int i = 0; i <= 100000; ++i) x.push_back(-25.0 + 50.0 * i / 100000.0);
  Rng rng(17);
  for (int i = 0; i < 20000; ++i) x.push_back(3.0 * rng.normal());
  for (int i = -320; i <= 0; ++i) x.push_back(std::pow(10.0, i / 4.0));
  return x;
}

TEST(ActivationKernels, Avx2TanhHasThePortableBits) {
  const std::vector<double> inputs = awkward_inputs();
  std::vector<double> fast = inputs, portable = inputs;
  if (!internal::tanh_avx2(fast.data(), static_cast<Index>(fast.size()))) {
    GTEST_SKIP() << "this CPU or build has no run-time AVX2 kernel (the portable one is the only one)";
  }
  internal::tanh_portable(portable.data(), static_cast<Index>(portable.size()));
  int differ = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (std::memcmp(&fast[i], &portable[i], sizeof(double)) != 0 && ++differ <= 5) {
      ADD_FAILURE() << "tanh(" << inputs[i] << "): AVX2 " << fast[i] << ", portable " << portable[i];
    }
  }
  EXPECT_EQ(differ, 0) << "of " << inputs.size();
  // NaN stays NaN in both; every length's last one to three go through the portable kernel, after
  // rounds of sixteen and of four.
  for (Index n = 1; n <= 40; ++n) {
    std::vector<double> a(static_cast<std::size_t>(n), std::numeric_limits<double>::quiet_NaN()), b;
    for (Index i = 0; i + 1 < n; i += 2) a[static_cast<std::size_t>(i)] = 0.37 * static_cast<double>(i) - 1.1;
    b = a;
    ASSERT_TRUE(internal::tanh_avx2(a.data(), n));
    internal::tanh_portable(b.data(), n);
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (std::isnan(b[i])) {
        EXPECT_TRUE(std::isnan(a[i])) << n << ", " << i;
      } else {
        EXPECT_EQ(std::memcmp(&a[i], &b[i], sizeof(double)), 0) << n << ", " << i;
      }
    }
  }
}

// Both kernels are accurate to a few ulp against the C library's tanh.
TEST(ActivationKernels, TanhIsWithinAFewUlpOfTheLibrary) {
  std::vector<double> x = awkward_inputs();
  internal::tanh_in_place(x.data(), static_cast<Index>(x.size()));
  const std::vector<double> inputs = awkward_inputs();
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double exact = std::tanh(inputs[i]);
    EXPECT_LE(std::abs(x[i] - exact), 4.0 * std::numeric_limits<double>::epsilon() * std::abs(exact) + 1e-300)
        << "tanh(" << inputs[i] << ")";
  }
}

// A network's forward pass with the kernel switched off and on: the same bits.
TEST(ActivationKernels, ANetworksOutputsDoNotDependOnTheKernel) {
  const Mlp net(5, {64, 64}, Activation::kTanh, 2);
  Rng rng(3);
  const Eigen::VectorXd w = net.initial_params(rng);
  Eigen::MatrixXd X(333, 5);
  for (Index i = 0; i < X.size(); ++i) X.data()[i] = 2.0 * rng.normal();
  Eigen::MatrixXd on, off;
  net.forward(w, X, &on);
  internal::allow_avx2_kernels(false);
  net.forward(w, X, &off);
  internal::allow_avx2_kernels(true);
  EXPECT_TRUE(testing::bitwise_equal(on, off));
}

}  // namespace
}  // namespace occam
