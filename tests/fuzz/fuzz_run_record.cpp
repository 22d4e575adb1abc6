// libFuzzer target: a run record (fabtrain-exec train --record's JSON lines) through
// read_run_record and the model it names.
#include "calibrate/inputs.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fabtrain::fuzz::write_input(data, size, "run.jsonl");
  fabtrain::fuzz::refused_only_by_error([&] {
    const auto run = fabtrain::calib::read_run_record(path);
    if (!run.model_fields.is_null())
      (void)fabtrain::calib::model_of(run.model_fields, run.model, path);
  });
  return 0;
}
