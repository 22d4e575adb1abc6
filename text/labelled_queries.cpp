// Reading labelled queries (see labelled_queries.hpp).
#include "text/labelled_queries.hpp"

#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "common/json_fields.hpp"
#include "common/strict_json.hpp"

namespace fabtrain::text {
namespace {

LabelledQuery parse_query(const std::string& line, int line_no, const std::string& where) {
  const nlohmann::json j = parse_json_strict(line, where);
  if (!j.is_object())
    fail("{}: expected a JSON object {{\"query\": \"...\", \"relevant\": [\"id\", ...]}}", where);
  json_fields::reject_unknown(j, {"query", "relevant"}, "the line", where);
  LabelledQuery q{json_fields::text(j, "query", "the line", where), {}, where, line_no};
  if (q.text.find_first_not_of(" \t\r\n") == std::string::npos)
    fail("{}: the query is empty", where);
  const nlohmann::json& relevant = json_fields::array(j, "relevant", "the line", where);
  if (relevant.empty())
    fail("{}: \"relevant\" is empty: a query needs at least one relevant document id", where);
  std::set<std::string> seen;
  for (const auto& id : relevant) {
    if (!id.is_string())
      fail("{}: \"relevant\" holds {}, not a document id (a string)", where, id.dump());
    if (!seen.insert(id.get<std::string>()).second)
      fail("{}: \"relevant\" names '{}' twice", where, id.get<std::string>());
    q.relevant.push_back(id.get<std::string>());
  }
  return q;
}

}  // namespace

std::vector<LabelledQuery> read_labelled_queries(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("{}: cannot open the queries", path);
  std::vector<LabelledQuery> queries;
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    queries.push_back(parse_query(line, line_no, fmt::format("{}:{}", path, line_no)));
  }
  if (in.bad()) fail("{}: read error", path);
  if (queries.empty())
    fail("{}: no queries (expected one JSON object per line with \"query\" and \"relevant\")",
         path);
  return queries;
}

void check_relevant_ids(const std::vector<LabelledQuery>& queries, const std::set<std::string>& ids,
                        const std::string& corpus) {
  for (const auto& q : queries)
    for (const auto& id : q.relevant)
      if (!ids.count(id))
        fail("{}: relevant document '{}' is not a document of {}", q.where, id, corpus);
}

}  // namespace fabtrain::text
