// kc — tolerance expressions: parse, print, evaluate.
//
//   expr    := term (('+' | '-') term)*
//   term    := unary (('*' | '/') unary)*
//   unary   := '-' unary | power
//   power   := primary ('^' unary)?
//   primary := NUMBER | '(' expr ')' | NAME '(' expr (',' expr)* ')'
//            | ('max' | 'sum') '|' NAME '|'        -- input magnitudes
//            | NAME
#include <cmath>
#include <string>

#include "kc/lang.h"
#include "lang/expr_internal.h"
#include "lang/source.h"

namespace kc {

Expr Expr::num(double v, std::string text) {
  Expr e;
  e.kind = Kind::kNumber;
  e.number = v;
  e.text = std::move(text);
  return e;
}

Expr Expr::var(std::string name) {
  Expr e;
  e.kind = Kind::kVar;
  e.name = std::move(name);
  return e;
}

Expr Expr::call(std::string fn, std::vector<Expr> args) {
  Expr e;
  e.kind = Kind::kCall;
  e.name = std::move(fn);
  e.args = std::move(args);
  return e;
}

Expr Expr::binary(char op, Expr lhs, Expr rhs) {
  Expr e;
  e.kind = Kind::kBinary;
  e.op = op;
  e.args.push_back(std::move(lhs));
  e.args.push_back(std::move(rhs));
  return e;
}

}  // namespace kc

namespace kc::lang {
namespace detail {
namespace {

constexpr int kMaxDepth = 64;  // nesting limit: hostile input must not blow the stack

class ExprParser {
 public:
  explicit ExprParser(const std::string& text) : c_(text) {}

  bool parse(Expr* out, ExprError* err, std::size_t* end = nullptr) {
    if (!expr(out, 0)) {
      *err = err_;
      return false;
    }
    if (end) {
      c_.skip_ws();
      *end = c_.pos();
      return true;
    }
    if (!c_.at_end()) {
      *err = {c_.pos(), "unexpected '" + std::string(1, c_.peek()) + "' in expression",
              "an operator (+ - * / ^) or the end of the expression"};
      return false;
    }
    return true;
  }

 private:
  bool fail(std::size_t at, std::string msg, std::string expected = {}) {
    if (err_.message.empty()) err_ = {at, std::move(msg), std::move(expected)};
    return false;
  }

  bool expr(Expr* out, int depth) {
    if (depth > kMaxDepth) return fail(c_.pos(), "expression nested too deeply");
    Expr lhs;
    if (!term(&lhs, depth)) return false;
    for (;;) {
      const char op = c_.peek();
      if (op != '+' && op != '-') break;
      c_.accept(op);
      Expr rhs;
      if (!term(&rhs, depth)) return false;
      lhs = Expr::binary(op, std::move(lhs), std::move(rhs));
    }
    *out = std::move(lhs);
    return true;
  }

  bool term(Expr* out, int depth) {
    Expr lhs;
    if (!unary(&lhs, depth)) return false;
    for (;;) {
      const char op = c_.peek();
      if (op != '*' && op != '/') break;
      // `* |A||B|` is a bound's magnitude term, not part of the expression.
      const std::size_t save = c_.pos();
      c_.accept(op);
      if (c_.peek() == '|') {
        c_.set_pos(save);
        break;
      }
      Expr rhs;
      if (!unary(&rhs, depth)) return false;
      lhs = Expr::binary(op, std::move(lhs), std::move(rhs));
    }
    *out = std::move(lhs);
    return true;
  }

  bool unary(Expr* out, int depth) {
    if (depth > kMaxDepth) return fail(c_.pos(), "expression nested too deeply");
    if (c_.accept('-')) {
      Expr operand;
      if (!unary(&operand, depth + 1)) return false;
      Expr e;
      e.kind = Expr::Kind::kNeg;
      e.args.push_back(std::move(operand));
      *out = std::move(e);
      return true;
    }
    Expr base;
    if (!primary(&base, depth)) return false;
    if (c_.accept('^')) {
      Expr exponent;
      if (!unary(&exponent, depth + 1)) return false;
      base = Expr::binary('^', std::move(base), std::move(exponent));
    }
    *out = std::move(base);
    return true;
  }

