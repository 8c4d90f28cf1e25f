// The time left of countable work (occam/time_left.h), on a clock the test sets.

#include "occam/time_left.h"

#include <gtest/gtest.h>

#include <cmath>

namespace occam {
namespace {

using std::chrono::seconds;

TEST(TimeLeft, ExtrapolatesTheRateSinceTheClockStarted) {
  const TimeLeft::Clock::time_point t0{};
  TimeLeft left;
  left.begin(0.0, t0);
  // 25 of 100 in 10 s: 75 more at the same rate take 30 s.
  ASSERT_TRUE(left.seconds(25, 100, t0 + seconds(10)).has_value());
  EXPECT_DOUBLE_EQ(*left.seconds(25, 100, t0 + seconds(10)), 30.0);
  EXPECT_EQ(left.describe(25, 100, t0 + seconds(10)), "ETA 30s");
  // Work done before the clock started does not count towards the rate.
  TimeLeft resumed;
  resumed.begin(50.0, t0);
  EXPECT_DOUBLE_EQ(*resumed.seconds(60, 100, t0 + seconds(20)), 80.0);
}

TEST(TimeLeft, SaysNothingWhileTooEarlyAndWhenDone) {
  const TimeLeft::Clock::time_point t0{};
  TimeLeft left;
  EXPECT_FALSE(left.seconds(0, 100, t0).has_value());  // the first count starts the clock
  EXPECT_TRUE(left.started());
  EXPECT_FALSE(left.seconds(50, 100, t0 + seconds(2)).has_value());    // under kMinSeconds
  EXPECT_FALSE(left.seconds(0.5, 100, t0 + seconds(60)).has_value());  // under 1% done
  EXPECT_FALSE(left.seconds(100, 100, t0 + seconds(60)).has_value());  // done
  EXPECT_EQ(left.describe(100, 100, t0 + seconds(60)), "");
}

TEST(FormatDuration, ReadsAsAPersonWouldWriteIt) {
  EXPECT_EQ(format_duration(44.6), "45s");
  EXPECT_EQ(format_duration(192), "3m12s");
  EXPECT_EQ(format_duration(3840), "1h04m");
  EXPECT_EQ(format_duration(-5), "0s");
  EXPECT_EQ(format_duration(std::nan("")), "0s");
}

}  // namespace
}  // namespace occam
