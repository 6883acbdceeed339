// kc — clause parsers and printers (see clauses.h).
#include "lang/clauses.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kc/lang.h"
#include "kc/retest.h"
#include "lang/expr_internal.h"
#include "kc/vocabulary.h"
#include "lang/names.h"

namespace kc::lang::detail {
namespace {

std::string collapse_ws(std::string_view s) {
  std::string out;
  bool in_quote = false, space = false;
  for (char c : trim(s)) {
    if (c == '"') in_quote = !in_quote;
    if (!in_quote && std::isspace(static_cast<unsigned char>(c))) {
      space = true;
      continue;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

std::string gap_text(const Diagnostic& e);

std::vector<std::string> dtype_names() {
  std::vector<std::string> v;
  for (const auto& i : all_dtypes()) v.emplace_back(i.name);
  return v;
}

std::string dtype_list_text() { return join(dtype_names(), ", "); }

/// Offset of the first non-space character at or after `from`.
std::size_t skip_ws_at(const std::string& s, std::size_t from) {
  while (from < s.size() && std::isspace(static_cast<unsigned char>(s[from]))) ++from;
  return from;
}

/// Parses `( a, b, ... )` of identifiers at the cursor.
bool paren_names(Cursor& c, const Span& sp, Diags& d, std::vector<std::string>* out, std::string_view what) {
  if (!c.accept('(')) {
    d.error(sp, c.pos(), "expected '(' after " + std::string(what), "(" + std::string(what) + " names)");
    return false;
  }
  const std::string inner = c.until_top_level(')');
  const std::size_t base = c.pos() - inner.size();
  if (!c.accept(')')) {
    d.error(sp, c.pos(), "missing ')'", "')' to close the list of names");
    return false;
  }
  for (auto [b, e] : split_top_level(inner, ',')) {
    std::string name = trim(inner.substr(b, e - b));
    if (name.empty()) {
      d.error(sp, base + b, "empty name in " + std::string(what) + "(...)", "a tensor name such as A");
      return false;
    }
    out->push_back(name);
  }
  return true;
}

/// Parses `{ a, b, ... }` at the cursor into trimmed words.
bool brace_values(Cursor& c, const Span& sp, Diags& d, std::vector<std::string>* out) {
  if (!c.accept('{')) {
    d.error(sp, c.pos(), "expected '{'", "a set such as {FP32, FP16}");
    return false;
  }
  const std::string inner = c.until_top_level('}');
  const std::size_t base = c.pos() - inner.size();
  if (!c.accept('}')) {
    d.error(sp, c.pos(), "missing '}'", "'}' to close the set");
    return false;
  }
  if (trim(inner).empty()) return true;
  for (auto [b, e] : split_top_level(inner, ',')) {
    std::string v = trim(inner.substr(b, e - b));
    if (v.empty()) {
      d.error(sp, base + b, "empty value in set", "values separated by ','");
      return false;
    }
    out->push_back(v);
  }
  return true;
}

/// An expression that must evaluate without variables (a literal number, 2^10, -1).
bool constant(const std::string& text, std::size_t base, const Span& sp, Diags& d, double* out) {
  Expr e;
  ExprError err;
  if (!parse_expr_text(text, &e, &err)) {
    d.error(sp, base + err.offset, err.message, err.expected);
    return false;
  }
  auto v = eval_expr(e, {});
  if (!v.ok()) {
    d.error(sp, base, "expected a constant: " + v.status().message(), "a number");
    return false;
  }
  *out = *v;
  return true;
}

/// Parses an expression, checking that every function it calls exists.
bool expression(const std::string& text, std::size_t base, const Span& sp, Diags& d, Expr* out) {
  ExprError err;
  if (trim(text).empty()) {
    d.error(sp, base, "missing expression", "a number or an expression such as N * eps(P)");
    return false;
  }
  if (!parse_expr_text(text, out, &err)) {
    d.error(sp, base + err.offset, err.message, err.expected);
    return false;
  }
  std::vector<std::string> calls;
  collect_calls(*out, &calls);
  for (const auto& f : calls) {
    const auto& known = known_functions();
    if (std::find(known.begin(), known.end(), f) != known.end()) continue;
    const std::size_t at = text.find(f);
    d.error(sp, base + (at == std::string::npos ? 0 : at), "unknown function '" + f + "'",
            "one of: " + join(known, ", "), nearest_word(f, known));
    return false;
  }
  return true;
}

// ---------------------------------------------------------------- scope
void parse_scope(const Span& sp, Contract* c, Diags& d) {
  const std::string& t = sp.text();
  std::vector<std::string> items;
  bool prose = false;
  for (auto [b, e] : split_top_level(t, ',')) {
    std::string item = trim(t.substr(b, e - b));
    if (item.empty()) {
      d.error(sp, b, "empty op class in scope", "op class names separated by ','");
      continue;
    }
    Cursor cur(item);
    const std::string id = cur.ident();
    if (id.empty() || !cur.at_end()) {
      prose = true;
      break;
    }
    items.push_back(id);
  }
  if (prose) {
    c->scope_info.gap = "scope is prose; list op classes by name (known: " + join(known_op_classes(), ", ") + ")";
    return;
  }
  const auto& known = known_op_classes();
  std::size_t search = 0;
  for (const auto& id : items) {
    const std::size_t at = t.find(id, search);
    search = at == std::string::npos ? search : at + id.size();
    if (std::find(known.begin(), known.end(), id) != known.end()) {
      c->scope.push_back(id);
      continue;
    }
    unknown_name(d, sp, at == std::string::npos ? 0 : at, "op class", id, known);
  }
}

// ---------------------------------------------------------------- pre
bool parse_predicate(const Span& sp, Predicate* p, Diags& d) {
  const std::string& t = sp.text();
  Cursor c(t);
  const std::string head = c.ident();
  const char next = c.peek();
  auto rest_must_be_empty = [&](std::string_view form) {
    if (c.at_end()) return true;
    d.error(sp, c.pos(), "unexpected text after " + std::string(form) + ": '" + trim(t.substr(c.pos())) + "'",
            "'and' between conjuncts");
    return false;
  };

  if (head == "precision" && next == '(') {
    p->kind = Predicate::Kind::kPrecision;
    if (!paren_names(c, sp, d, &p->tensors, "precision")) return false;
    std::vector<std::string> values;
    const std::size_t at = skip_ws_at(t, c.pos());
    if (c.accept_word("in")) {
      if (!brace_values(c, sp, d, &values)) return false;
    } else if (c.accept('=')) {
      values.push_back(c.word());
    } else {
      d.error(sp, at, "expected 'in {...}' after precision(...)", "precision(A, B) in {FP32, FP16}");
      return false;
    }
    for (const auto& v : values) {
      auto dt = parse_dtype(v);
      if (!dt) {
        const std::size_t vat = t.find(v, at);
        d.error(sp, vat == std::string::npos ? at : vat, "unknown precision '" + v + "'",
                "one of: " + dtype_list_text(), nearest_word(v, dtype_names()));
        return false;
      }
      p->dtypes.push_back(*dt);
    }
    return rest_must_be_empty("precision(...)");
  }
  if (head == "shape" && next == '(') {
    p->kind = Predicate::Kind::kShape;
    if (!paren_names(c, sp, d, &p->tensors, "shape")) return false;
    if (!c.accept('=')) {
      d.error(sp, c.pos(), "expected '=' after shape(...)", "shape(A) = (M, K)");
      return false;
    }
    // `shape(K) = shape(V) = (...)`: several tensors of one shape.
    for (;;) {
      Cursor more(t, c.pos());
      if (more.ident() != "shape" || more.peek() != '(') break;
      c.set_pos(more.pos());
      if (!paren_names(c, sp, d, &p->tensors, "shape")) return false;
      if (!c.accept('=')) {
        d.error(sp, c.pos(), "expected '=' after shape(...)", "shape(K) = shape(V) = (B, H, S, D)");
        return false;
      }
    }
    if (!paren_names(c, sp, d, &p->dims, "a shape")) return false;
    // `with D in {64, 128}[, H in {...}]`: dimensions restricted to sets of sizes.
    if (c.accept_word("with")) {
      do {
        const std::size_t at = skip_ws_at(t, c.pos());
        const std::string dim = c.ident();
        if (dim.empty() || !c.accept_word("in")) {
          d.error(sp, at, "expected 'DIM in {sizes}' after 'with'", "shape(Q) = (B, H, S, D) with D in {64, 128}");
          return false;
        }
        if (std::find(p->dims.begin(), p->dims.end(), dim) == p->dims.end()) {
          d.error(sp, at, "'" + dim + "' is not a dimension of this shape", "one of: " + join(p->dims, ", "),
                  nearest_word(dim, p->dims));
          return false;
        }
        const std::size_t set_at = skip_ws_at(t, c.pos());
        std::vector<std::string> sizes;
        if (!brace_values(c, sp, d, &sizes)) return false;
        if (sizes.empty()) {
          d.error(sp, set_at, "empty set of sizes for '" + dim + "'", dim + " in {64, 128}");
          return false;
        }
        for (const auto& v : sizes) {
          double n = 0;
          if (!parse_number(v, &n) || n < 0 || n != std::floor(n)) {
            const std::size_t vat = t.find(v, set_at);
            d.error(sp, vat == std::string::npos ? set_at : vat, "size '" + v + "' of '" + dim + "' is not a whole number",
                    "whole numbers such as {64, 128, 256}");
            return false;
          }
        }
        p->dim_sets.emplace_back(dim, std::move(sizes));
      } while (c.accept(','));
    }
    return rest_must_be_empty("shape(...) = (...)");
  }
  if (head == "value_range" && next == '(') {
    p->kind = Predicate::Kind::kValueRange;
    if (!paren_names(c, sp, d, &p->tensors, "value_range")) return false;
    const std::size_t at = skip_ws_at(t, c.pos());
    if (c.accept_word("finite")) {
      p->range = Predicate::Range::kFinite;
    } else if (c.accept_word("bounded")) {
      p->range = Predicate::Range::kBounded;
      const std::size_t b = c.pos();
      if (!constant(c.rest(), b, sp, d, &p->hi)) return false;
    } else if (c.accept_word("in")) {
      p->range = Predicate::Range::kInterval;
      if (!c.accept('[')) {
        d.error(sp, c.pos(), "expected '[' after 'in'", "value_range(A) in [-1, 1]");
        return false;
      }
      const std::string inner = c.until_top_level(']');
      const std::size_t base = c.pos() - inner.size();
      if (!c.accept(']')) {
        d.error(sp, c.pos(), "missing ']'", "value_range(A) in [-1, 1]");
        return false;
      }
      auto parts = split_top_level(inner, ',');
      if (parts.size() != 2) {
        d.error(sp, base, "an interval has two ends", "[lo, hi]");
        return false;
      }
      if (!constant(inner.substr(parts[0].first, parts[0].second - parts[0].first), base + parts[0].first, sp, d,
                    &p->lo) ||
          !constant(inner.substr(parts[1].first, parts[1].second - parts[1].first), base + parts[1].first, sp, d,
                    &p->hi))
        return false;
      if (!(p->lo <= p->hi)) {
        d.error(sp, base, "empty interval: lower end exceeds upper end", "[lo, hi] with lo <= hi");
        return false;
      }
    } else if (c.accept_word("normal")) {
      p->range = Predicate::Range::kNormal;
      if (!c.accept('(')) {
        d.error(sp, c.pos(), "expected '(' after normal", "normal(mean, stddev)");
        return false;
      }
      const std::string inner = c.until_top_level(')');
      const std::size_t base = c.pos() - inner.size();
      if (!c.accept(')')) {
        d.error(sp, c.pos(), "missing ')'", "normal(mean, stddev)");
        return false;
      }
      auto parts = split_top_level(inner, ',');
      if (parts.size() != 2) {
        d.error(sp, base, "normal(...) takes a mean and a standard deviation", "normal(0, 1)");
        return false;
      }
      if (!constant(inner.substr(parts[0].first, parts[0].second - parts[0].first), base + parts[0].first, sp, d,
                    &p->lo) ||
          !constant(inner.substr(parts[1].first, parts[1].second - parts[1].first), base + parts[1].first, sp, d,
                    &p->hi))
        return false;
      if (!(p->hi > 0)) {
        d.error(sp, base, "standard deviation must be positive", "normal(0, 1)");
        return false;
      }
    } else {
      const std::string w = c.word();
      d.error(sp, at, "unknown value range '" + w + "'", "finite | bounded X | in [a, b] | normal(mu, sigma)",
              nearest_word(w, {"finite", "bounded", "in", "normal"}));
      return false;
    }
    return rest_must_be_empty("value_range(...)");
  }
  if (head == "stack" && next == '=') {
    p->kind = Predicate::Kind::kStack;
    p->key = "stack";
    c.accept('=');
    const std::string v = c.word();
    if (v.empty()) {
      d.error(sp, c.pos(), "expected a stack name after 'stack ='", "stack = cublas");
      return false;
    }
    p->values.push_back(v);
    return rest_must_be_empty("stack = ...");
  }
  if (head == "flag" && next == '(') {
    p->kind = Predicate::Kind::kFlag;
    std::vector<std::string> names;
    if (!paren_names(c, sp, d, &names, "flag")) return false;
    if (names.size() != 1) {
      d.error(sp, 0, "flag(...) names one flag", "flag(fast_math) = off");
      return false;
    }
    p->key = names[0];
    if (!c.accept('=')) {
      d.error(sp, c.pos(), "expected '=' after flag(...)", "flag(fast_math) = off");
      return false;
    }
    const std::string v = c.word();
    if (v.empty()) {
      d.error(sp, c.pos(), "expected a flag value", "flag(fast_math) = off");
      return false;
    }
    p->values.push_back(v);
    return rest_must_be_empty("flag(...) = ...");
  }
  if (head == "version") {
    p->kind = Predicate::Kind::kVersion;
    p->key = "version";
    for (const char* op : {">=", "<=", "==", "!=", ">", "<", "="}) {
      if (c.accept(std::string_view(op))) {
        p->cmp = op;
        break;
      }
    }
    if (p->cmp.empty()) {
      d.error(sp, c.pos(), "expected a comparison after 'version'", "version >= 12.1");
      return false;
    }
    const std::string v = c.word();
    if (v.empty()) {
      d.error(sp, c.pos(), "expected a version", "version >= 12.1");
      return false;
    }
    p->values.push_back(v);
    return rest_must_be_empty("version ...");
  }
  if (head == "declared") {
    p->kind = Predicate::Kind::kDeclared;
    const std::size_t key_at = skip_ws_at(t, c.pos());
    p->key = c.ident();
    if (p->key.empty()) {
      d.error(sp, key_at, "expected a declaration key after 'declared'",
              "accumulator, determinism, nan, denormal, oob or another declared key");
      return false;
    }
    const std::size_t at = skip_ws_at(t, c.pos());
    if (c.accept_word("in")) {
      p->cmp = "in";
      if (!brace_values(c, sp, d, &p->values)) return false;
    } else if (c.accept('=')) {
      p->cmp = "=";
      const std::string v = c.word();
      if (v.empty()) {
        d.error(sp, c.pos(), "expected a value", "declared " + p->key + " = VALUE");
        return false;
      }
      p->values.push_back(v);
    } else {
      d.error(sp, at, "expected '=' or 'in' after 'declared " + p->key + "'", "declared accumulator = FP32");
      return false;
    }
    for (const auto& v : p->values) {  // known keys take known values only
      Declaration scratch;
      std::string err;
      if (!scratch.set(p->key, v, &err)) {
        const std::size_t vat = t.find(v, at);
        d.error(sp, vat == std::string::npos ? at : vat, "bad value '" + v + "' for declared " + p->key, err);
        return false;
      }
    }
    return rest_must_be_empty("declared ...");
  }
  if (!head.empty()) {
    Cursor probe(t, c.pos());
    if (probe.accept_word("in") && probe.peek() == '{') {
      // `stack in {a, b}`: any one of the stacks (as `stack = a` for each).
      p->kind = head == "stack" ? Predicate::Kind::kStack : Predicate::Kind::kParamIn;
      p->key = head;
      c.set_pos(probe.pos());
      if (!brace_values(c, sp, d, &p->values)) return false;
      if (p->values.empty()) {
        d.error(sp, 0, "empty set for '" + head + "'", head + " in {v1, v2}");
        return false;
      }
      return rest_must_be_empty(head + " in {...}");
    }
  }
  p->kind = Predicate::Kind::kProse;
  const std::vector<std::string> forms = {"precision", "shape", "value_range", "stack", "flag", "version", "declared"};
  const std::string near = nearest_word(head, forms);
  // Only a conjunct shaped like a form (`precison(A) ...`, `stak = x`) is
  // likely a misspelling; "shapes come from ..." is prose on purpose.
  if (!near.empty() && head.size() > 3 && (next == '(' || next == '=')) {
    d.warning(sp, 0, "'" + head + "' is not a predicate; this conjunct is read as prose", "", near);
  }
  return true;
}

void parse_pre(const Span& sp, Contract* c, Diags& d) {
  std::vector<std::string> prose;
  SourceLoc first;
  for (auto [b, e] : split_top_level_word(sp.text(), "and")) {
    Span part = sp.sub(b, e).trimmed();
    if (part.text().empty()) {
      prose.push_back("an empty conjunct (nothing on one side of 'and')");
      if (first.line == 0) first = sp.loc(b);
      continue;
    }
    Predicate p;
    p.text = collapse_ws(part.text());
    p.loc = part.loc(0);
    // Each conjunct on its own: one in prose leaves the others executable
    // and the clause descriptive.
    std::vector<Diagnostic> found;
    Diags sub(&found);
    const bool ok = parse_predicate(part, &p, sub);
    const Diagnostic* error = nullptr;
    for (const Diagnostic& x : found) {
      if (x.severity != Diagnostic::Severity::kError || is_unknown_name(x)) d.add(x);
      else if (!error) error = &x;
    }
    if (!ok || error) {
      Predicate kept;
      kept.kind = Predicate::Kind::kProse;
      kept.text = p.text;
      kept.loc = p.loc;
      p = std::move(kept);
      prose.push_back("'" + p.text + "' (" + (error ? gap_text(*error) : std::string("not a predicate")) + ")");
      if (first.line == 0) first = error ? error->loc : p.loc;
    } else if (p.kind == Predicate::Kind::kProse) {
      prose.push_back("'" + p.text + "'");
      if (first.line == 0) first = p.loc;
    }
    c->pre.push_back(std::move(p));
  }
  if (!prose.empty()) {
    c->pre_info.gap = "prose conjunct" + std::string(prose.size() > 1 ? "s " : " ") + join(prose, ", ") +
                      "; write each as precision(...) in {...}, shape(...) = (...) [with D in {...}], "
                      "value_range(...) ..., stack = X, flag(F) = v, version >= v, declared KEY = V or PARAM in {...}";
    c->pre_info.gap_loc = first;
  }
}

// ---------------------------------------------------------------- post
void parse_post(const Span& sp, Contract* c, Diags& d) {
  const std::string& t = sp.text();
  Cursor cur(t);
  Postcondition& p = c->post;
  const std::string head = cur.ident();
  // `output O satisfies REL(O, ref(...))`, or the relation alone: `REL(O, ref(...))`.
  const bool bare = (head == "elementwise_close" || head == "close") && cur.peek() == '(';
  if (head == "output" || bare) {
    std::string rel = head;
    std::size_t rel_at = 0;
    if (!bare) {
      p.output = cur.ident();
      if (p.output.empty()) {
        d.error(sp, cur.pos(), "expected the output tensor's name", "output C satisfies elementwise_close(C, ref(C))");
        return;
      }
      if (!cur.accept_word("satisfies")) {
        d.error(sp, skip_ws_at(t, cur.pos()), "expected 'satisfies'", "output C satisfies elementwise_close(C, ref(C))",
                nearest_word(cur.peek_ident(), {"satisfies"}));
        return;
      }
      rel_at = skip_ws_at(t, cur.pos());
      rel = cur.ident();
    }
    if (rel == "elementwise_close") {
      p.kind = Postcondition::Kind::kElementwiseClose;
    } else if (rel == "close") {
      p.kind = Postcondition::Kind::kClose;
    } else {
      d.error(sp, rel_at, "unknown relation '" + rel + "'", "elementwise_close or close",
              nearest_word(rel, {"elementwise_close", "close"}));
      return;
    }
    // (O, ref(O)) or (O, ref(inputs...)): the output and the reference's answer.
    const std::string form = rel + "(O, ref(O)) or " + rel + "(O, ref(A, B, ...))";
    const std::size_t args_at = skip_ws_at(t, cur.pos());
    if (!cur.accept('(')) {
      d.error(sp, args_at, "expected '(' after " + rel, form);
      return;
    }
    const std::size_t inner_at = cur.pos();
    const std::string args = cur.until_top_level(')');
    if (!cur.accept(')')) {
      d.error(sp, cur.pos(), "missing ')'", form);
      return;
    }
    const auto parts = split_top_level(args, ',');
    if (parts.size() != 2) {
      d.error(sp, args_at, rel + " compares an output with the reference's answer", form);
      return;
    }
    const std::string first = trim(args.substr(parts[0].first, parts[0].second - parts[0].first));
    Cursor fc(first);
    const std::string out_name = fc.ident();
    if (out_name.empty() || !fc.at_end()) {
      d.error(sp, inner_at + skip_ws_at(args, 0), "expected the output's name as the first argument", form);
      return;
    }
    if (bare) {
      p.output = out_name;
    } else if (out_name != p.output) {
      d.error(sp, inner_at + skip_ws_at(args, 0), "the relation compares '" + out_name + "', not the output '" +
              p.output + "'", rel + "(" + p.output + ", ref(...))");
      return;
    }
    const std::size_t ref_at = inner_at + parts[1].first + skip_ws_at(args.substr(parts[1].first), 0);
    const std::string second = args.substr(parts[1].first, parts[1].second - parts[1].first);
    Cursor rc(second);
    std::vector<std::string> ref_names;
    if (rc.ident() != "ref" || rc.peek() != '(') {
      d.error(sp, ref_at, "expected ref(...) as the second argument", form);
      return;
    }
    {
      rc.accept('(');
      const std::string names = rc.until_top_level(')');
      if (!rc.accept(')') || !rc.at_end()) {
        d.error(sp, ref_at, "malformed ref(...)", form);
        return;
      }
      for (auto [nb, ne] : split_top_level(names, ',')) {
        const std::string n = trim(names.substr(nb, ne - nb));
        Cursor nc(n);
        if (nc.ident().empty() || !nc.at_end()) {
          d.error(sp, ref_at, "ref(...) takes tensor names", form);
          return;
        }
        ref_names.push_back(n);
      }
    }
    // ref(O): the reference's value of O; ref(A, B): the reference applied to the inputs.
    if (!(ref_names.size() == 1 && ref_names[0] == p.output)) p.ref_args = ref_names;
    if (cur.accept_word("or")) {
      if (!cur.accept_word("raise")) {
        d.error(sp, skip_ws_at(t, cur.pos()), "expected 'raise' after 'or'", rel + "(...) or raise UnsupportedShape");
        return;
      }
      p.or_raise = cur.word();
      if (p.or_raise.empty()) {
        d.error(sp, cur.pos(), "expected the name of what may be raised", rel + "(...) or raise UnsupportedShape");
        return;
      }
    }
    if (!cur.at_end()) d.error(sp, cur.pos(), "unexpected text after the relation", "end of the post clause");
    return;
  }
  if (head == "declared_policy") {
    p.kind = Postcondition::Kind::kDeclaredPolicy;
    const std::size_t at = skip_ws_at(t, cur.pos());
    p.policy = cur.ident();
    const std::vector<std::string> keys = word_names(policy_table());
    const WordInfo* policy = find_word(policy_table(), p.policy);
    if (!policy) {
      d.error(sp, at, "unknown policy '" + p.policy + "'", "one of: " + join(keys, ", "), nearest_word(p.policy, keys));
      return;
    }
    if (!cur.accept_word("in")) {
      d.error(sp, skip_ws_at(t, cur.pos()), "expected 'in {...}'", "declared_policy nan in {IEEE_PROPAGATE, MASK}");
      return;
    }
    if (!brace_values(cur, sp, d, &p.allowed)) return;
    // A policy whose set names behaviour classes of its own (path: DECLARED,
    // FALLBACK) lists them in the policy table; the others take the
    // declaration key's values.
    const WordInfo* key = find_word(declaration_key_table(), p.policy);
    const std::vector<std::string> classes = !policy->detail.empty() ? declaration_values(*policy)
                                             : key && !key->detail.empty() ? declaration_values(*key)
                                                                            : std::vector<std::string>{};
    for (const auto& v : p.allowed) {
      if (!classes.empty()) {
        if (std::find(classes.begin(), classes.end(), v) == classes.end()) {
          d.error(sp, t.find(v, at), "bad value '" + v + "' for policy " + p.policy, "one of: " + join(classes, ", "),
                  nearest_word(v, classes));
          return;
        }
        continue;
      }
      Declaration scratch;
      std::string err;
      if (!scratch.set(p.policy, v, &err)) {
        d.error(sp, t.find(v, at), "bad value '" + v + "' for policy " + p.policy, err);
        return;
      }
    }
    if (!cur.at_end()) d.error(sp, cur.pos(), "unexpected text after the policy set", "end of the post clause");
    return;
  }
  if (head == "bitwise_identical") {
    p.kind = Postcondition::Kind::kBitwiseIdentical;
    if (!cur.accept_word("across")) {
      d.error(sp, skip_ws_at(t, cur.pos()), "expected 'across N invocations'", "bitwise_identical across 10 invocations");
      return;
    }
    const std::size_t at = skip_ws_at(t, cur.pos());
    double n = 0;
    const std::string w = cur.word();
    if (!parse_number(w, &n) || n < 2 || n != std::floor(n) || n > 1e6) {
      d.error(sp, at, "expected a whole number of invocations (2 or more)", "bitwise_identical across 10 invocations");
      return;
    }
    p.invocations = static_cast<std::int64_t>(n);
    if (!cur.accept_word("invocations") && !cur.accept_word("runs")) {
      d.error(sp, skip_ws_at(t, cur.pos()), "expected 'invocations'", "bitwise_identical across 10 invocations");
      return;
    }
    if (!cur.at_end()) d.error(sp, cur.pos(), "unexpected text after 'invocations'", "end of the post clause");
    return;
  }
  if (head == "raise") {
    p.kind = Postcondition::Kind::kRaise;
    p.exception = cur.word();
    if (p.exception.empty()) {
      d.error(sp, cur.pos(), "expected the name of what is raised", "raise IndexError");
      return;
    }
    if (!cur.at_end()) d.error(sp, cur.pos(), "unexpected text after 'raise " + p.exception + "'", "end of the post clause");
    return;
  }
  p.kind = Postcondition::Kind::kProse;
  c->post_info.gap =
      "post is prose; write 'output O satisfies elementwise_close(O, ref(O))', 'close(...)', "
      "'declared_policy P in {...}', 'bitwise_identical across N invocations' or 'raise E'";
}

// ---------------------------------------------------------------- tolerance
const std::vector<std::string>& tolerance_forms() {
  static const std::vector<std::string> v = {"absolute", "relative",      "ulp",  "elementwise",
                                             "per_precision", "bound", "none"};
  return v;
}

/// Checks that every function an expression calls exists.
bool known_calls(const Expr& e, const std::string& text, std::size_t base, const Span& sp, Diags& d) {
  std::vector<std::string> calls;
  collect_calls(e, &calls);
  const auto& known = known_functions();
  for (const auto& f : calls) {
    if (std::find(known.begin(), known.end(), f) != known.end()) continue;
    const std::size_t at = text.find(f);
    d.error(sp, base + (at == std::string::npos ? 0 : at), "unknown function '" + f + "'",
            "one of: " + join(known, ", "), nearest_word(f, known));
    return false;
  }
  return true;
}

/// One or more `absolute|relative|ulp E [signed]` tolerances, each optionally
/// qualified by the precisions it is for:
///   relative 1e-5                                  one tolerance for every precision
///   relative 1e-4 (FP32), relative 1e-3 (FP16)     per precision, in a list
///   relative 5e-3 for FP8E4M3                      per precision, one per line
///   absolute N * eps(P) * max|x| for precision P   P = the config's precision: every precision
/// A list of qualified items becomes per_precision {...}.
bool simple_tolerances(const Span& sp, Tolerance* tol, Diags& d) {
  const std::string& t = sp.text();
  const std::vector<std::string> kinds = {"absolute", "relative", "ulp"};
  struct Item {
    Tolerance tol;
    std::vector<DType> dtypes;
    bool every = false;  // `for precision P`
    std::size_t at = 0;
  };
  std::vector<Item> items;
  std::size_t pos = 0;
  for (;;) {
    Cursor cur(t, pos);
    Item it;
    it.at = skip_ws_at(t, pos);
    const std::string kind = cur.ident();
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) {
      d.error(sp, it.at, items.empty() ? "expected a tolerance" : "unexpected '" + t.substr(it.at, 12) + "' after a tolerance",
              "absolute E, relative E or ulp E, each optionally followed by (PRECISION) or 'for PRECISION'",
              nearest_word(kind, kinds));
      return false;
    }
    it.tol.kind = kind == "absolute" ? Tolerance::Kind::kAbsolute
                  : kind == "relative" ? Tolerance::Kind::kRelative
                                       : Tolerance::Kind::kUlp;
    const std::size_t eb = cur.pos();
    const std::string rest = t.substr(eb);
    if (trim(rest).empty()) {
      d.error(sp, eb, "missing expression", "a number or an expression such as N * eps(P)");
      return false;
    }
    ExprError err;
    std::size_t end = 0;
    if (!parse_expr_prefix(rest, &it.tol.value, &err, &end)) {
      d.error(sp, eb + err.offset, err.message, err.expected);
      return false;
    }
    if (!known_calls(it.tol.value, rest.substr(0, end), eb, sp, d)) return false;
    cur.set_pos(eb + end);
    // `ulp E signed`: +0 and -0 differ.
    if (it.tol.kind == Tolerance::Kind::kUlp && cur.accept_word("signed")) it.tol.signed_zeros = true;
    auto precision = [&](const std::string& name, std::size_t at) {
      if (name == "P") {
        it.every = true;
        return true;
      }
      auto dt = parse_dtype(name);
      if (!dt) {
        d.error(sp, at, "unknown precision '" + name + "'", "one of: " + dtype_list_text() + " (or P: every precision)",
                nearest_word(name, dtype_names()));
        return false;
      }
      it.dtypes.push_back(*dt);
      return true;
    };
    if (cur.peek() == '(') {  // (FP32) or (FP32, FP16)
      cur.accept('(');
      const std::size_t ib = cur.pos();
      const std::string inner = cur.until_top_level(')');
      cur.accept(')');
      for (auto [b, e] : split_top_level(inner, ',')) {
        const std::string name = trim(inner.substr(b, e - b));
        if (!precision(name, ib + skip_ws_at(inner, b))) return false;
      }
    } else if (cur.accept_word("for")) {  // for FP8E4M3 | for precision P | for FP32, FP16
      cur.accept_word("precisions") || cur.accept_word("precision");
      for (;;) {
        const std::size_t at = skip_ws_at(t, cur.pos());
        const std::string name = cur.word();
        if (name.empty()) {
          d.error(sp, at, "expected a precision after 'for'", "for FP32 or for precision P");
          return false;
        }
        if (!precision(name, at)) return false;
        // `, FP16` continues the precisions; `, relative ...` starts the next tolerance.
        Cursor next(t, cur.pos());
        if (!next.accept(',')) break;
        const std::string w = next.word();
        if (w.empty() || std::find(kinds.begin(), kinds.end(), w) != kinds.end() || !(w == "P" || parse_dtype(w)))
          break;
        cur.accept(',');
      }
    }
    if (it.every && !it.dtypes.empty()) {
      d.error(sp, it.at, "a tolerance is for precision P (every precision) or for named ones, not both",
              "for precision P, or for FP32, FP16");
      return false;
    }
    items.push_back(std::move(it));
    Cursor sep(t, cur.pos());
    if (sep.at_end()) break;
    if (!sep.accept(',') && !sep.accept(';')) sep.accept_word("and");
    pos = sep.pos();
  }
  if (items.size() == 1 && items[0].dtypes.empty()) {
    *tol = std::move(items[0].tol);
    return true;
  }
  tol->kind = Tolerance::Kind::kPerPrecision;
  tol->per_precision.clear();
  for (const Item& it : items) {
    if (it.dtypes.empty()) {
      d.error(sp, it.at, "in a list of tolerances each names the precisions it is for",
              "relative 1e-4 (FP32), relative 1e-3 (FP16)");
      return false;
    }
    for (DType dt : it.dtypes) {
      for (const auto& have : tol->per_precision) {
        if (have.dtype == dt) {
          d.error(sp, it.at, std::string(dtype_name(dt)) + " is given two tolerances", "one tolerance per precision");
          return false;
        }
      }
      tol->per_precision.push_back({dt, it.tol});
    }
  }
  return true;
}

/// Parses a structured tolerance from sp; returns false on error; *prose when not structured.
bool parse_tol(const Span& sp, Tolerance* tol, Diags& d, bool* prose) {
  const std::string& t = sp.text();
  Cursor cur(t);
  const std::string head = cur.ident();
  *prose = false;
  if (head == "none") {
    tol->kind = Tolerance::Kind::kNone;
    if (!cur.at_end()) {
      d.error(sp, cur.pos(), "unexpected text after 'none'", "end of the tolerance");
      return false;
    }
    return true;
  }
  if (head == "absolute" || head == "relative" || head == "ulp") return simple_tolerances(sp, tol, d);
  if (head == "elementwise") {
    tol->kind = Tolerance::Kind::kElementwise;
    const std::size_t b = cur.pos();
    const std::string rest = cur.rest();
    auto parts = split_top_level_word(rest, "and");
    if (parts.size() != 2) {
      d.error(sp, b, "elementwise takes an absolute and a relative part", "elementwise absolute 1e-6 and relative 1e-5");
      return false;
    }
    bool have_abs = false, have_rel = false;
    for (auto [pb, pe] : parts) {
      const std::string part = rest.substr(pb, pe - pb);
      Cursor pc(part);
      const std::size_t at = skip_ws_at(part, 0);
      const std::string kind = pc.ident();
      const std::size_t eb = pc.pos();
      if (kind == "absolute" && !have_abs) {
        have_abs = true;
        if (!expression(pc.rest(), b + pb + eb, sp, d, &tol->abs)) return false;
      } else if (kind == "relative" && !have_rel) {
        have_rel = true;
        if (!expression(pc.rest(), b + pb + eb, sp, d, &tol->rel)) return false;
      } else {
        d.error(sp, b + pb + at, "expected 'absolute E' or 'relative E'", "elementwise absolute 1e-6 and relative 1e-5",
                nearest_word(kind, {"absolute", "relative"}));
        return false;
      }
    }
    return true;
  }
  if (head == "per_precision") {
    tol->kind = Tolerance::Kind::kPerPrecision;
    if (!cur.accept('{')) {
      d.error(sp, cur.pos(), "expected '{' after per_precision", "per_precision {FP32: relative 1e-5, FP16: relative 1e-2}");
      return false;
    }
    const std::size_t base = cur.pos();
    const std::string inner = cur.until_top_level('}');
    if (!cur.accept('}')) {
      d.error(sp, cur.pos(), "missing '}'", "'}' to close per_precision");
      return false;
    }
    if (!cur.at_end()) {
      d.error(sp, cur.pos(), "unexpected text after per_precision {...}", "end of the tolerance");
      return false;
    }
    for (auto [pb, pe] : split_top_level(inner, ',')) {
      const std::string entry = inner.substr(pb, pe - pb);
      const std::size_t colon = entry.find(':');
      const std::size_t at = base + pb + skip_ws_at(entry, 0);
      if (colon == std::string::npos) {
        d.error(sp, at, "expected 'PRECISION: tolerance'", "FP32: relative 1e-5");
        return false;
      }
      const std::string name = trim(entry.substr(0, colon));
      auto dt = parse_dtype(name);
      if (!dt) {
        d.error(sp, at, "unknown precision '" + name + "'", "one of: " + dtype_list_text(), nearest_word(name, dtype_names()));
        return false;
      }
      Tolerance sub;
      bool sub_prose = false;
      Span sub_span = sp.sub(base + pb + colon + 1, base + pe).trimmed();
      if (!parse_tol(sub_span, &sub, d, &sub_prose)) return false;
      if (sub_prose || sub.kind == Tolerance::Kind::kPerPrecision) {
        d.error(sub_span, 0, "a per_precision entry is absolute, relative, ulp, elementwise, bound or none",
                "FP32: relative 1e-5");
        return false;
      }
      tol->per_precision.push_back({*dt, std::move(sub)});
    }
    if (tol->per_precision.empty()) {
      d.error(sp, base, "per_precision lists no precisions", "per_precision {FP32: relative 1e-5}");
      return false;
    }
    return true;
  }
  if (head == "bound") {
    tol->kind = Tolerance::Kind::kBound;
    const std::size_t b = cur.pos();
    const std::string rest = cur.rest();
    ExprError err;
    std::size_t end = 0;
    if (trim(rest).empty()) {
      d.error(sp, b, "missing bound factor", "bound gamma(K, P) * |A||B|");
      return false;
    }
    if (!parse_expr_prefix(rest, &tol->value, &err, &end)) {
      d.error(sp, b + err.offset, err.message, err.expected);
      return false;
    }
    std::string tail = trim(rest.substr(end));
    if (!tail.empty()) {
      if (tail[0] != '*') {
        d.error(sp, b + end, "unexpected '" + tail.substr(0, 1) + "' in bound", "bound FACTOR * |A||B|");
        return false;
      }
      tail = trim(tail.substr(1));
      const bool ok = tail.size() >= 3 && tail.front() == '|' && tail.back() == '|' &&
                      std::all_of(tail.begin(), tail.end(), [](char ch) {
                        return ch == '|' || is_ident_char(ch) || ch == ' ' || ch == '^' || ch == '\'';
                      });
      if (!ok) {
        d.error(sp, b + end, "malformed magnitude term '" + tail + "'", "a magnitude such as |A||B| or |x|");
        return false;
      }
      tail.erase(std::remove(tail.begin(), tail.end(), ' '), tail.end());
      tol->magnitude = tail;
    }
    std::vector<std::string> calls;
    collect_calls(tol->value, &calls);
    for (const auto& f : calls) {
      const auto& known = known_functions();
      if (std::find(known.begin(), known.end(), f) == known.end()) {
        d.error(sp, b + rest.find(f), "unknown function '" + f + "'", "one of: " + join(known, ", "),
                nearest_word(f, known));
        return false;
      }
    }
    return true;
  }
  const std::string near = nearest_word(head, tolerance_forms());
  if (!near.empty()) {
    d.error(sp, 0, "unknown tolerance form '" + head + "'", "one of: " + join(tolerance_forms(), ", "), near);
    return false;
  }
  *prose = true;
  tol->kind = Tolerance::Kind::kProse;
  return true;
}

void parse_tolerance(const Span& sp, Contract* c, Diags& d) {
  bool prose = false;
  if (!parse_tol(sp, &c->tolerance, d, &prose)) return;
  if (prose)
    c->tolerance_info.gap =
        "tolerance is prose; write absolute E, relative E, ulp E, elementwise absolute E and relative E, "
        "per_precision {P: tol, ...}, bound E * |A||B| or none (E may be an expression such as N * eps(P) * max|x|)";
}

// ---------------------------------------------------------------- reference
void parse_reference(const Span& sp, Contract* c, Diags& d) {
  const std::string& t = sp.text();
  Cursor cur(t);
  Reference& r = c->reference;
  const std::string head = cur.ident();
  if (head == "higher_precision") {
    r.kind = Reference::Kind::kHigherPrecision;
    const std::size_t at = skip_ws_at(t, cur.pos());
    const std::string name = cur.word();
    auto dt = parse_dtype(name);
    if (!dt) {
      d.error(sp, at, "unknown precision '" + name + "'", "a precision such as FP64", nearest_word(name, dtype_names()));
      return;
    }
    r.precision = *dt;
    if (cur.at_end()) return;
    if (!cur.accept_word("with")) {
      d.error(sp, cur.pos(), "expected 'with key = value, ...' or the end of the clause",
              "higher_precision FP64 with accumulator = FP64");
      return;
    }
    const std::size_t base = cur.pos();
    const std::string rest = cur.rest();
    for (auto [b, e] : split_top_level(rest, ',')) {
      const std::string item = rest.substr(b, e - b);
      const std::size_t eq = item.find('=');
      const std::string key = eq == std::string::npos ? "" : trim(item.substr(0, eq));
      const std::string value = eq == std::string::npos ? "" : trim(item.substr(eq + 1));
      if (key.empty() || value.empty()) {
        d.error(sp, base + b + skip_ws_at(item, 0), "expected 'key = value'", "with accumulator = FP64");
        return;
      }
      // The oracle gets one value per key: a second one would silently win.
      for (const auto& [k, v] : r.with)
        if (k == key) {
          d.error(sp, base + b + skip_ws_at(item, 0), "option '" + key + "' is given twice (" + v + ", " + value + ")",
                  "one value per key (`kc list oracle_options`)");
          return;
        }
      r.with.emplace_back(key, value);
    }
    return;
  }
  if (head == "alternate_stack" || head == "algebraic" || head == "stable_algorithm" || head == "spec") {
    r.kind = head == "alternate_stack"    ? Reference::Kind::kAlternateStack
             : head == "algebraic"        ? Reference::Kind::kAlgebraic
             : head == "stable_algorithm" ? Reference::Kind::kStableAlgorithm
                                          : Reference::Kind::kSpec;
    r.name = collapse_ws(cur.rest());
    if (r.name.empty()) d.error(sp, t.size(), "expected a name after '" + head + "'", head + " NAME");
    // A phrase ("spec the declared out-of-bounds policy") is prose: names are
    // one word, checked against the engine's tables at lint.
    else if (r.name.find(' ') != std::string::npos)
      d.error(sp, skip_ws_at(t, head.size()), "'" + head + "' takes one name, not a phrase",
              head + " NAME (`kc list oracles` lists them)");
    return;
  }
  const std::vector<std::string> forms = {"higher_precision", "alternate_stack", "algebraic", "stable_algorithm", "spec"};
  const std::string near = nearest_word(head, forms);
  if (!near.empty() && head.size() > 4) {
    d.error(sp, 0, "unknown reference form '" + head + "'", "one of: " + join(forms, ", "), near);
    return;
  }
  r.kind = Reference::Kind::kProse;
  c->reference_info.gap =
      "reference is prose; write higher_precision FP64 [with k = v], alternate_stack S, algebraic PROPERTY, "
      "stable_algorithm NAME or spec NAME";
}

// ---------------------------------------------------------------- measure
const std::vector<std::string>& stats() {
  static const std::vector<std::string> v = word_names(aggregate_table());
  return v;
}

/// The probe an `inject` names: an identifier (nan, saturation, oob, ...), or
/// the paper's spelling of non-finite values: NaN, Inf, -Inf, and lists of
/// them (NaN/Inf, NaN/+Inf/-Inf) — one value is that probe, several are
/// `nonfinite` (NaN, +Inf and -Inf in turn). Empty (and *why) if neither.
std::string anomaly_name(const std::string& token, std::string* why) {
  auto lower = [](std::string s) {
    for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return s;
  };
  if (token.empty()) return {};
  std::set<std::string> values;
  bool nonfinite_spelling = token.find('/') != std::string::npos;
  std::size_t start = 0;
  for (;;) {
    const std::size_t slash = token.find('/', start);
    const std::string part = lower(token.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    if (part == "nan") values.insert("nan");
    else if (part == "inf" || part == "+inf") values.insert("inf");
    else if (part == "-inf" || part == "neg_inf") values.insert("neg_inf");
    else if (part == "nonfinite") values.insert("nonfinite");
    else if (nonfinite_spelling || part.empty() || !is_ident_start(part[0]) ||
             part.find_first_of("+-") != std::string::npos) {
      *why = "'" + token + "' is not an anomaly kc injects";
      return {};
    } else {
      return token;  // another probe, by its name
    }
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  if (values.size() == 1) return *values.begin();
  return "nonfinite";
}

bool parse_aggregate(const std::string& text, Aggregate* agg) {
  Cursor c(text);
  const std::string stat = c.ident();
  const std::string metric = c.ident();
  if (std::find(stats().begin(), stats().end(), stat) == stats().end() || metric.empty() || !c.at_end()) return false;
  agg->stat = stat;
  agg->metric = metric;
  return true;
}

void parse_measure(const Span& sp, Contract* c, Diags& d) {
  const std::string& t = sp.text();
  Protocol& m = c->measure;
  auto steps = split_top_level(t, ';');
  const std::size_t hb = steps[0].first;
  const std::string head_text = t.substr(hb, steps[0].second - hb);
  Cursor cur(head_text);
  const std::string head = cur.ident();
  auto at = [&](std::size_t local) { return hb + local; };
  if (head == "sample") {
    m.kind = Protocol::Kind::kSample;
    const std::size_t n_at = skip_ws_at(head_text, cur.pos());
    double n = 0;
    if (!parse_number(cur.word(), &n) || n < 1 || n != std::floor(n) || n > 1e9) {
      d.error(sp, at(n_at), "expected a whole number of samples", "sample 100 random inputs per config");
      return;
    }
    m.count = static_cast<std::int64_t>(n);
    cur.accept_word("random");
    cur.accept_word("inputs");
    if (cur.accept_word("per")) {
      m.per = cur.ident();
      if (m.per.empty()) {
        d.error(sp, at(cur.pos()), "expected what the count is per", "per config");
        return;
      }
    }
    if (!cur.at_end()) {
      d.error(sp, at(cur.pos()), "unexpected text in sample step", "sample N random inputs per config");
      return;
    }
  } else if (head == "sweep") {
    m.kind = Protocol::Kind::kSweep;
    m.param = cur.ident();
    if (m.param.empty() || !cur.accept_word("in")) {
      d.error(sp, at(cur.pos()), "expected 'PARAM in {...}' after sweep", "sweep K in {256, 4096}");
      return;
    }
    Span head_span = sp.sub(hb, steps[0].second);
    if (!brace_values(cur, head_span, d, &m.values)) return;
    if (m.values.empty()) {
      d.error(sp, at(0), "sweep over an empty set", "sweep K in {256, 4096}");
      return;
    }
  } else if (head == "inject") {
    m.kind = Protocol::Kind::kInject;
    const std::size_t an_at = skip_ws_at(head_text, cur.pos());
    std::size_t an_end = an_at;
    while (an_end < head_text.size() &&
           (is_ident_char(head_text[an_end]) || head_text[an_end] == '/' || head_text[an_end] == '-' ||
            head_text[an_end] == '+'))
      ++an_end;
    const std::string token = head_text.substr(an_at, an_end - an_at);
    cur.set_pos(an_end);
    std::string why;
    m.anomaly = anomaly_name(token, &why);
    if (m.anomaly.empty()) {
      d.error(sp, at(an_at), why.empty() ? "expected the anomaly to inject" : why,
              "inject nan(A) at density 0.01, inject NaN/Inf at varied positions");
      return;
    }
    if (cur.peek() == '(') {
      cur.accept('(');
      const std::string inner = cur.until_top_level(')');
      if (!cur.accept(')')) {
        d.error(sp, at(cur.pos()), "missing ')'", "inject saturation(65504)");
        return;
      }
      for (auto [b, e] : split_top_level(inner, ',')) {
        std::string a = trim(inner.substr(b, e - b));
        if (!a.empty()) m.anomaly_args.push_back(a);
      }
    }
    while (cur.accept_word("at")) {
      if (cur.accept_word("varied") || cur.accept_word("random")) {
        // Every probe draws its positions afresh per sample; the words say so.
        if (!cur.accept_word("positions")) {
          d.error(sp, at(cur.pos()), "expected 'positions'", "at varied positions");
          return;
        }
        m.positions = "varied";
        continue;
      }
      if (!cur.accept_word("density")) {
        d.error(sp, at(cur.pos()), "expected 'density d' or 'varied positions' after 'at'", "at density 0.01");
        return;
      }
      const std::size_t d_at = skip_ws_at(head_text, cur.pos());
      double v = 0;
      if (!parse_number(cur.word(), &v) || !(v > 0 && v <= 1)) {
        d.error(sp, at(d_at), "density is a fraction in (0, 1]", "at density 0.01");
        return;
      }
      m.density = v;
    }
    if (!cur.at_end()) {
      d.error(sp, at(cur.pos()), "unexpected text in inject step", "inject ANOMALY[(args)] [at density d]");
      return;
    }
  } else if (head == "enumerate") {
    m.kind = Protocol::Kind::kEnumerate;
    m.param = cur.ident();
    if (m.param.empty()) {
      d.error(sp, at(cur.pos()), "expected the space to enumerate", "enumerate schedules");
      return;
    }
    cur.accept_word("in");
    if (cur.peek() == '{') {
      Span head_span = sp.sub(hb, steps[0].second);
      if (!brace_values(cur, head_span, d, &m.values)) return;
    }
    if (!cur.at_end()) {
      d.error(sp, at(cur.pos()), "unexpected text in enumerate step", "enumerate SPACE [{v, ...}]");
      return;
    }
  } else {
    const std::vector<std::string> forms = {"sample", "sweep", "inject", "enumerate"};
    const std::string near = nearest_word(head, forms);
    if (!near.empty() && head.size() > 4) {
      d.error(sp, at(0), "unknown protocol '" + head + "'", "one of: " + join(forms, ", "), near);
      return;
    }
    m.kind = Protocol::Kind::kProse;
    c->measure_info.gap =
        "measure is prose; write 'sample N random inputs per config; compute max METRIC; pass if <= X', "
        "'sweep P in {...}; ...', 'inject ANOMALY; observe ...' or 'enumerate SPACE; ...'";
    return;
  }
  std::vector<std::string> unknown;
  for (std::size_t i = 1; i < steps.size(); ++i) {
    const auto [b, e] = steps[i];
    const std::string step = t.substr(b, e - b);
    Cursor sc(step);
    const std::size_t s_at = b + skip_ws_at(step, 0);
    const std::string verb = sc.ident();
    if (verb == "compute") {
      Aggregate agg;
      const std::string what = trim(sc.rest());
      if (!parse_aggregate(what, &agg)) {
        Cursor wc(what);
        const std::string stat = wc.ident();
        if (!wc.ident().empty() && wc.at_end()) {  // two words: the statistic is not one kc computes
          unknown_name(d, sp, b + step.find(stat), "statistic", stat, stats());
          return;
        }
        d.error(sp, s_at, "expected 'compute STAT METRIC'", "compute max bound_ratio (STAT: " + join(stats(), ", ") + ")");
        return;
      }
      m.aggregate = agg;
    } else if (verb == "observe") {
      m.observe = collapse_ws(sc.rest());
      Aggregate agg;
      if (parse_aggregate(m.observe, &agg) && !m.aggregate) m.aggregate = agg;
      if (m.observe.empty()) {
        d.error(sp, s_at, "expected what is observed", "observe max rel_error");
        return;
      }
    } else if (verb == "pass") {
      if (!sc.accept_word("if")) {
        d.error(sp, s_at, "expected 'pass if CMP X'", "pass if <= 1");
        return;
      }
      PassIf pi;
      for (const char* op : {"<=", ">=", "==", "<", ">"}) {
        if (sc.accept(std::string_view(op))) {
          pi.cmp = op;
          break;
        }
      }
      if (pi.cmp.empty()) {
        d.error(sp, b + sc.pos(), "expected a comparison", "pass if <= 1");
        return;
      }
      const std::size_t eb = sc.pos();
      if (!expression(sc.rest(), b + eb, sp, d, &pi.bound)) return;
      m.pass_if = pi;
    } else if (verb == "time") {
      // time latency across SIZE + N | SIZE - N | SIZE = N
      const char* form = "time latency across K + 1 (or K = 257)";
      if (!sc.accept_word("latency") || !sc.accept_word("across")) {
        d.error(sp, s_at, "expected 'time latency across SIZE + N'", form);
        return;
      }
      LatencyAcross la;
      la.size = sc.ident();
      if (la.size.empty()) {
        d.error(sp, b + sc.pos(), "expected the size that crosses the boundary", form);
        return;
      }
      int sign = 1;
      if (sc.accept('='))
        la.absolute = true;
      else if (sc.accept('-'))
        sign = -1;
      else if (!sc.accept('+')) {
        d.error(sp, b + sc.pos(), "expected '+ N', '- N' or '= N' after " + la.size, form);
        return;
      }
      const std::size_t n_at = b + skip_ws_at(step, sc.pos());
      double n = 0;
      if (!parse_number(sc.word(), &n) || n != std::floor(n) || n < 1 || n > 1e12) {
        d.error(sp, n_at, la.absolute ? "expected a positive whole size" : "expected a positive whole offset", form);
        return;
      }
      la.value = sign * static_cast<std::int64_t>(n);
      if (sc.accept_word("beyond")) {
        const std::size_t f_at = b + skip_ws_at(step, sc.pos());
        std::string f = sc.word();
        if (!f.empty() && (f.back() == 'x' || f.back() == 'X')) f.pop_back();
        if (!parse_number(f, &la.beyond) || !(la.beyond >= 1) || la.beyond > 1e6) {
          d.error(sp, f_at, "expected the factor a change of time per unit of work must reach (at least 1)",
                  "time latency across K + 1 beyond 2");
          return;
        }
      }
      if (!sc.at_end()) {
        d.error(sp, b + sc.pos(), "unexpected text in time step", form);
        return;
      }
      m.latency = la;
    } else if (verb.empty() && trim(step).empty()) {
      // a trailing ';' — harmless
    } else {
      // A misspelt verb still has its step's shape (`comput max ulp`, `pas if
      // <= 1`); an English step that merely starts with a similar word
      // ("compare against the reference") is prose.
      const std::string near = nearest_word(verb, {"compute", "observe", "pass", "time"});
      std::istringstream words(sc.rest());
      std::vector<std::string> args{std::istream_iterator<std::string>(words), std::istream_iterator<std::string>()};
      const bool step_shaped = args.size() <= 2 || (near == "pass" && args.front() == "if");
      if (!near.empty() && step_shaped) {
        d.error(sp, s_at, "unknown protocol step '" + verb + "'", "compute, observe, pass if or time latency", near);
        return;
      }
      unknown.push_back("'" + trim(step) + "'");
    }
  }
  if (!unknown.empty())
    c->measure_info.gap = "protocol step" + std::string(unknown.size() > 1 ? "s " : " ") + join(unknown, ", ") +
                          " not executable; steps are compute STAT METRIC, observe WHAT, pass if CMP X, "
                          "time latency across SIZE + N";
}

// ---------------------------------------------------------------- violation
void parse_violation(const Span& sp, Contract* c, Diags& d) {
  const std::string& t = sp.text();
  ViolationSpec& v = c->violation;
  // Free text (the paper's form), then optionally `signature A, B(x)`: the
  // last top-level `signature` followed by upper-case names starts the list;
  // the word inside prose ("a signature of ...") is text.
  auto parts = split_top_level_word(t, "signature");
  std::size_t list_begin = std::string::npos;
  if (parts.size() >= 2) {
    const std::size_t b = parts.back().first;
    const std::string after = trim(t.substr(b, parts.back().second - b));
    if (!after.empty() && after[0] >= 'A' && after[0] <= 'Z') list_begin = b;
  }
  const std::size_t text_end =
      list_begin == std::string::npos ? t.size() : parts[parts.size() - 2].second;
  const std::string text_part = trim(t.substr(0, text_end));
  if (!text_part.empty()) {
    Cursor tc(text_part);
    std::string q;
    bool unterminated = false;
    if (tc.quoted(&q, &unterminated) && !unterminated && tc.at_end()) v.text = q;
    else v.text = collapse_ws(text_part);
  }
  if (list_begin == std::string::npos) return;
  const std::size_t base = list_begin;
  const std::string list = t.substr(base);
  for (auto [b, e] : split_top_level(list, ',')) {
    const std::string item = list.substr(b, e - b);
    const std::size_t at = base + b + skip_ws_at(item, 0);
    Cursor ic(item);
    Signature s;
    s.name = ic.ident();
    if (s.name.empty()) {
      d.error(sp, at, "expected a signature name", "SATURATION(65504)");
      return;
    }
    if (ic.accept('(')) {
      const std::string inner = ic.until_top_level(')');
      if (!ic.accept(')')) {
        d.error(sp, base + b + ic.pos(), "missing ')'", s.name + "(...)");
        return;
      }
      for (auto [ab, ae] : split_top_level(inner, ',')) {
        // An argument is one token of text: a line break inside it is a space.
        std::string a = collapse_ws(trim(inner.substr(ab, ae - ab)));
        if (a.empty()) {
          d.error(sp, at, "empty signature argument", s.name + "(x)");
          return;
        }
        s.args.push_back(a);
      }
    }
    if (!ic.at_end()) {
      d.error(sp, base + b + ic.pos(), "unexpected text after signature " + s.name, "',' between signatures");
      return;
    }
    const auto& known = known_signatures();
    if (std::find(known.begin(), known.end(), s.name) == known.end()) {
      unknown_name(d, sp, at, "signature", s.name, known);
      return;
    }
    v.signatures.push_back(std::move(s));
  }
  if (v.signatures.empty()) d.error(sp, base, "'signature' lists nothing", "signature SATURATION(65504)");
}

/// What a form's parser objected to, as one line: the gap of a prose clause.
std::string gap_text(const Diagnostic& e) {
  std::string g = e.message;
  if (!e.suggestion.empty()) g += " (did you mean '" + e.suggestion + "'?)";
  if (!e.expected.empty()) g += "; executable form: " + e.expected;
  return g;
}

/// Turns a clause whose structured parse failed into prose: the typed part is
/// reset (nothing half-parsed reaches the engine) and the gap says why.
void make_prose(std::string_view keyword, const Diagnostic& e, Contract* c, ClauseInfo* info) {
  if (keyword == "scope") {
    c->scope.clear();
  } else if (keyword == "pre") {
    for (Predicate& p : c->pre) p.kind = Predicate::Kind::kProse;
  } else if (keyword == "post") {
    c->post = Postcondition{};
  } else if (keyword == "tolerance") {
    c->tolerance = Tolerance{};
    c->tolerance.kind = Tolerance::Kind::kProse;
  } else if (keyword == "reference") {
    c->reference = Reference{};
  } else if (keyword == "measure") {
    c->measure = Protocol{};
  } else if (keyword == "violation") {
    c->violation = ViolationSpec{};
    c->violation.text = info->text;
  }
  info->gap = std::string(keyword) + " is prose: " + gap_text(e);
  info->gap_loc = e.loc;
}

ClauseInfo* info_for(std::string_view keyword, Contract* c) {
  if (keyword == "scope") return &c->scope_info;
  if (keyword == "pre") return &c->pre_info;
  if (keyword == "post") return &c->post_info;
  if (keyword == "tolerance") return &c->tolerance_info;
  if (keyword == "reference") return &c->reference_info;
  if (keyword == "measure") return &c->measure_info;
  if (keyword == "violation") return &c->violation_info;
  return nullptr;
}

std::string print_tol_value(const Expr& e) { return print_expr(e); }

}  // namespace

}  // namespace kc::lang::detail

namespace kc::lang {

std::string sample_fraction_gap(const Contract& c) {
  const Protocol& m = c.measure;
  if (!m.aggregate || m.aggregate->stat != "failing_fraction") return {};
  if (m.kind != Protocol::Kind::kSample)
    return "failing_fraction counts failing samples among 'sample N random inputs per config'; this protocol "
           "draws no random samples to count";
  if (!m.pass_if || m.pass_if->cmp != "<=")
    return "failing_fraction needs the allowed fraction: 'pass if <= p' with p in [0, 1]";
  const auto p = eval_expr(m.pass_if->bound, {});
  if (!p.ok() || !(*p >= 0 && *p <= 1))
    return "failing_fraction's 'pass if <= " + print_expr(m.pass_if->bound) +
           "' is not a fraction in [0, 1] (write 0.01 for 1%)";
  const Postcondition::Kind post = c.post.kind;
  if (post != Postcondition::Kind::kElementwiseClose && post != Postcondition::Kind::kClose)
    return "failing_fraction judges each sample by comparing its outputs with the reference; the post clause "
           "must be 'output O satisfies elementwise_close(O, ref(O))' or 'close(O, ref(O))'";
  if (c.reference.kind == Reference::Kind::kAlgebraic && c.reference.name.find('.') != std::string::npos)
    return "failing_fraction counts samples beyond an oracle's tolerance; an algebraic property judges no "
           "tolerance per sample";
  return {};
}

}  // namespace kc::lang

namespace kc::lang::detail {

void check_cross_clauses(Contract* c) {
  if (!c->measure_info.present || !c->measure_info.gap.empty()) return;
  if (std::string gap = sample_fraction_gap(*c); !gap.empty()) c->measure_info.gap = std::move(gap);
}

const std::vector<std::string>& contract_clause_keywords() {
  static const std::vector<std::string> v = {"scope", "pre", "post", "tolerance", "reference", "measure", "violation"};
  return v;
}

const std::vector<std::string>& contract_meta_keywords() {
  static const std::vector<std::string> v = {"title", "version", "class", "retest"};
  return v;
}

void parse_clause(std::string_view keyword, const Span& body_in, Contract* c, Diags& d) {
  ClauseInfo* info = info_for(keyword, c);
  if (!info) return;
  const Span body = body_in.trimmed();
  info->present = true;
  info->text = collapse_ws(body.text());
  if (body.text().empty()) {
    info->gap = "the " + std::string(keyword) + " clause is empty; write its content after the keyword";
    info->gap_loc = body.loc(0);
    return;
  }
  // Structure is the only hard error inside a clause: brackets and quotes balance.
  if (!check_brackets(body, d, keyword)) {
    info->gap = "the clause has unbalanced brackets";
    return;
  }
  // A clause that does not match one of its structured forms is prose: what
  // the form's parser objected to becomes the gap lint reports, at its place.
  std::vector<Diagnostic> found;
  Diags sub(&found);
  if (keyword == "scope") parse_scope(body, c, sub);
  else if (keyword == "pre") parse_pre(body, c, sub);
  else if (keyword == "post") parse_post(body, c, sub);
  else if (keyword == "tolerance") parse_tolerance(body, c, sub);
  else if (keyword == "reference") parse_reference(body, c, sub);
  else if (keyword == "measure") parse_measure(body, c, sub);
  else if (keyword == "violation") parse_violation(body, c, sub);
  const Diagnostic* first_error = nullptr;
  for (const Diagnostic& x : found) {
    // A misspelt word (op class, probe, signature, ... close to a known one)
    // is an error with the suggestion; any other gap makes the clause prose.
    if (x.severity != Diagnostic::Severity::kError || is_unknown_name(x)) d.add(x);
    if (x.severity == Diagnostic::Severity::kError && !first_error) first_error = &x;
  }
  if (first_error) {
    make_prose(keyword, *first_error, c, info);
    return;
  }
  std::vector<Diagnostic> named;
  Diags names(&named);
  if (check_clause_names(keyword, body, *c, names)) return;
  const Diagnostic* unlike_any = nullptr;  // a word near no known word: the clause is prose
  for (const Diagnostic& x : named) {
    if (x.severity != Diagnostic::Severity::kError || is_unknown_name(x)) d.add(x);
    else if (!unlike_any) unlike_any = &x;
  }
  if (unlike_any) {
    make_prose(keyword, *unlike_any, c, info);
  } else {
    info->gap = "the " + std::string(keyword) + " clause names a word kc does not know";
    info->gap_loc = body.loc(0);
  }
}

void parse_meta(std::string_view keyword, const Span& body, Contract* c, Diags& d) {
  const std::string value = parse_text_value(body.trimmed(), d);
  if (value.empty()) {
    d.error(body, 0, "'" + std::string(keyword) + "' needs a value", std::string(keyword) + " \"...\"");
    return;
  }
  if (!check_meta_name(keyword, body.trimmed(), value, d)) return;
  // A retest line is stored in its canonical spelling (spaces inside the
  // list do not matter), so the printed contract reads back the same.
  if (keyword == "retest") {
    c->meta["retest"] = retest_text(*parse_retest(value));
    return;
  }
  c->meta[std::string(keyword)] = value;
}

std::string print_predicate(const Predicate& p) {
  switch (p.kind) {
    case Predicate::Kind::kPrecision: {
      std::vector<std::string> names;
      for (DType t : p.dtypes) names.emplace_back(dtype_name(t));
      return "precision(" + join(p.tensors, ", ") + ") in {" + join(names, ", ") + "}";
    }
    case Predicate::Kind::kShape: {
      std::string s = "shape(" + join(p.tensors, ", ") + ") = (" + join(p.dims, ", ") + ")";
      for (std::size_t i = 0; i < p.dim_sets.size(); ++i)
        s += (i ? ", " : " with ") + p.dim_sets[i].first + " in {" + join(p.dim_sets[i].second, ", ") + "}";
      return s;
    }
    case Predicate::Kind::kValueRange: {
      std::string head = "value_range(" + join(p.tensors, ", ") + ") ";
      switch (p.range) {
        case Predicate::Range::kFinite: return head + "finite";
        case Predicate::Range::kBounded: return head + "bounded " + format_number(p.hi);
        case Predicate::Range::kInterval: return head + "in [" + format_number(p.lo) + ", " + format_number(p.hi) + "]";
        case Predicate::Range::kNormal: return head + "normal(" + format_number(p.lo) + ", " + format_number(p.hi) + ")";
      }
      return head;
    }
    case Predicate::Kind::kStack:
      return p.values.size() > 1 ? "stack in {" + join(p.values, ", ") + "}"
                                 : "stack = " + (p.values.empty() ? "" : p.values[0]);
    case Predicate::Kind::kFlag: return "flag(" + p.key + ") = " + (p.values.empty() ? "" : p.values[0]);
    case Predicate::Kind::kVersion: return "version " + p.cmp + " " + (p.values.empty() ? "" : p.values[0]);
    case Predicate::Kind::kDeclared:
      if (p.cmp == "in") return "declared " + p.key + " in {" + join(p.values, ", ") + "}";
      return "declared " + p.key + " = " + (p.values.empty() ? "" : p.values[0]);
    case Predicate::Kind::kParamIn: return p.key + " in {" + join(p.values, ", ") + "}";
    case Predicate::Kind::kProse: return p.text;
  }
  return p.text;
}

std::string print_tolerance(const Tolerance& t) {
  switch (t.kind) {
    case Tolerance::Kind::kAbsolute: return "absolute " + print_tol_value(t.value);
    case Tolerance::Kind::kRelative: return "relative " + print_tol_value(t.value);
    case Tolerance::Kind::kUlp: return "ulp " + print_tol_value(t.value) + (t.signed_zeros ? " signed" : "");
    case Tolerance::Kind::kElementwise:
      return "elementwise absolute " + print_expr(t.abs) + " and relative " + print_expr(t.rel);
    case Tolerance::Kind::kPerPrecision: {
      std::vector<std::string> parts;
      for (const auto& [dt, sub] : t.per_precision)
        parts.push_back(std::string(dtype_name(dt)) + ": " + print_tolerance(sub));
      return "per_precision {" + join(parts, ", ") + "}";
    }
    case Tolerance::Kind::kBound: {
      std::string out = "bound " + print_expr(t.value);
      if (!t.magnitude.empty()) out += " * " + t.magnitude;
      return out;
    }
    case Tolerance::Kind::kNone: return "none";
    case Tolerance::Kind::kProse: return {};
  }
  return {};
}

std::vector<std::string> print_clause(std::string_view keyword, const Contract& c) {
  const ClauseInfo* info = info_for(keyword, const_cast<Contract*>(&c));
  if (!info || !info->present) return {};
  const bool prose_clause = !info->gap.empty() && keyword != "pre" && keyword != "measure";
  if (prose_clause && keyword != "scope") return {info->text};
  if (keyword == "scope") {
    if (c.scope.empty()) return {info->text};
    return {join(c.scope, ", ")};
  }
  if (keyword == "pre") {
    std::vector<std::string> lines;
    for (std::size_t i = 0; i < c.pre.size(); ++i) lines.push_back((i ? "and " : "") + print_predicate(c.pre[i]));
    if (lines.empty()) lines.push_back(info->text);
    return lines;
  }
  if (keyword == "post") {
    const Postcondition& p = c.post;
    switch (p.kind) {
      case Postcondition::Kind::kElementwiseClose:
      case Postcondition::Kind::kClose: {
        const std::string rel = p.kind == Postcondition::Kind::kClose ? "close" : "elementwise_close";
        const std::string ref = p.ref_args.empty() ? p.output : join(p.ref_args, ", ");
        return {"output " + p.output + " satisfies " + rel + "(" + p.output + ", ref(" + ref + "))" +
                (p.or_raise.empty() ? "" : " or raise " + p.or_raise)};
      }
      case Postcondition::Kind::kDeclaredPolicy:
        return {"declared_policy " + p.policy + " in {" + join(p.allowed, ", ") + "}"};
      case Postcondition::Kind::kBitwiseIdentical:
        return {"bitwise_identical across " + std::to_string(p.invocations) + " invocations"};
      case Postcondition::Kind::kRaise: return {"raise " + p.exception};
      case Postcondition::Kind::kProse: return {info->text};
    }
  }
  if (keyword == "tolerance") {
    std::string s = print_tolerance(c.tolerance);
    return {s.empty() ? info->text : s};
  }
  if (keyword == "reference") {
    const Reference& r = c.reference;
    switch (r.kind) {
      case Reference::Kind::kHigherPrecision: {
        std::string s = "higher_precision " + std::string(dtype_name(r.precision));
        if (!r.with.empty()) {
          std::vector<std::string> kv;
          for (const auto& [k, v] : r.with) kv.push_back(k + " = " + v);
          s += " with " + join(kv, ", ");
        }
        return {s};
      }
      case Reference::Kind::kAlternateStack: return {"alternate_stack " + r.name};
      case Reference::Kind::kAlgebraic: return {"algebraic " + r.name};
      case Reference::Kind::kStableAlgorithm: return {"stable_algorithm " + r.name};
      case Reference::Kind::kSpec: return {"spec " + r.name};
      case Reference::Kind::kProse: return {info->text};
    }
  }
  if (keyword == "measure") {
    const Protocol& m = c.measure;
    if (m.kind == Protocol::Kind::kProse || !info->gap.empty()) return {info->text};
    std::string s;
    switch (m.kind) {
      case Protocol::Kind::kSample:
        s = "sample " + std::to_string(m.count) + " random inputs per " + m.per;
        break;
      case Protocol::Kind::kSweep: s = "sweep " + m.param + " in {" + join(m.values, ", ") + "}"; break;
      case Protocol::Kind::kInject:
        s = "inject " + m.anomaly;
        if (!m.anomaly_args.empty()) s += "(" + join(m.anomaly_args, ", ") + ")";
        if (m.density) s += " at density " + format_number(*m.density);
        if (!m.positions.empty()) s += " at " + m.positions + " positions";
        break;
      case Protocol::Kind::kEnumerate:
        s = "enumerate " + m.param;
        if (!m.values.empty()) s += " {" + join(m.values, ", ") + "}";
        break;
      case Protocol::Kind::kProse: break;
    }
    Aggregate from_observe;
    const bool observe_is_agg = !m.observe.empty() && parse_aggregate(m.observe, &from_observe) && m.aggregate &&
                                m.aggregate->stat == from_observe.stat && m.aggregate->metric == from_observe.metric;
    if (m.aggregate && !observe_is_agg) s += "; compute " + m.aggregate->stat + " " + m.aggregate->metric;
    if (!m.observe.empty()) s += "; observe " + m.observe;
    if (m.pass_if) s += "; pass if " + m.pass_if->cmp + " " + print_expr(m.pass_if->bound);
    if (m.latency) s += "; time latency across " + m.latency->to_string();
    return {s};
  }
  if (keyword == "violation") {
    const ViolationSpec& v = c.violation;
    std::vector<std::string> lines;
    if (!v.text.empty()) lines.push_back(quote(v.text));
    if (!v.signatures.empty()) {
      std::vector<std::string> sigs;
      for (const auto& s : v.signatures) sigs.push_back(s.to_string());
      lines.push_back("signature " + join(sigs, ", "));
    }
    if (lines.empty()) lines.push_back(info->text);
    return lines;
  }
  return {info->text};
}

// ---------------------------------------------------------------- impl / calibration / suite
const std::vector<std::string>& impl_keywords() {
  static const std::vector<std::string> v = {"op",        "backend", "dtypes", "declares", "shape_class",
                                             "schedules", "source",  "description"};
  return v;
}
const std::vector<std::string>& calibration_keywords() {
  static const std::vector<std::string> v = {"baseline", "bad", "good", "visible"};
  return v;
}
const std::vector<std::string>& suite_keywords() {
  static const std::vector<std::string> v = {"tier", "contracts", "impls"};
  return v;
}

std::vector<std::string> parse_list(const Span& body, Diags& d, std::string_view what) {
  std::vector<std::string> out;
  std::string t = body.text();
  std::size_t shift = 0;
  // Allow {a, b} as well as a, b.
  const std::string tt = trim(t);
  if (tt.size() >= 2 && tt.front() == '{' && tt.back() == '}') {
    shift = t.find('{') + 1;
    t = t.substr(shift, t.rfind('}') - shift);
  }
  for (auto [b, e] : split_top_level(t, ',')) {
    std::string item = trim(t.substr(b, e - b));
    if (item.empty()) {
      d.error(body, shift + b, "empty item in " + std::string(what) + " list", "items separated by ','");
      continue;
    }
    if (!valid_plain_name(item)) {
      d.error(body, shift + b + skip_ws_at(t, b) - b, "'" + item + "' is not one name in the " + std::string(what) + " list",
              "names or globs separated by ','");
      continue;
    }
    out.push_back(item);
  }
  return out;
}

std::string parse_text_value(const Span& body, Diags& d) {
  Cursor c(body.text());
  std::string q;
  bool unterminated = false;
  if (c.quoted(&q, &unterminated)) {
    if (unterminated) d.error(body, 0, "unterminated string", "a closing '\"'");
    else if (!c.at_end()) d.error(body, c.pos(), "unexpected text after the string", "end of line");
    return q;
  }
  return collapse_ws(body.text());
}

void parse_impl_key(std::string_view keyword, const Span& body_in, Declaration* decl, Diags& d) {
  const Span body = body_in.trimmed();
  const std::string& t = body.text();
  if (keyword == "op" || keyword == "backend") {
    Cursor c(t);
    const std::string v = c.ident();
    if (v.empty() || !c.at_end()) {
      d.error(body, 0, "expected one name after '" + std::string(keyword) + "'", std::string(keyword) + " matmul");
      return;
    }
    if (keyword == "op") {
      const auto& known = known_op_classes();
      if (std::find(known.begin(), known.end(), v) == known.end()) {
        d.error(body, 0, "unknown op '" + v + "'", "one of: " + join(known, ", "), nearest_word(v, known));
        return;
      }
      decl->op = v;
    } else {
      decl->backend = v;
    }
  } else if (keyword == "dtypes") {
    for (const auto& name : parse_list(body, d, "dtypes")) {
      auto dt = parse_dtype(name);
      if (!dt) {
        d.error(body, t.find(name), "unknown precision '" + name + "'", "one of: " + dtype_list_text(),
                nearest_word(name, dtype_names()));
        continue;
      }
      decl->dtypes.push_back(*dt);
    }
  } else if (keyword == "declares") {
    for (auto [b, e] : split_top_level(t, ',')) {
      const std::string item = t.substr(b, e - b);
      const std::size_t eq = item.find('=');
      const std::size_t at = b + skip_ws_at(item, 0);
      const std::string key = eq == std::string::npos ? "" : trim(item.substr(0, eq));
      const std::string value = eq == std::string::npos ? "" : trim(item.substr(eq + 1));
      if (key.empty() || value.empty()) {
        d.error(body, at, "expected 'key = VALUE'", "declares accumulator = FP32, determinism = BITWISE");
        continue;
      }
      std::string err;
      if (!decl->set(key, value, &err)) {
        const std::size_t vat = b + item.find(value, eq);
        d.error(body, vat, "bad value '" + value + "' for " + key, err);
      }
    }
  } else if (keyword == "shape_class") {
    decl->shape_class = collapse_ws(t);
  } else if (keyword == "schedules") {
    decl->schedules = parse_list(body, d, "schedules");
  } else if (keyword == "source") {
    decl->source = parse_text_value(body, d);
  } else if (keyword == "description") {
    decl->description = parse_text_value(body, d);
  }
}

std::vector<std::pair<std::string, std::string>> print_impl(const Declaration& decl) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!decl.op.empty()) out.emplace_back("op", decl.op);
  if (!decl.backend.empty()) out.emplace_back("backend", decl.backend);
  if (!decl.dtypes.empty()) {
    std::vector<std::string> names;
    for (DType t : decl.dtypes) names.emplace_back(dtype_name(t));
    out.emplace_back("dtypes", join(names, ", "));
  }
  std::vector<std::string> decls;
  for (const char* key : {"accumulator", "determinism", "nan", "denormal", "oob"}) {
    const std::string v = decl.get(key);
    if (!v.empty()) decls.push_back(std::string(key) + " = " + v);
  }
  for (const auto& [k, v] : decl.extra) decls.push_back(k + " = " + v);
  if (!decls.empty()) out.emplace_back("declares", join(decls, ", "));
  if (decl.shape_class != "any") out.emplace_back("shape_class", decl.shape_class);
  if (!decl.schedules.empty()) out.emplace_back("schedules", "{" + join(decl.schedules, ", ") + "}");
  if (!decl.source.empty()) out.emplace_back("source", quote(decl.source));
  if (!decl.description.empty()) out.emplace_back("description", quote(decl.description));
  return out;
}

void parse_calibration_key(std::string_view keyword, const Span& body_in, Calibration* cal, Diags& d) {
  const Span body = body_in.trimmed();
  if (keyword == "visible") {
    cal->visible = parse_text_value(body, d);
    return;
  }
  Cursor c(body.text());
  const std::string v = c.ident();
  if (v.empty() || !c.at_end()) {
    d.error(body, 0, "expected one impl name after '" + std::string(keyword) + "'", std::string(keyword) + " calib.matmul_fp32");
    return;
  }
  if (keyword == "baseline") cal->baseline = v;
  else if (keyword == "bad") cal->bad = v;
  else if (keyword == "good") cal->good = v;
}

void parse_suite_key(std::string_view keyword, const Span& body_in, Suite* suite, Diags& d) {
  const Span body = body_in.trimmed();
  if (keyword == "tier") {
    const std::string v = trim(body.text());
    const std::vector<std::string> tiers = {"smoke", "ci", "full"};
    if (std::find(tiers.begin(), tiers.end(), v) == tiers.end()) {
      d.error(body, 0, "unknown tier '" + v + "'", "smoke, ci or full", nearest_word(v, tiers));
      return;
    }
    suite->tier = v;
  } else if (keyword == "contracts") {
    suite->contracts = parse_list(body, d, "contracts");
  } else if (keyword == "impls") {
    suite->impls = parse_list(body, d, "impls");
  }
}

}  // namespace kc::lang::detail
