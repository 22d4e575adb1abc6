// libFuzzer target: an availability file (fablib's JSON site list or a plain YAML of site ->
// {GPU: free count}) through read_availability, as `fabtrain advise --availability` reads it.
#include "selector/availability.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fabtrain::fuzz::write_input(data, size, "availability");
  fabtrain::fuzz::refused_only_by_error([&] {
    const fabtrain::Availability a = fabtrain::read_availability(path, fabtrain::fabric_testbed());
    for (const auto& site : a.sites) (void)site.free_gpus.size();
  });
  return 0;
}
