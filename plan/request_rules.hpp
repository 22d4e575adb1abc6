// The request rules of one rank's stream, checked without playing it: a start (a Send, Recv or
// Collective with request >= 0) uses a request no earlier start of the step used, and is not a
// collective whose result the next instruction needs (tensor-parallel sums, the tied-embedding
// sum, the gradient norm); a Wait comes after its start, waits for the same kind of transfer,
// and only once; every start is waited by the end of the step. symbolic_run checks every rank's
// stream so before playing them together, and each player (sim/, exec/) checks its rank's
// before playing it, so no player keeps a rule of its own.
// Not here: the rules between ranks (matching sends and collectives, deadlocks: symbolic_run).
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "plan/schedule.hpp"

namespace fabtrain {

struct RequestError {
  std::size_t at = 0;  // the offending instruction's position in the stream
  std::string why;
};

// The first rule the stream breaks, in stream order; empty when it keeps them all.
std::optional<RequestError> request_error(const std::vector<Instruction>& stream);

// Fails with "rank R at #N '<instruction>': <why>" when rank's stream breaks a rule.
void check_requests(const std::vector<Instruction>& stream, int rank);

}  // namespace fabtrain
