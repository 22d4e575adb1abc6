// The documents a user brings: text files (each file one document) and JSONL files (.jsonl,
// .ndjson: one JSON object per line, the text in one field, an optional id in another), named by
// paths, comma lists or globs. Bad input names the file and line: an empty file, a line that is
// not a JSON object, a line without the text field, an empty text.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace fabtrain::text {

struct Document {
  std::string source;  // the file
  int line = 0;        // its line in a JSONL file (1-based), 0 for a whole text file
  std::string id;      // the id field, else "file" or "file:line"
  std::string text;
  bool continues = false;  // the next part of the document before it (a text file read in parts)
};

struct DocumentFields {
  std::string text = "text";
  std::string id = "id";
};

// The files the patterns name (sorted within each glob); a pattern matching nothing is an Error.
std::vector<std::string> document_paths(const std::vector<std::string>& patterns);
// Calls each() for every document of the files, in order. An input without any document is an
// Error naming it. part_bytes > 0: a text file longer than that comes in parts of at most
// part_bytes, cut where the tokens do not change (next_cut in pretokenize.hpp), so memory stays
// bounded whatever the file's size; 0: every document whole.
void read_documents(const std::vector<std::string>& paths, const DocumentFields& fields,
                    const std::function<void(Document&&)>& each, std::size_t part_bytes = 0);
// The first non-empty line of a text, for listings (at most max_chars bytes, cut at a character).
std::string first_line(const std::string& text, std::size_t max_chars = 80);

}  // namespace fabtrain::text
