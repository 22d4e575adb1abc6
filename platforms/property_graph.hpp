// A property graph as the FABRIC Information Model (FIM) saves one: vertices and edges, each a map
// of attribute name to text (JSON-valued attributes such as Capacities stay JSON text). Read from
// GraphML (what fablib's slice.save() writes by default) or networkx node-link JSON, told apart
// by the file's first character. Not here: what the attributes mean (fablib_import.hpp).
#pragma once
#include <map>
#include <string>
#include <vector>

namespace fabtrain {

struct PropertyGraph {
  struct Vertex {
    std::string id;  // the file's vertex id
    std::map<std::string, std::string> props;
  };
  struct Edge {
    int a = 0, b = 0;  // indices into vertices (FIM's edges are read as undirected)
    std::map<std::string, std::string> props;
  };
  std::string path;
  std::string format;  // "GraphML" or "node-link JSON"
  std::vector<Vertex> vertices;
  std::vector<Edge> edges;

  // The attribute's text, "" when the vertex has none.
  const std::string& get(int v, const std::string& key) const;
  // Neighbours of v over edges whose Class is `edge_class` ("" = any edge).
  std::vector<int> neighbours(int v, const std::string& edge_class = "") const;
  // "vertex n3 (Name 'utah-vm')" for messages.
  std::string describe(int v) const;

  std::vector<std::vector<int>> adjacency;  // edge indices per vertex, filled by the reader
};

// Throws fabtrain::Error naming the file, the element and the rule for a file that is neither,
// is malformed, or has an edge to a vertex that does not exist.
PropertyGraph read_property_graph(const std::string& path);

}  // namespace fabtrain
