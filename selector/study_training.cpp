#include "selector/study_training.hpp"

#include "common/data_dir.hpp"
#include "common/error.hpp"
#include "platforms/yaml_fields.hpp"

namespace fabtrain {

StudyTraining load_study_training(const std::string& path) {
  const YamlNode root = load_yaml_file(path, "study training");
  if (!root.is_mapping()) fail("{}: expected a mapping of epochs and dataset_tokens", path);
  const YamlFields f(path, "", root);
  f.allow_only({"epochs", "epochs_source", "dataset_tokens", "dataset_tokens_source"});
  StudyTraining t{f.number("epochs"), f.number("dataset_tokens"), f.text("epochs_source"),
                  f.text("dataset_tokens_source")};
  if (!(t.epochs > 0)) fail("{} must be positive (got {})", f.field("epochs"), t.epochs);
  if (!(t.dataset_tokens >= 1))
    fail("{} must be at least 1 (got {})", f.field("dataset_tokens"), t.dataset_tokens);
  return t;
}

std::string builtin_study_training_path() {
  return source_dir() + "/selector/data/study_training.yaml";
}

StudyTraining builtin_study_training() {
  return load_study_training(builtin_study_training_path());
}

}  // namespace fabtrain
