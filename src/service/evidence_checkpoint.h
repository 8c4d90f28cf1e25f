// evidence_checkpoint.h (internal) — LaplaceMethod::checkpoint: the joint evidence ascent's state
// (EvidenceCheckpoint) in a versioned JSON file, with what the fit depends on, so that a fit
// stopped or killed continues where its last step ended.
//
//   const nlohmann::json fingerprint = laplace_fingerprint(spec, method, data_fingerprint(data));
//   options.resume = read_evidence_checkpoint(path, fingerprint);   // null without a file
//   options.checkpoint = [&](const EvidenceCheckpoint& c) { write_evidence_checkpoint(path, fingerprint, c); };
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "occam/evidence.h"
#include "occam/fit.h"

namespace occam::internal {

// What a Laplace fit depends on: the spec, the method's options (method_to_json), its start (seed,
// stream and a checksum of given weights) and the data (data_fingerprint). A committee member's file
// and a checkpoint both carry it.
nlohmann::json laplace_fingerprint(const ModelSpec& spec, const LaplaceMethod& method, const nlohmann::json& data);

// Writes the checkpoint atomically (a file is whole or absent). Doubles are written as the
// shortest decimal that reads back as the same double, so a resume goes on from the same bits.
void write_evidence_checkpoint(const std::string& path, const nlohmann::json& fingerprint,
                               const EvidenceCheckpoint& checkpoint);

// The checkpoint in `path`, or null when there is no such file. Throws Error(kInvalidArgument)
// when it was written by a fit with another fingerprint (naming the fields that differ) and
// Error(kInvalidInput) when it is damaged.
std::shared_ptr<const EvidenceCheckpoint> read_evidence_checkpoint(const std::string& path,
                                                                   const nlohmann::json& fingerprint);

}  // namespace occam::internal
