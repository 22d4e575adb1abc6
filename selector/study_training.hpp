// The study's training amount (selector/data/study_training.yaml): epochs and the data set's
// size, each with its source, so "time to train" is always filled and says what it assumes.
#pragma once
#include <string>

namespace fabtrain {

struct TrainingAmount {
  double tokens = 0;
  std::string description;  // "20 epochs of 1.62e6 tokens (the study's, assumed)" or "--tokens 1e9"
};

struct StudyTraining {
  double epochs = 0;
  double dataset_tokens = 0;
  std::string epochs_source, dataset_tokens_source;
};

// Reads and checks the file (unknown keys and non-positive numbers are refused by name).
StudyTraining load_study_training(const std::string& path);
StudyTraining builtin_study_training();  // the shipped file
std::string builtin_study_training_path();

}  // namespace fabtrain
