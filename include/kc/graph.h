// kc — the contract dependency DAG from `depends` lines (kc graph, kc check --affected).
#pragma once

#include <string>
#include <vector>

#include "kc/model.h"

namespace kc::graph {

struct Node {
  std::string id, file, title;
  std::vector<std::string> scope;
  std::vector<std::string> depends;  ///< edges: this contract builds on these
};

struct Graph {
  std::vector<Node> nodes;  ///< sorted by id
};

Graph build_graph(const std::vector<Contract>& contracts, const std::vector<std::string>& files);

/// `graph TD` with one edge per dependency, dependency --> dependent.
std::string render_mermaid(const Graph& g);
/// `digraph contracts { ... }`, dependency -> dependent.
std::string render_dot(const Graph& g);
/// {"nodes":[{"id","file","title","scope","depends"}],"edges":[{"from","to"}]}
std::string render_json(const Graph& g);

/// `id` and every contract downstream of it (depending on it, transitively),
/// in topological order (dependencies first). Unknown ids give an empty list.
std::vector<std::string> affected(const Graph& g, const std::string& id);

}  // namespace kc::graph
