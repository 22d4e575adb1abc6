#include "exec/model/trainable_model.hpp"

#include "common/error.hpp"

namespace fabtrain {

ModelSpec load_trainable_model(const std::string& name_or_path, std::string_view command) {
  ModelSpec model = load_model(name_or_path);
  if (!model.is_stock_gpt2())
    fail(
        "--model {}: fabtrain-exec {} runs stock GPT-2 only (n_inner null or 4*n_embd, "
        "tie_word_embeddings true, activation_function gelu_new), and this config sets {}; "
        "`fabtrain plan` and `simulate` model it, and `fabtrain-exec replay` plays its schedule",
        name_or_path, command, model.non_stock_settings());
  return model;
}

}  // namespace fabtrain
