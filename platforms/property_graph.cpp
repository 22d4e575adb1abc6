// Reading a FIM property graph from GraphML (pugixml) or node-link JSON (nlohmann), see
// property_graph.hpp.
#include "platforms/property_graph.hpp"

#include <fstream>
#include <nlohmann/json.hpp>
#include <pugixml.hpp>
#include <sstream>
#include <unordered_map>

#include "common/error.hpp"
#include "common/limits.hpp"
#include "common/strict_json.hpp"

namespace fabtrain {
namespace {

// Indexes vertex ids, adds an edge by the ids of its ends, and builds the adjacency.
class Builder {
 public:
  explicit Builder(PropertyGraph& g) : g_(g) {}
  void vertex(const std::string& id, std::map<std::string, std::string> props,
              const std::string& where) {
    count(where);
    if (id.empty()) fail("{}: {}: a vertex needs an id", g_.path, where);
    if (!index_.emplace(id, int(g_.vertices.size())).second)
      fail("{}: {}: vertex id '{}' is used twice", g_.path, where, id);
    g_.vertices.push_back({id, std::move(props)});
  }
  void edge(const std::string& a, const std::string& b, std::map<std::string, std::string> props,
            const std::string& where) {
    count(where);
    g_.edges.push_back({end(a, where, "source"), end(b, where, "target"), std::move(props)});
  }
  void finish() {
    g_.adjacency.assign(g_.vertices.size(), {});
    for (int e = 0; e < int(g_.edges.size()); ++e) {
      g_.adjacency[g_.edges[e].a].push_back(e);
      if (g_.edges[e].b != g_.edges[e].a) g_.adjacency[g_.edges[e].b].push_back(e);
    }
  }

