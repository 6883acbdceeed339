// kc — the optional `depends` line of a contract block: the contract DAG.
//
//   depends KC-SOFTMAX-01, KC-GEMM-01
//
// Ids are checked for form here; whether they name loaded contracts is a
// property of a set of files, checked by resolve_depends (kc/lang.h).
#include <algorithm>
#include <map>
#include <set>

#include "kc/lang.h"
#include "lang/clauses.h"

namespace kc::lang {
namespace detail {

namespace {
bool id_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
         c == '.';
}
}  // namespace

void parse_depends(const Span& body_in, Contract* c, Diags& d) {
  const Span body = body_in.trimmed();
  const std::string& t = body.text();
  if (t.empty()) {
    d.error(body, 0, "'depends' needs one or more contract ids", "depends KC-SOFTMAX-01, KC-GEMM-01");
    return;
  }
  std::size_t start = 0;
  while (start <= t.size()) {
    std::size_t comma = t.find(',', start);
    if (comma == std::string::npos) comma = t.size();
    std::size_t b = start, e = comma;
    while (b < e && t[b] == ' ') ++b;
    while (e > b && t[e - 1] == ' ') --e;
    const std::string id = t.substr(b, e - b);
    if (id.empty()) {
      d.error(body, b, "empty item in 'depends'", "comma-separated contract ids");
    } else if (!std::all_of(id.begin(), id.end(), id_char)) {
      d.error(body, b, "malformed contract id '" + id + "' in 'depends'", "an id such as KC-SOFTMAX-01");
    } else if (id == c->id) {
      d.error(body, b, "contract " + id + " depends on itself", "the ids of other contracts");
    } else if (std::find(c->depends.begin(), c->depends.end(), id) != c->depends.end()) {
      d.error(body, b, "'" + id + "' is listed twice in 'depends'", "each id once");
    } else {
      c->depends.push_back(id);
      c->depends_locs.push_back(body.loc(b));
    }
    start = comma + 1;
  }
}

}  // namespace detail

std::vector<Diagnostic> resolve_depends(const std::vector<Contract>& contracts) {
  std::vector<Diagnostic> out;
  std::vector<std::string> ids;
  std::map<std::string, const Contract*> by_id;
  for (const Contract& c : contracts) {
    ids.push_back(c.id);
    by_id[c.id] = &c;
  }
  for (const Contract& c : contracts) {
    for (std::size_t i = 0; i < c.depends.size(); ++i) {
      if (by_id.count(c.depends[i])) continue;
      Diagnostic d;
      d.loc = i < c.depends_locs.size() ? c.depends_locs[i] : c.loc;
      d.message = "contract " + c.id + " depends on unknown contract '" + c.depends[i] + "'";
      d.expected = "the id of a loaded contract";
      d.suggestion = nearest_word(c.depends[i], ids);
      out.push_back(std::move(d));
    }
  }
  // Cycles: depth-first search with colours; one diagnostic per cycle found.
  std::map<std::string, int> colour;  // 0 white, 1 on the stack, 2 done
  std::vector<std::string> stack;
  std::set<std::string> reported;
  auto visit = [&](auto&& self, const Contract& c) -> void {
    colour[c.id] = 1;
    stack.push_back(c.id);
    for (std::size_t i = 0; i < c.depends.size(); ++i) {
      auto it = by_id.find(c.depends[i]);
      if (it == by_id.end()) continue;
      const int col = colour[c.depends[i]];
      if (col == 1 && reported.insert(c.id).second) {
        std::string cycle;
        auto from = std::find(stack.begin(), stack.end(), c.depends[i]);
        for (auto s = from; s != stack.end(); ++s) cycle += *s + " -> ";
        cycle += c.depends[i];
        Diagnostic d;
        d.loc = i < c.depends_locs.size() ? c.depends_locs[i] : c.loc;
        d.message = "dependency cycle: " + cycle;
        d.expected = "an acyclic contract graph";
        out.push_back(std::move(d));
      } else if (col == 0) {
        self(self, *it->second);
      }
    }
    stack.pop_back();
    colour[c.id] = 2;
  };
  for (const Contract& c : contracts)
    if (colour[c.id] == 0) visit(visit, c);
  return out;
}

}  // namespace kc::lang
