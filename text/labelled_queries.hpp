// Queries labelled with the documents that answer them, to measure a search: a JSONL file, one
// object per line, {"query": "who dropped the kettle", "relevant": ["val-001"]}. Blank lines are
// skipped. Bad input names the file and line: a line that is not a JSON object, an unknown key,
// an empty query, a relevant list that is empty, holds a non-string or repeats an id; a file
// without any query.
#pragma once
#include <set>
#include <string>
#include <vector>

namespace fabtrain::text {

struct LabelledQuery {
  std::string text;
  std::vector<std::string> relevant;  // document ids, at least one, each once
  std::string where;                  // "file:line", for messages
  int line = 0;
};

std::vector<LabelledQuery> read_labelled_queries(const std::string& path);

// Every relevant id is one of `ids`, else an Error naming the query's line, the id and `corpus`
// (what the ids are the documents of).
void check_relevant_ids(const std::vector<LabelledQuery>& queries, const std::set<std::string>& ids,
                        const std::string& corpus);

}  // namespace fabtrain::text
