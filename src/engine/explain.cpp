#include <sstream>

#include "kc/engine.h"
#include "kc/obligation.h"

namespace kc::engine {

namespace {
void clause(std::ostringstream& out, const char* label, const ClauseInfo& info) {
  out << "  " << label << (info.present ? info.text : std::string("(missing)")) << "\n";
  if (!info.gap.empty()) out << "      not executable: " << info.gap << "\n";
}
}  // namespace

std::string explain(const Contract& c, const std::string& file) {
  std::ostringstream out;
  out << c.id;
  if (auto it = c.meta.find("title"); it != c.meta.end()) out << " — " << it->second;
  out << "\n  defined at " << file << ":" << c.loc.line << "\n";
  out << "  " << (c.executable() ? "executable" : "descriptive (see `kc lint`)") << ", version "
      << c.content_hash().substr(0, 12) << "\n\n";
  clause(out, "applies to     ", c.scope_info);
  clause(out, "requires       ", c.pre_info);
  clause(out, "promises       ", c.post_info);
  clause(out, "within         ", c.tolerance_info);
  clause(out, "judged against ", c.reference_info);
  if (c.reference.kind == Reference::Kind::kAlgebraic && obligation::is_property_name(c.reference.name)) {
    if (const obligation::Property* p = obligation::find_property(c.reference.name))
      out << "      the property: " << p->statement << " (re-runs the impl where it transforms inputs; "
          << "docs/obligations.md)\n";
    else
      out << "      not a known property (`kc list properties`)\n";
  }
  clause(out, "measured by    ", c.measure_info);
  clause(out, "violation      ", c.violation_info);
  if (!c.violation.signatures.empty()) {
    out << "\n  A violation is named by the signature";
    out << (c.violation.signatures.size() > 1 ? "s " : " ");
    for (std::size_t i = 0; i < c.violation.signatures.size(); ++i)
      out << (i ? ", " : "") << c.violation.signatures[i].to_string();
    out << ".\n";
  }
  out << "\n  run it:  kc check " << file << " --contract " << c.id << "\n";
  return out.str();
}

}  // namespace kc::engine
