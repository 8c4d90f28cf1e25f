// method_options.h — the Python module's method options, a JSON object whose keys are the
// command line's flags (docs/python.md, "Parameters and flags"), as the library's MethodOptions.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "occam/fit.h"

namespace occam::python {

// {"method": "laplace"|"map"|"vi"|"nuts"|"hmc"|"metropolis", "seed": ..., "hyper": ..., ...}; a key
// left out keeps the library's default. Throws Error(kInvalidArgument) naming the key and value.
MethodOptions method_from_json(const nlohmann::json& j);

}  // namespace occam::python
