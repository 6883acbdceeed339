// kc — bpe_roundtrip (see roundtrip.h).
#include "ops/tokenize/roundtrip.h"

#include <string>
#include <vector>

#include "kc/ops/bpe.h"
#include "ops/class_ops_util.h"

namespace kc::ops {
namespace {

void push_utf8(std::vector<int>& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<int>(cp));
  } else if (cp < 0x800) {
    out.push_back(0xC0 | static_cast<int>(cp >> 6));
    out.push_back(0x80 | static_cast<int>(cp & 0x3F));
  } else if (cp < 0x10000) {
    out.push_back(0xE0 | static_cast<int>(cp >> 12));
    out.push_back(0x80 | static_cast<int>((cp >> 6) & 0x3F));
    out.push_back(0x80 | static_cast<int>(cp & 0x3F));
  } else {
    out.push_back(0xF0 | static_cast<int>(cp >> 18));
    out.push_back(0x80 | static_cast<int>((cp >> 12) & 0x3F));
    out.push_back(0x80 | static_cast<int>((cp >> 6) & 0x3F));
    out.push_back(0x80 | static_cast<int>(cp & 0x3F));
  }
}

/// One valid UTF-8 character from a spread of ranges.
void valid_char(std::vector<int>& out, Rng& rng) {
  switch (rng.uniform_int(0, 4)) {
    case 0: push_utf8(out, static_cast<std::uint32_t>(rng.uniform_int(0x20, 0x7E))); break;   // ASCII
    case 1: push_utf8(out, static_cast<std::uint32_t>(rng.uniform_int(0xA0, 0xFF))); break;   // Latin-1
    case 2: push_utf8(out, static_cast<std::uint32_t>(rng.uniform_int(0x391, 0x3C9))); break; // Greek
    case 3: push_utf8(out, static_cast<std::uint32_t>(rng.uniform_int(0x4E00, 0x9FFF))); break;  // CJK
    default: push_utf8(out, static_cast<std::uint32_t>(rng.uniform_int(0x1F300, 0x1F64F))); break;  // emoji
  }
}

/// One malformed UTF-8 fragment.
void invalid_fragment(std::vector<int>& out, Rng& rng) {
  switch (rng.uniform_int(0, 5)) {
    case 0: out.push_back(static_cast<int>(rng.uniform_int(0x80, 0xBF))); break;  // lone continuation
    case 1: out.push_back(static_cast<int>(rng.uniform_int(0xC2, 0xF4))); out.push_back(0x41); break;  // truncated lead
    case 2: out.push_back(0xC0); out.push_back(0xAF); break;                     // overlong '/'
    case 3: out.push_back(0xED); out.push_back(0xA0); out.push_back(0x80); break;  // UTF-16 surrogate
    case 4: out.push_back(static_cast<int>(rng.uniform_int(0xF5, 0xFF))); break;  // never valid
    default: out.push_back(0xE2); out.push_back(0x82); break;                      // 3-byte lead, one continuation
  }
}

std::vector<int> row_bytes(const std::string& pattern, std::int64_t len, Rng& rng) {
  std::vector<int> out;
  const auto& words = tokenize::BpeTokenizer::corpus_words();
  while (static_cast<std::int64_t>(out.size()) < len) {
    if (pattern == "text") {
      if (!out.empty()) out.push_back(' ');
      for (unsigned char c : words[static_cast<std::size_t>(rng.uniform_int(0, static_cast<std::int64_t>(words.size()) - 1))])
        out.push_back(c);
    } else if (pattern == "utf8") {
      valid_char(out, rng);
    } else if (pattern == "invalid_utf8") {
      if (rng.uniform() < 0.5) valid_char(out, rng);
      else invalid_fragment(out, rng);
    } else {  // random
      out.push_back(static_cast<int>(rng.uniform_int(0, 255)));
    }
  }
  // Cut at len: for valid UTF-8 a cut can split a character, so top up with ASCII instead.
  if (pattern == "utf8" || pattern == "text") {
    while (static_cast<std::int64_t>(out.size()) > len) out.pop_back();
    std::size_t i = out.size();
    while (i > 0 && (out[i - 1] & 0xC0) == 0x80) --i;  // back to the last lead byte
    if (i > 0 && out[i - 1] >= 0xC0) {
      const int lead = out[i - 1];
      const std::size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
      if (out.size() - (i - 1) < need) out.resize(i - 1);
    }
    while (static_cast<std::int64_t>(out.size()) < len) out.push_back('a');
  }
  out.resize(static_cast<std::size_t>(len));
  return out;
}

