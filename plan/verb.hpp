// The one name of each instruction kind: "load", "fwd", "bwd", "send", "recv", the collective's
// operation ("all_reduce", "reduce_scatter", "all_gather"), "opt" and "wait". Schedules' text and
// JSON, the executor's run records and traces, and the simulator's traces all print it; readers of
// old run records accept the spelling they used ("optimizer") through canonical_verb. Not here: the
// rest of an instruction's line (schedule_text.cpp).
#pragma once
#include <string>

#include "plan/schedule.hpp"

namespace fabtrain {

const char* verb(const Instruction& instruction);
// The verb a recorded kind names: itself, or the current spelling of an older one.
std::string canonical_verb(const std::string& kind);
// Whether instructions of this verb move data between ranks (send, recv, collectives, and the
// wait of a non-blocking one: a start only launches the transfer, the wait is where the rank
// spends the communication that did not hide behind compute).
bool is_communication(const Instruction& instruction);
// The same by verb, for a record that names only the verb (a trace's event, an older run record).
bool is_communication_verb(const std::string& verb);
// The request a start or a wait carries; -1 for a blocking instruction or one without any.
int request_of(const Instruction& instruction);

}  // namespace fabtrain
