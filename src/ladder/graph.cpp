// kc — the contract dependency DAG (kc/graph.h).
#include "kc/graph.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "kc/json_writer.h"

namespace kc::graph {

Graph build_graph(const std::vector<Contract>& contracts, const std::vector<std::string>& files) {
  Graph g;
  for (std::size_t i = 0; i < contracts.size(); ++i) {
    const Contract& c = contracts[i];
    Node n;
    n.id = c.id;
    n.file = i < files.size() ? files[i] : "";
    auto t = c.meta.find("title");
    n.title = t == c.meta.end() ? "" : t->second;
    n.scope = c.scope;
    n.depends = c.depends;
    g.nodes.push_back(std::move(n));
  }
  std::sort(g.nodes.begin(), g.nodes.end(), [](const Node& a, const Node& b) { return a.id < b.id; });
  return g;
}

namespace {
std::string mermaid_id(const std::string& id) {
  std::string s;
  for (char c : id) s += (std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return s;
}
std::string dot_quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}
}  // namespace

std::string render_mermaid(const Graph& g) {
  std::ostringstream o;
  o << "graph TD\n";
  for (const Node& n : g.nodes) o << "  " << mermaid_id(n.id) << "[\"" << n.id << "\"]\n";
  for (const Node& n : g.nodes)
    for (const auto& d : n.depends) o << "  " << mermaid_id(d) << " --> " << mermaid_id(n.id) << "\n";
  return o.str();
}

std::string render_dot(const Graph& g) {
  std::ostringstream o;
  o << "digraph contracts {\n  rankdir=BT;\n";
  for (const Node& n : g.nodes)
    o << "  " << dot_quote(n.id) << " [tooltip=" << dot_quote(n.title) << "];\n";
  for (const Node& n : g.nodes)
    for (const auto& d : n.depends) o << "  " << dot_quote(d) << " -> " << dot_quote(n.id) << ";\n";
  o << "}\n";
  return o.str();
}

std::string render_json(const Graph& g) {
  report::JsonWriter w(2);
  w.begin_object().key("nodes").begin_array();
  for (const Node& n : g.nodes) {
    w.begin_object().field("id", n.id).field("file", n.file).field("title", n.title);
    w.key("scope").begin_array();
    for (const auto& s : n.scope) w.value(s);
    w.end_array().key("depends").begin_array();
    for (const auto& d : n.depends) w.value(d);
    w.end_array().end_object();
  }
  w.end_array().key("edges").begin_array();
  for (const Node& n : g.nodes)
    for (const auto& d : n.depends) w.begin_object().field("from", d).field("to", n.id).end_object();
  w.end_array().end_object();
  return w.take() + "\n";
}

std::vector<std::string> affected(const Graph& g, const std::string& id) {
  std::map<std::string, std::vector<std::string>> dependents;
  std::set<std::string> known;
  for (const Node& n : g.nodes) {
    known.insert(n.id);
    for (const auto& d : n.depends) dependents[d].push_back(n.id);
  }
  if (!known.count(id)) return {};
  // Everything reachable from id along dependency -> dependent edges.
  std::set<std::string> reach{id};
  std::vector<std::string> stack{id};
  while (!stack.empty()) {
    const std::string cur = stack.back();
    stack.pop_back();
    for (const auto& d : dependents[cur])
      if (reach.insert(d).second) stack.push_back(d);
  }
  // Topological order (Kahn) restricted to the reached set; ties by id.
  std::map<std::string, int> indeg;
  for (const auto& r : reach) indeg[r] = 0;
  for (const Node& n : g.nodes)
    if (reach.count(n.id))
      for (const auto& d : n.depends)
        if (reach.count(d)) ++indeg[n.id];
  std::vector<std::string> out;
  std::set<std::string> ready;
  for (const auto& [k, v] : indeg)
    if (v == 0) ready.insert(k);
  while (!ready.empty()) {
    const std::string cur = *ready.begin();
    ready.erase(ready.begin());
    out.push_back(cur);
    for (const auto& d : dependents[cur])
      if (reach.count(d) && --indeg[d] == 0) ready.insert(d);
  }
  return out;  // a cycle (reported by resolve_depends) leaves its members out
}

}  // namespace kc::graph
