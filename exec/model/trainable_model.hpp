// The models the executor can run: GPT-2 as published. The cost model also takes a config.json
// with another MLP width (n_inner), an untied output layer or another activation, but the CPU
// and CUDA stages, llm.c's checkpoint format and the bench's matrix shapes are stock GPT-2's, so
// every executor command that computes with the model refuses those settings by name here.
#pragma once
#include <string>
#include <string_view>

#include "models/model_spec.hpp"

namespace fabtrain {

// load_model(name_or_path), refused with the settings that differ from stock GPT-2 when there
// are any; `command` names the subcommand in the message ("train").
ModelSpec load_trainable_model(const std::string& name_or_path, std::string_view command);

}  // namespace fabtrain
