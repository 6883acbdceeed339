// libFuzzer target: any bytes through both front ends, the printers and lint.
// Properties checked beyond "does not crash": a document that parses without
// errors prints to .kc text that parses without errors, and printing is a
// fixed point (print(parse(print(doc))) == print(doc)).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "kc/lang.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 64 * 1024) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  kc::lang::ParseResult r = kc::lang::parse_kc(text, "fuzz.kc");
  const std::string printed = kc::lang::print_kc(r.document);
  (void)kc::lang::print_yaml(r.document);
  (void)kc::lang::lint(r.document);
  for (const auto& d : r.diagnostics) (void)d.render();
  if (!r.has_errors()) {
    kc::lang::ParseResult again = kc::lang::parse_kc(printed, "printed.kc");
    if (again.has_errors()) std::abort();  // the printer wrote something the parser rejects
    if (kc::lang::print_kc(again.document) != printed) std::abort();  // not canonical
  }
  (void)kc::lang::parse_expr(text.substr(0, 256));
  return 0;
}
