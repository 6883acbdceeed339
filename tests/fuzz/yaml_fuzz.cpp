// libFuzzer target: any bytes through the YAML front end, both printers and
// lint. Properties checked beyond "does not crash": a document that parses
// without errors prints to YAML that parses without errors and means the same
// (same contract hashes), and its .kc form parses without errors.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "kc/lang.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 64 * 1024) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  kc::lang::ParseResult r = kc::lang::parse_yaml(text, "fuzz.yaml");
  const std::string yaml = kc::lang::print_yaml(r.document);
  const std::string kc_text = kc::lang::print_kc(r.document);
  (void)kc::lang::lint(r.document);
  for (const auto& d : r.diagnostics) (void)d.render();
  if (!r.has_errors()) {
    kc::lang::ParseResult again = kc::lang::parse_yaml(yaml, "printed.yaml");
    if (again.has_errors()) std::abort();  // the YAML printer wrote something the parser rejects
    if (again.document.contracts.size() != r.document.contracts.size()) std::abort();
    for (std::size_t i = 0; i < r.document.contracts.size(); ++i)
      if (again.document.contracts[i].content_hash() != r.document.contracts[i].content_hash()) std::abort();
    if (kc::lang::parse_kc(kc_text, "printed.kc").has_errors()) std::abort();  // YAML -> .kc must parse
  }
  return 0;
}
