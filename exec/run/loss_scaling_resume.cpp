// Resuming the loss scaler (see loss_scaling_resume.hpp).
#include "exec/run/loss_scaling_resume.hpp"

#include "common/error.hpp"

namespace fabtrain {

void resume_loss_scaling(Interpreter& interpreter, const RankState& state,
                         const std::string& path) {
  const bool scales = interpreter.loss_scaling_state().has_value();
  if (!scales && state.loss_scaling)
    fail("state file {}: written by a run that scales its loss (scale {:g}), this one does not",
         path, state.loss_scaling->scale);
  if (!scales) return;
  if (!state.loss_scaling && state.version < 4)
    fail(
        "state file {}: version {} keeps no loss scale, which this fp16 run continues from: "
        "resume it with the fabtrain-exec that wrote it, or start again",
        path, state.version);
  if (!state.loss_scaling)
    fail("state file {}: written by a run that scales no loss, this one does (fp16 products)",
         path);
  try {
    interpreter.restore_loss_scaling(*state.loss_scaling);
  } catch (const Error& e) {
    fail("state file {}: {}", path, e.what());
  }
}

}  // namespace fabtrain