  bool primary(Expr* out, int depth) {
    const char ch = c_.peek();
    const std::size_t at = c_.pos();
    if (ch == '(') {
      c_.accept('(');
      if (!expr(out, depth + 1)) return false;
      if (!c_.accept(')')) return fail(c_.pos(), "missing ')'", "')' to close the '(' opened here");
      return true;
    }
    if ((ch >= '0' && ch <= '9') || ch == '.') return number(out);
    if (!is_ident_start(ch)) {
      if (ch == '\0') return fail(at, "expression ends too early", "a number, a name or '('");
      return fail(at, "unexpected '" + std::string(1, ch) + "' in expression", "a number, a name or '('");
    }
    std::string name = c_.ident();
    if ((name == "max" || name == "sum") && c_.text().size() > c_.pos() && c_.text()[c_.pos()] == '|') {
      c_.accept('|');
      const std::string x = c_.ident();
      if (x.empty() || !c_.accept('|'))
        return fail(c_.pos(), "malformed magnitude '" + name + "|...|'", name + "|x| or " + name + "|A|");
      *out = Expr::var(name + "|" + x + "|");
      return true;
    }
    if (c_.peek() == '(' ) {
      c_.accept('(');
      std::vector<Expr> args;
      if (!c_.accept(')')) {
        for (;;) {
          Expr a;
          if (!expr(&a, depth + 1)) return false;
          args.push_back(std::move(a));
          if (c_.accept(',')) continue;
          if (c_.accept(')')) break;
          return fail(c_.pos(), "missing ')' after the arguments of " + name + "(", "',' or ')'");
        }
      }
      *out = Expr::call(std::move(name), std::move(args));
      return true;
    }
    *out = Expr::var(std::move(name));
    return true;
  }

  bool number(Expr* out) {
    c_.skip_ws();
    const std::string& s = c_.text();
    std::size_t b = c_.pos(), i = b;
    while (i < s.size() && ((s[i] >= '0' && s[i] <= '9') || s[i] == '.')) ++i;
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
      std::size_t j = i + 1;
      if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
      if (j < s.size() && s[j] >= '0' && s[j] <= '9') {
        i = j;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
      }
    }
    const std::string spelling = s.substr(b, i - b);
    double v = 0;
    if (!parse_number(spelling, &v)) return fail(b, "malformed number '" + spelling + "'", "a number such as 1e-5");
    c_.set_pos(i);
    *out = Expr::num(v, spelling);
    return true;
  }

  Cursor c_;
  ExprError err_;
};

int precedence(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::kBinary:
      if (e.op == '+' || e.op == '-') return 1;
      if (e.op == '*' || e.op == '/') return 2;
      return 4;  // ^
    case Expr::Kind::kNeg: return 3;
    default: return 5;
  }
}

std::optional<DType> precision_arg(const Expr& e, const ExprEnv& env, std::string* error) {
  if (e.kind == Expr::Kind::kVar) {
    if (e.name == "P") {
      if (env.precision) return env.precision;
      *error = "P (the config's precision) is not known here";
      return std::nullopt;
    }
    if (e.name == "ACC") {
      if (env.accumulator) return env.accumulator;
      *error = "ACC (the impl's declared accumulator) is not known here: the impl declares no accumulator";
      return std::nullopt;
    }
    if (auto t = parse_dtype(e.name)) return t;
  }
  // Appended piecewise: GCC 12 at -O3 reports a false -Wrestrict on "'" + s + "...".
  std::string msg = "'";
  msg += print_expr(e);
  msg += "' is not a precision (FP64, FP32, TF32, BF16, FP16, FP8E4M3, FP8E5M2, P or ACC)";
  *error = std::move(msg);
  return std::nullopt;
}

}  // namespace

bool parse_expr_text(const std::string& text, Expr* out, ExprError* err) {
  ExprParser p(text);
  return p.parse(out, err);
}

bool parse_expr_prefix(const std::string& text, Expr* out, ExprError* err, std::size_t* end) {
  ExprParser p(text);
  return p.parse(out, err, end);
}

const std::vector<std::string>& known_functions() {
  static const std::vector<std::string> v = {"eps", "u",    "gamma", "min", "max", "sqrt",
                                             "log2", "log", "exp",   "abs", "ceil", "floor"};
  return v;
}

void collect_calls(const Expr& e, std::vector<std::string>* names) {
  if (e.kind == Expr::Kind::kCall) names->push_back(e.name);
  for (const Expr& a : e.args) collect_calls(a, names);
}

}  // namespace detail

Result<Expr> parse_expr(std::string_view text) {
  Expr e;
  detail::ExprError err;
  const std::string s(text);
  if (!detail::parse_expr_text(s, &e, &err))
    return invalid_argument(err.message + " at column " + std::to_string(err.offset + 1));
  return e;
}

