// kc — bpe_roundtrip's own signature classifier (Op::classifiers, stage
// kSemantics): the decoded bytes against the input bytes, row by row.
#include <cstdio>
#include <string>
#include <vector>

#include "kc/model.h"
#include "kc/observation.h"
#include "kc/signature.h"
#include "ops/tokenize/roundtrip.h"

namespace kc::ops {

/// bpe_roundtrip: per row, the decoded bytes against the input bytes.
void classify_roundtrip(const Op&, const Call& inputs, const OracleOptions&, const Observation& obs,
                        std::vector<Signature>* sigs, std::vector<std::string>* notes) {
  if (obs.output != "y" || !inputs.has("x")) return;
  const Tensor& x = inputs.t("x");
  const std::int64_t rows = x.dim(0), len = x.dim(1);
  if (rows == 0) return;
  const std::size_t cap = obs.got.size() / static_cast<std::size_t>(rows);
  std::int64_t dropped_rows = 0, changed_rows = 0, dropped_bytes = 0;
  std::string example;
  for (std::int64_t r = 0; r < rows; ++r) {
    std::vector<int> in, out;
    for (std::int64_t i = 0; i < len; ++i) in.push_back(static_cast<int>(x.at(r * len + i)));
    for (std::size_t i = 0; i < cap; ++i) {
      const double v = obs.got[static_cast<std::size_t>(r) * cap + i];
      if (!(v >= 0 && v <= 255)) break;  // the -1 terminator (or garbage) ends the decoded string
      out.push_back(static_cast<int>(v));
    }
    if (out == in) continue;
    // `out` a proper subsequence of `in`: bytes were dropped, none changed.
    std::size_t j = 0;
    for (std::size_t i = 0; i < in.size() && j < out.size(); ++i)
      if (in[i] == out[j]) ++j;
    if (j == out.size() && out.size() < in.size()) {
      ++dropped_rows;
      dropped_bytes += static_cast<std::int64_t>(in.size() - out.size());
      if (example.empty()) {
        // The first dropped byte.
        std::size_t i = 0;
        while (i < out.size() && in[i] == out[i]) ++i;
        char buf[96];
        std::snprintf(buf, sizeof buf, "row %lld loses byte 0x%02x at offset %zu", static_cast<long long>(r), in[i], i);
        example = buf;
      }
    } else {
      ++changed_rows;
    }
  }
  if (dropped_rows > 0 && changed_rows == 0) {
    sigs->push_back({sig::kBytesDropped, {std::to_string(dropped_bytes)}});
    notes->push_back(std::to_string(dropped_bytes) + " input bytes are missing from decode(encode(x)) in " +
                     std::to_string(dropped_rows) + " rows, every other byte intact (" + example + ")");
  } else if (dropped_rows + changed_rows > 0) {
    sigs->push_back({sig::kBytesChanged, {std::to_string(dropped_rows + changed_rows)}});
    notes->push_back(std::to_string(dropped_rows + changed_rows) + " rows decode to other bytes than they encode");
  }
}

}  // namespace kc::ops