 private:
  void count(const std::string& where) {
    check_limit(fmt::format("{}: {}: the count of vertices and edges", g_.path, where),
                std::int64_t(g_.vertices.size() + g_.edges.size()) + 1, limits::graph_elements);
  }
  int end(const std::string& id, const std::string& where, const char* which) {
    const auto it = index_.find(id);
    if (it == index_.end())
      fail("{}: {}: {} '{}' is not a vertex of the graph", g_.path, where, which, id);
    return it->second;
  }
  PropertyGraph& g_;
  std::unordered_map<std::string, int> index_;
};

// One attribute's text, within limits::graph_attribute_bytes.
void check_attribute(const PropertyGraph& g, const std::string& where, const std::string& name,
                     std::size_t bytes) {
  check_limit(fmt::format("{}: {}: the length of {} in bytes", g.path, where, name),
              std::int64_t(bytes), limits::graph_attribute_bytes);
}

// pugixml reads any depth without recursion; the limit keeps what walks the tree bounded.
void check_xml_depth(const pugi::xml_document& doc, const std::string& path) {
  struct Depth : pugi::xml_tree_walker {
    std::string path;
    bool for_each(pugi::xml_node& node) override {
      check_limit(fmt::format("{}: the XML depth (at <{}>)", path, node.name()), depth() + 1,
                  limits::xml_depth);
      return true;
    }
  } walker;
  walker.path = path;
  const_cast<pugi::xml_document&>(doc).traverse(walker);
}

void read_graphml(const std::string& text, PropertyGraph& g) {
  pugi::xml_document doc;
  const pugi::xml_parse_result ok = doc.load_buffer(text.data(), text.size());
  if (!ok) fail("{}: not well-formed XML: {} at byte {}", g.path, ok.description(), ok.offset);
  check_xml_depth(doc, g.path);
  const pugi::xml_node root = doc.child("graphml");
  if (!root)
    fail("{}: XML, but its root element is <{}>, not <graphml>", g.path, doc.first_child().name());
  // <key id="d0" for="node" attr.name="Class"/>: data elements name their attribute by key id.
  std::map<std::string, std::string> key_names;
  for (const auto& key : root.children("key")) {
    const std::string id = key.attribute("id").value();
    if (id.empty()) fail("{}: a <key> element has no id", g.path);
    key_names[id] = key.attribute("attr.name") ? key.attribute("attr.name").value() : id;
  }
  const pugi::xml_node graph = root.child("graph");
  if (!graph) fail("{}: <graphml> holds no <graph> element", g.path);
  auto data_of = [&](const pugi::xml_node& element, const std::string& where) {
    std::map<std::string, std::string> props;
    for (const auto& d : element.children("data")) {
      const std::string key = d.attribute("key").value();
      const auto it = key_names.find(key);
      if (it == key_names.end())
        fail("{}: {}: <data key=\"{}\"> names no <key> element", g.path, where, key);
      const std::string value = d.text().get();
      check_attribute(g, where, fmt::format("<data key=\"{}\">", key), value.size());
      props[it->second] = value;
    }
    return props;
  };
  Builder b(g);
  int n = 0;
  for (const auto& node : graph.children("node")) {
    const std::string where =
        fmt::format("<node> #{} (id '{}')", ++n, node.attribute("id").value());
    b.vertex(node.attribute("id").value(), data_of(node, where), where);
  }
  int m = 0;
  for (const auto& edge : graph.children("edge")) {
    const std::string where = fmt::format("<edge> #{}", ++m);
    auto props = data_of(edge, where);
    // FIM writes the edge's class both as data and as a label attribute; either will do.
    if (!props.count("Class") && edge.attribute("label"))
      props["Class"] = edge.attribute("label").value();
    b.edge(edge.attribute("source").value(), edge.attribute("target").value(), std::move(props),
           where);
  }
  b.finish();
}

std::string as_text(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

std::string as_attribute(const PropertyGraph& g, const std::string& where, const std::string& key,
                         const nlohmann::json& v) {
  std::string text = as_text(v);
  check_attribute(g, where, fmt::format("\"{}\"", key), text.size());
  return text;
}

void read_node_link(const std::string& text, PropertyGraph& g) {
  const nlohmann::json doc = parse_json_strict(text, g.path);
  if (!doc.is_object() || !doc.contains("nodes") || !doc["nodes"].is_array())
    fail("{}: JSON, but not a node-link graph (no \"nodes\" list)", g.path);
  const char* edges_key = doc.contains("links") ? "links" : "edges";
  if (!doc.contains(edges_key) || !doc[edges_key].is_array())
    fail("{}: a node-link graph needs a \"links\" list", g.path);
  Builder b(g);
  for (size_t i = 0; i < doc["nodes"].size(); ++i) {
    const auto& node = doc["nodes"][i];
    const std::string where = fmt::format("nodes[{}]", i);
    if (!node.is_object() || !node.contains("id"))
      fail("{}: {}: a node needs an \"id\"", g.path, where);
    std::map<std::string, std::string> props;
    for (const auto& [k, v] : node.items())
      if (k != "id") props[k] = as_attribute(g, where, k, v);
    b.vertex(as_text(node["id"]), std::move(props), where);
  }
  for (size_t i = 0; i < doc[edges_key].size(); ++i) {
    const auto& link = doc[edges_key][i];
    const std::string where = fmt::format("{}[{}]", edges_key, i);
    if (!link.is_object() || !link.contains("source") || !link.contains("target"))
      fail("{}: {}: a link needs \"source\" and \"target\"", g.path, where);
    std::map<std::string, std::string> props;
    for (const auto& [k, v] : link.items())
      if (k != "source" && k != "target") props[k] = as_attribute(g, where, k, v);
    b.edge(as_text(link["source"]), as_text(link["target"]), std::move(props), where);
  }
  b.finish();
}

}  // namespace

const std::string& PropertyGraph::get(int v, const std::string& key) const {
  static const std::string none;
  const auto it = vertices[v].props.find(key);
  return it == vertices[v].props.end() ? none : it->second;
}

std::vector<int> PropertyGraph::neighbours(int v, const std::string& edge_class) const {
  std::vector<int> out;
  for (int e : adjacency[v]) {
    const Edge& edge = edges[e];
    if (!edge_class.empty()) {
      const auto it = edge.props.find("Class");
      if (it == edge.props.end() || it->second != edge_class) continue;
    }
    out.push_back(edge.a == v ? edge.b : edge.a);
  }
  return out;
}

std::string PropertyGraph::describe(int v) const {
  const std::string& name = get(v, "Name");
  return name.empty() ? fmt::format("vertex '{}'", vertices[v].id)
                      : fmt::format("vertex '{}' (Name '{}')", vertices[v].id, name);
}

PropertyGraph read_property_graph(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read '{}'", path);
  check_file_size(path, "saved slice", limits::saved_slice_bytes);
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  PropertyGraph g;
  g.path = path;
  const auto first = text.find_first_not_of(" \t\r\n\xEF\xBB\xBF");
  if (first == std::string::npos) fail("{}: empty file, not a saved fablib slice", path);
  if (text[first] == '<') {
    g.format = "GraphML";
    read_graphml(text, g);
  } else if (text[first] == '{') {
    g.format = "node-link JSON";
    read_node_link(text, g);
  } else {
    const std::string start = text.substr(first, std::min<size_t>(20, text.size() - first));
    fail(
        "{}: neither GraphML nor node-link JSON (it starts with '{}'), so not a saved fablib slice",
        path, start.substr(0, start.find('\n')));
  }
  return g;
}

}  // namespace fabtrain
