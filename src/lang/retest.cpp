// kc — retest schedules (kc/retest.h): the `retest` line's grammar and the
// plan for one library update.
#include "kc/retest.h"

#include <cctype>

#include "kc/lang.h"
#include "kc/vocabulary.h"
#include "lang/source.h"

namespace kc {

namespace {

bool space(char ch) { return std::isspace(static_cast<unsigned char>(ch)) != 0; }
bool word_char(char ch) { return std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '_'; }

/// Lower case, and every run of characters that is not a letter or digit one
/// space: "Loss-Scaling" and "loss_scaling" read alike.
std::string fold(std::string_view s) {
  std::string out;
  bool gap = true;
  for (char ch : s) {
    if (std::isalnum(static_cast<unsigned char>(ch)) != 0) {
      out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
      gap = false;
    } else if (!gap) {
      out.push_back(' ');
      gap = true;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

/// Whether the folded notes hold the folded phrase as whole words.
bool names_phrase(const std::string& notes, const std::string& phrase) {
  if (phrase.empty()) return false;
  for (std::size_t at = notes.find(phrase); at != std::string::npos; at = notes.find(phrase, at + 1)) {
    const bool starts = at == 0 || notes[at - 1] == ' ';
    const std::size_t end = at + phrase.size();
    const bool ends = end == notes.size() || notes[end] == ' ';
    if (starts && ends) return true;
  }
  return false;
}

}  // namespace

Result<RetestRule> parse_retest(std::string_view text, std::size_t* at) {
  auto fail = [&](std::size_t pos, std::string message) -> Result<RetestRule> {
    if (at) *at = pos;
    return invalid_argument(std::move(message));
  };
  std::size_t i = 0;
  while (i < text.size() && space(text[i])) ++i;
  const std::size_t word_at = i;
  while (i < text.size() && word_char(text[i])) ++i;
  const std::string word(text.substr(word_at, i - word_at));
  const auto known = word_names(retest_table());
  if (word.empty()) return fail(word_at, "expected one of: " + lang::detail::join(known, ", "));
  if (!find_word(retest_table(), word)) {
    const std::string near = lang::nearest_word(word, known);
    return fail(word_at, "unknown retest schedule '" + word + "' (one of: " + lang::detail::join(known, ", ") + ")" +
                             (near.empty() ? "" : " — did you mean '" + near + "'?"));
  }
  RetestRule rule;
  rule.kind = word;
  rule.declared = true;
  while (i < text.size() && space(text[i])) ++i;
  if (word != "release_notes") {
    if (i < text.size()) return fail(i, "'" + word + "' takes nothing after it");
    return rule;
  }
  if (i >= text.size() || text[i] != '{')
    return fail(i, "release_notes needs the subsystems its notes must name: release_notes {gemm, threading}");
  const std::size_t close = text.find('}', i);
  if (close == std::string_view::npos) return fail(i, "missing '}' after the subsystems");
  std::size_t j = i + 1;
  while (j <= close) {
    std::size_t k = j;
    while (k < close && text[k] != ',') ++k;
    std::string_view item = text.substr(j, k - j);
    while (!item.empty() && space(item.front())) item.remove_prefix(1);
    while (!item.empty() && space(item.back())) item.remove_suffix(1);
    if (item.empty() || fold(item).empty()) return fail(j, "empty subsystem in the list");
    std::string one;  // inner runs of blanks as one space, as an unquoted line reads
    for (char ch : item) {
      if (space(ch)) {
        if (!one.empty() && one.back() != ' ') one.push_back(' ');
      } else {
        one.push_back(ch);
      }
    }
    rule.subsystems.push_back(one);
    j = k + 1;
  }
  std::size_t rest = close + 1;
  while (rest < text.size() && space(text[rest])) ++rest;
  if (rest < text.size()) return fail(rest, "unexpected text after '}'");
  return rule;
}

std::string retest_text(const RetestRule& rule) {
  if (rule.subsystems.empty()) return rule.kind;
  return rule.kind + " {" + lang::detail::join(rule.subsystems, ", ") + "}";
}

RetestRule retest_rule(const Contract& c) {
  const auto it = c.meta.find("retest");
  if (it == c.meta.end()) return {};
  auto rule = parse_retest(it->second);
  return rule.ok() ? *rule : RetestRule{};  // the parser refused a bad line already
}

std::string major_version(std::string_view version) {
  std::size_t i = 0;
  if (i < version.size() && (version[i] == 'v' || version[i] == 'V')) ++i;
  std::string out;
  while (i < version.size() && std::isdigit(static_cast<unsigned char>(version[i])) != 0) {
    std::size_t j = i;
    while (j < version.size() && std::isdigit(static_cast<unsigned char>(version[j])) != 0) ++j;
    const std::string_view part = version.substr(i, j - i);
    if (!out.empty()) out += ".";
    out += std::string(part);
    if (part.find_first_not_of('0') != std::string_view::npos) return out;
    if (j >= version.size() || version[j] != '.') return out;
    i = j + 1;
  }
  return out;
}

std::vector<RetestEntry> retest_plan(const std::vector<Contract>& contracts, std::string_view from,
                                     std::string_view to, std::string_view notes, bool have_notes) {
  const std::string major_from = major_version(from), major_to = major_version(to);
  const std::string folded_notes = fold(notes);
  std::vector<RetestEntry> out;
  for (const Contract& c : contracts) {
    RetestEntry e;
    e.contract = c.id;
    e.rule = retest_rule(c);
    if (!e.rule.declared) {
      e.why = "no retest line: runs on every update";
    } else if (e.rule.kind == "always") {
      e.why = "always";
    } else if (e.rule.kind == "major_version") {
      if (major_from.empty() || major_to.empty()) {
        e.why = "the major version of '" + std::string(major_from.empty() ? from : to) +
                "' cannot be read: runs, as for a major change";
      } else if (major_from != major_to) {
        e.why = "major version " + major_from + " -> " + major_to;
      } else {
        e.run = false;
        e.why = "same major version " + major_to;
      }
    } else {  // release_notes
      if (!have_notes) {
        e.why = "no release notes given: runs";
      } else {
        std::string named;
        for (const auto& s : e.rule.subsystems)
          if (names_phrase(folded_notes, fold(s))) named += (named.empty() ? "" : ", ") + s;
        if (!named.empty()) {
          e.why = "the notes name " + named;
        } else {
          e.run = false;
          e.why = "the notes name none of " + lang::detail::join(e.rule.subsystems, ", ");
        }
      }
    }
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace kc
