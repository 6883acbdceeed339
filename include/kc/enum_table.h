// kc — one table per enum drives parsing, printing and help text.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace kc {

template <typename E>
struct EnumEntry {
  E value;
  std::string_view name;  ///< canonical spelling, used when printing
  std::string_view help;  ///< one line for --help and docs
};

/// Case-insensitive ASCII comparison.
bool iequals(std::string_view a, std::string_view b);

template <typename E>
std::optional<E> enum_parse(std::span<const EnumEntry<E>> table, std::string_view text) {
  for (const auto& e : table)
    if (iequals(e.name, text)) return e.value;
  return std::nullopt;
}

template <typename E>
std::string_view enum_name(std::span<const EnumEntry<E>> table, E value) {
  for (const auto& e : table)
    if (e.value == value) return e.name;
  return "?";
}

/// "A | B | C" — the canonical names, for diagnostics and help.
template <typename E>
std::string enum_choices(std::span<const EnumEntry<E>> table) {
  std::string out;
  for (const auto& e : table) {
    if (!out.empty()) out += " | ";
    out += e.name;
  }
  return out;
}

}  // namespace kc