class BpeRoundtripOp final : public Op {
 public:
  std::string_view name() const override { return "bpe_roundtrip"; }
  std::string_view summary() const override {
    return "y = decode(encode(x)) per row of bytes, then -1; must equal x byte for byte";
  }
  const std::vector<TensorSpec>& signature() const override {
    static const std::vector<TensorSpec> sig = {
        {"x", Role::kIn, "byte strings, I64 values 0..255 {rows, len}"},
        {"y", Role::kOut, "decoded bytes then -1 {rows, 4 len}"},
    };
    return sig;
  }
  const std::vector<Param>& params() const override {
    // Default pattern text: what a visible test of a tokenizer feeds it.
    static const std::vector<Param> ps = {
        {"rows", "32", "strings per call (256 for single_bytes)"},
        {"len", "48", "bytes per string (1 for single_bytes)"},
        {"pattern", "text", "text | utf8 | invalid_utf8 | random | single_bytes"},
    };
    return ps;
  }

  Result<Call> make_call(const Config& config) const override {
    const std::string pattern = config.get("pattern", "text");
    if (pattern != "text" && pattern != "utf8" && pattern != "invalid_utf8" && pattern != "random" &&
        pattern != "single_bytes")
      return invalid_argument("bpe_roundtrip: pattern '" + pattern +
                              "' (known: text, utf8, invalid_utf8, random, single_bytes)");
    std::int64_t rows = 256, len = 1;
    if (pattern != "single_bytes") {
      KC_ASSIGN_OR_RETURN(rows, detail::positive(config, "rows", 32));
      KC_ASSIGN_OR_RETURN(len, detail::positive(config, "len", 48));
    }
    return detail::make_call_from(name(), config,
                                  {{"x", Role::kIn, Tensor(DType::kI64, {rows, len})},
                                   {"y", Role::kOut, Tensor(DType::kI64, {rows, 4 * len})}});
  }

  /// The bytes come from the pattern; a value range does not apply to bytes.
  void fill(Call& call, const FillSpec&, Rng& rng) const override {
    Tensor& x = call.t("x");
    const std::int64_t rows = x.dim(0), len = x.dim(1);
    const std::string pattern = call.get("pattern", "text");
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::vector<int> bytes =
          pattern == "single_bytes" ? std::vector<int>{static_cast<int>(r)} : row_bytes(pattern, len, rng);
      for (std::int64_t i = 0; i < len; ++i) x.set(r * len + i, bytes[static_cast<std::size_t>(i)]);
    }
  }

  /// No float probe applies to bytes.
  Status apply_probe(Call&, const Probe& probe, Rng&) const override {
    return invalid_argument("bpe_roundtrip has no probe '" + probe.name + "'; its inputs are chosen by pattern");
  }

  Result<OracleResult> oracle(const Call& call, const OracleOptions&) const override {
    const Tensor& x = call.t("x");
    const std::int64_t rows = x.dim(0), len = x.dim(1), cap = 4 * len;
    OracleResult res;
    res.output_names = {"y"};
    res.outputs.assign(1, std::vector<double>(static_cast<std::size_t>(rows * cap), -1.0));
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t i = 0; i < len; ++i) res.outputs[0][static_cast<std::size_t>(r * cap + i)] = x.at(r * len + i);
    return res;
  }

 public:
  // ---- what the rest of kc asks of this op (kc/op.h)
  std::vector<OpClassifier> classifiers() const override {
    return {{OpClassifier::Stage::kSemantics, classify_roundtrip}};
  }
};

}  // namespace

std::unique_ptr<Op> make_bpe_roundtrip_op() { return std::make_unique<BpeRoundtripOp>(); }

}  // namespace kc::ops
