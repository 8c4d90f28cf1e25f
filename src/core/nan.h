// nan.h (internal) — the quiet NaN that marks a value a method does not compute (a summary's
// log-evidence where there is none, a train RMSE before it is known, R-hat of a constant draw).
// One definition for the files that use it: the unity build compiles several of them in one unit,
// where two definitions in anonymous namespaces collide.
#pragma once

#include <limits>

namespace occam {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace occam
