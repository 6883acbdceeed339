// kc — reading kc's own JSON and YAML files (run records, baselines) with
// errors that say file:line:col, what is wrong, and what was expected.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "kc/status.h"

namespace kc::report {

struct YamlDoc {
  std::string path;
  YAML::Node root;

  Status load(const std::string& file) {
    path = file;
    std::ifstream in(file, std::ios::binary);
    if (!in) return invalid_argument(file + ": cannot read: " + std::string(std::strerror(errno)));
    std::stringstream ss;
    ss << in.rdbuf();
    if (ss.str().empty()) return invalid_argument(file + ": empty file; expected a JSON object");
    try {
      root = YAML::Load(ss.str());
    } catch (const YAML::Exception& e) {
      return invalid_argument(where(e.mark) + ": malformed: " + e.msg + "; expected JSON or YAML");
    }
    return ok_status();
  }

  std::string where(const YAML::Mark& m) const {
    if (m.is_null()) return path;
    return path + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
  }

  Status error(const YAML::Node& n, const std::string& what, const std::string& expected) const {
    return invalid_argument(where(n ? n.Mark() : root.Mark()) + ": " + what + "; expected " + expected);
  }

  /// A scalar member as text; optional members that are absent (or null) give "".
  Result<std::string> str(const YAML::Node& parent, const char* key, bool optional = false) const {
    const YAML::Node n = parent[key];
    if (!n || n.IsNull()) {
      if (optional) return std::string();
      return error(parent, std::string("missing \"") + key + "\"", std::string("a \"") + key + "\" member");
    }
    if (!n.IsScalar()) return error(n, std::string("\"") + key + "\" is not a string", "a string");
    return n.Scalar();
  }

  Result<bool> boolean(const YAML::Node& parent, const char* key, bool optional = false) const {
    KC_ASSIGN_OR_RETURN(std::string s, str(parent, key, optional));
    if (s.empty() && optional) return false;
    if (s == "true") return true;
    if (s == "false") return false;
    return error(parent[key], std::string("\"") + key + "\" is '" + s + "'", "true or false");
  }

  static bool parse_number(const std::string& s, double* out) {
    if (s == "inf") *out = std::numeric_limits<double>::infinity();
    else if (s == "-inf") *out = -std::numeric_limits<double>::infinity();
    else if (s == "nan") *out = std::numeric_limits<double>::quiet_NaN();
    else {
      char* end = nullptr;
      *out = std::strtod(s.c_str(), &end);
      return !s.empty() && end != nullptr && *end == '\0';
    }
    return true;
  }

  /// A number; the strings "inf", "-inf", "nan" stand for themselves (JSON has no non-finite numbers).
  Result<double> number(const YAML::Node& parent, const char* key, bool optional = false) const {
    KC_ASSIGN_OR_RETURN(std::string s, str(parent, key, optional));
    if (s.empty() && optional) return 0.0;
    double v = 0;
    if (!parse_number(s, &v)) return error(parent[key], std::string("\"") + key + "\" is '" + s + "'", "a number");
    return v;
  }

  Result<std::vector<std::string>> strings(const YAML::Node& parent, const char* key) const {
    std::vector<std::string> out;
    const YAML::Node n = parent[key];
    if (!n || n.IsNull()) return out;
    if (!n.IsSequence()) return error(n, std::string("\"") + key + "\" is not an array", "an array of strings");
    for (const auto& e : n) {
      if (!e.IsScalar()) return error(e, std::string("an element of \"") + key + "\" is not a string", "a string");
      out.push_back(e.Scalar());
    }
    return out;
  }

  Result<std::vector<double>> numbers(const YAML::Node& parent, const char* key) const {
    std::vector<double> out;
    const YAML::Node n = parent[key];
    if (!n || n.IsNull()) return out;
    if (!n.IsSequence()) return error(n, std::string("\"") + key + "\" is not an array", "an array of numbers");
    for (const auto& e : n) {
      double v = 0;
      if (!e.IsScalar() || !parse_number(e.Scalar(), &v))
        return error(e, std::string("an element of \"") + key + "\" is not a number", "a number");
      out.push_back(v);
    }
    return out;
  }
};

}  // namespace kc::report
