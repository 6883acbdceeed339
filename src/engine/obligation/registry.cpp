// kc — the one table of algebraic properties (kc/obligation.h,
// docs/obligations.md), gathered from the ops: each op's folder holds its
// properties and hands them over through Op::properties.
#include <memory>
#include <mutex>
#include <vector>

#include "kc/lang.h"
#include "kc/obligation.h"

namespace kc::obligation {
namespace {

bool same(const Property& a, const Property& b) {
  return a.name == b.name && a.ops == b.ops && a.statement == b.statement;
}

std::vector<Property> gather(const OpRegistry& registry) {
  std::vector<Property> table;
  for (const Op* op : registry.all()) {
    for (Property& p : op->properties()) {
      const Property* have = nullptr;
      for (const Property& q : table)
        if (q.name == p.name) have = &q;
      // A property several ops share comes from each of them, identically;
      // two different properties under one name are a bug in an op folder.
      KC_CHECK_MSG(!have || same(*have, p), "two different properties share one name");
      if (!have) table.push_back(std::move(p));
    }
  }
  return table;
}

}  // namespace

const std::vector<Property>& properties() {
  // Rebuilt when an op has been registered since (register_op); the tables
  // built before stay alive, so a Property* handed out earlier stays valid.
  static std::mutex mutex;
  static std::vector<std::unique_ptr<const std::vector<Property>>> tables;
  static std::size_t built_for = 0;
  const OpRegistry& registry = builtin_ops();
  std::lock_guard<std::mutex> lock(mutex);
  if (tables.empty() || built_for != registry.size()) {
    built_for = registry.size();
    tables.push_back(std::make_unique<const std::vector<Property>>(gather(registry)));
  }
  return *tables.back();
}

const Property* find_property(std::string_view name) {
  for (const auto& p : properties())
    if (p.name == name) return &p;
  return nullptr;
}

bool is_property_name(std::string_view name) { return name.find('.') != std::string_view::npos; }

std::string nearest_property(std::string_view name) {
  std::vector<std::string> names;
  for (const auto& p : properties()) names.push_back(p.name);
  return lang::nearest_word(name, names);
}

}  // namespace kc::obligation
