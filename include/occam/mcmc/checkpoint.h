// checkpoint.h — a chain's state (ChainState) as JSON that reads back exactly, for runs that
// survive interruption.
//
// Every double is written as a C99 hexadecimal float ("0x1.91eb851eb851fp+1"), which names the
// binary value itself, so a state read back is bit for bit the one written (NaN and ±inf too);
// the random stream is Rng::save()'s text. kept_draws is not written.
//
//   nlohmann::json j = occam::mcmc::chain_state_to_json(state);
//   occam::mcmc::ChainState same = occam::mcmc::chain_state_from_json(j);
#pragma once

#include <nlohmann/json.hpp>

#include "occam/mcmc/sampler.h"

namespace occam::mcmc {

nlohmann::json chain_state_to_json(const ChainState& state);
// Throws Error(kInvalidInput) naming the field that is missing or malformed.
ChainState chain_state_from_json(const nlohmann::json& j);

}  // namespace occam::mcmc
