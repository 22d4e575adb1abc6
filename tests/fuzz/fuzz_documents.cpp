// libFuzzer target: a JSONL file of documents through read_documents (one JSON object per line,
// the text and the id in their fields), as tokenize and embed read them.
#include "tests/fuzz/fuzz_input.hpp"
#include "text/documents.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fabtrain::fuzz::write_input(data, size, "docs.jsonl");
  fabtrain::fuzz::refused_only_by_error([&] {
    std::size_t bytes = 0;
    fabtrain::text::read_documents({path}, {}, [&](fabtrain::text::Document&& doc) {
      bytes += doc.text.size() + doc.id.size();
      (void)fabtrain::text::first_line(doc.text);
    });
  });
  return 0;
}