std::string print_expr(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::kNumber: return e.text.empty() ? detail::format_number(e.number) : e.text;
    case Expr::Kind::kVar: return e.name;
    case Expr::Kind::kCall: {
      std::string out = e.name + "(";
      for (std::size_t i = 0; i < e.args.size(); ++i) out += (i ? ", " : "") + print_expr(e.args[i]);
      return out + ")";
    }
    case Expr::Kind::kNeg: {
      if (e.args.empty()) return "-?";
      const Expr& x = e.args[0];
      const bool paren = detail::precedence(x) < 3;
      return "-" + (paren ? "(" + print_expr(x) + ")" : print_expr(x));
    }
    case Expr::Kind::kBinary: {
      if (e.args.size() != 2) return "?";
      const int p = detail::precedence(e);
      const Expr& l = e.args[0];
      const Expr& r = e.args[1];
      const bool right_assoc = e.op == '^';
      const bool lp = detail::precedence(l) < p || (right_assoc && detail::precedence(l) == p);
      // a - (b - c), a / (b * c): same-precedence right operands of - and / keep their parens.
      const bool rp = (right_assoc ? detail::precedence(r) < 3 : detail::precedence(r) < p) ||
                      (!right_assoc && detail::precedence(r) == p && (e.op == '-' || e.op == '/'));
      std::string ls = lp ? "(" + print_expr(l) + ")" : print_expr(l);
      std::string rs = rp ? "(" + print_expr(r) + ")" : print_expr(r);
      return ls + " " + std::string(1, e.op) + " " + rs;
    }
  }
  return "?";
}

Result<double> eval_expr(const Expr& e, const ExprEnv& env) {
  switch (e.kind) {
    case Expr::Kind::kNumber: return e.number;
    case Expr::Kind::kVar: {
      auto it = env.vars.find(e.name);
      if (it != env.vars.end()) return it->second;
      if (e.name == "inf") return INFINITY;
      std::string known;
      for (const auto& [k, v] : env.vars) known += (known.empty() ? "" : ", ") + k;
      return invalid_argument("unknown variable '" + e.name + "'" +
                              (known.empty() ? std::string(" (no variables are defined here)")
                                             : " (known here: " + known + ")"));
    }
    case Expr::Kind::kNeg: {
      if (e.args.size() != 1) return invalid_argument("malformed negation");
      KC_ASSIGN_OR_RETURN(double v, eval_expr(e.args[0], env));
      return -v;
    }
    case Expr::Kind::kBinary: {
      if (e.args.size() != 2) return invalid_argument("malformed binary expression");
      KC_ASSIGN_OR_RETURN(double a, eval_expr(e.args[0], env));
      KC_ASSIGN_OR_RETURN(double b, eval_expr(e.args[1], env));
      switch (e.op) {
        case '+': return a + b;
        case '-': return a - b;
        case '*': return a * b;
        case '/': return a / b;
        case '^': return std::pow(a, b);
        default: return invalid_argument(std::string("unknown operator '") + e.op + "'");
      }
    }
    case Expr::Kind::kCall: break;
  }
  const std::string& f = e.name;
  const std::size_t n = e.args.size();
  auto arity = [&](std::size_t want) -> Status {
    if (n == want) return ok_status();
    return invalid_argument(f + "() takes " + std::to_string(want) + " argument" + (want == 1 ? "" : "s") +
                            ", got " + std::to_string(n));
  };
  if (f == "eps" || f == "u") {
    KC_RETURN_IF_ERROR(arity(1));
    std::string err;
    auto t = detail::precision_arg(e.args[0], env, &err);
    if (!t) return invalid_argument(f + "(): " + err);
    return f == "eps" ? kc::eps(*t) : unit_roundoff(*t);
  }
  if (f == "gamma") {
    KC_RETURN_IF_ERROR(arity(2));
    KC_ASSIGN_OR_RETURN(double k, eval_expr(e.args[0], env));
    std::string err;
    auto t = detail::precision_arg(e.args[1], env, &err);
    if (!t) return invalid_argument("gamma(): " + err);
    return kc::gamma(k, *t);
  }
  if (f == "min" || f == "max") {
    if (n == 0) return invalid_argument(f + "() needs at least one argument");
    KC_ASSIGN_OR_RETURN(double acc, eval_expr(e.args[0], env));
    for (std::size_t i = 1; i < n; ++i) {
      KC_ASSIGN_OR_RETURN(double v, eval_expr(e.args[i], env));
      acc = f == "min" ? std::min(acc, v) : std::max(acc, v);
    }
    return acc;
  }
  static const std::pair<const char*, double (*)(double)> kUnary[] = {
      {"sqrt", [](double x) { return std::sqrt(x); }}, {"log2", [](double x) { return std::log2(x); }},
      {"log", [](double x) { return std::log(x); }},   {"exp", [](double x) { return std::exp(x); }},
      {"abs", [](double x) { return std::fabs(x); }},  {"ceil", [](double x) { return std::ceil(x); }},
      {"floor", [](double x) { return std::floor(x); }},
  };
  for (const auto& [name, fn] : kUnary) {
    if (f != name) continue;
    KC_RETURN_IF_ERROR(arity(1));
    KC_ASSIGN_OR_RETURN(double x, eval_expr(e.args[0], env));
    return fn(x);
  }
  return invalid_argument("unknown function '" + f +
                          "' (known: eps, u, gamma, min, max, sqrt, log2, log, exp, abs, ceil, floor)");
}

}  // namespace kc::lang
