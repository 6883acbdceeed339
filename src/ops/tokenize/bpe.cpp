// kc — byte-level BPE (see bpe.h).
#include "kc/ops/bpe.h"

#include <algorithm>
#include <limits>
#include <sstream>

namespace kc::tokenize {
namespace {

/// A few paragraphs of plain English (the project's own words): enough for
/// merges such as "th", " the", "ing" to be learned.
constexpr std::string_view kCorpus =
    "Every machine learning kernel carries an unwritten promise about what it computes. "
    "Two kernels that do the same thing on two stacks disagree: one silently rounds its inputs, "
    "one sums in a different order, one turns a missing value into zero, one returns garbage for an "
    "index out of range where another raises an error. The contract makes the promise explicit and "
    "checkable. The tokenizer turns text into tokens and the tokens back into the same text; the "
    "training loop reads the tokens, computes the loss, and the optimizer takes a step. When the "
    "learning rate warms up and the schedule decays, the model learns the statistics of the "
    "training data. A test that cannot fail tells us nothing; a contract that cannot tell the good "
    "kernel from the bad one is not a contract. Reading, writing, testing and measuring are the "
    "things we do every day, and the things we want the machine to do for us in the morning and "
    "in the evening. There is nothing in the text that the tokenizer should lose or change.";

std::vector<std::string> chunks_of(std::string_view s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t i = 1; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == ' ') {
      out.emplace_back(s.substr(start, i - start));
      start = i;
    }
  }
  return out;
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

/// Decodes UTF-8 into code points; false on malformed input.
bool utf8_codepoints(std::string_view s, std::vector<std::uint32_t>* out) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    int n = 0;
    if (c < 0x80) n = 0;
    else if ((c >> 5) == 6) n = 1;
    else if ((c >> 4) == 14) n = 2;
    else return false;
    if (i + static_cast<std::size_t>(n) >= s.size()) return false;
    std::uint32_t cp = n == 0 ? c : n == 1 ? (c & 0x1F) : (c & 0x0F);
    for (int k = 1; k <= n; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc >> 6) != 2) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    out->push_back(cp);
    i += static_cast<std::size_t>(n) + 1;
  }
  return true;
}

}  // namespace

std::uint32_t byte_to_codepoint(std::uint8_t b) {
  // Printable Latin-1 bytes stand for themselves; the rest (control bytes,
  // space, 127..160, 173) are moved to 256 + k in byte order.
  auto printable = [](int x) { return (x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174 && x <= 255); };
  if (printable(b)) return b;
  std::uint32_t k = 0;
  for (int x = 0; x < b; ++x)
    if (!printable(x)) ++k;
  return 256 + k;
}

BpeTokenizer::BpeTokenizer() {
  for (int b = 0; b < 256; ++b) vocab_.emplace_back(1, static_cast<char>(b));
}

void BpeTokenizer::add_merge(std::int32_t left, std::int32_t right) {
  rank_[{left, right}] = static_cast<std::int32_t>(merges_.size());
  merges_.emplace_back(left, right);
  vocab_.push_back(vocab_[static_cast<std::size_t>(left)] + vocab_[static_cast<std::size_t>(right)]);
}

BpeTokenizer BpeTokenizer::train(std::string_view corpus, int merges) {
  BpeTokenizer tok;
  std::map<std::string, std::int64_t> freq;
  for (auto& c : chunks_of(corpus)) ++freq[c];
  std::vector<std::pair<std::vector<std::int32_t>, std::int64_t>> words;
  for (const auto& [w, f] : freq) {
    std::vector<std::int32_t> ids;
    for (unsigned char c : w) ids.push_back(c);
    words.emplace_back(std::move(ids), f);
  }
  for (int m = 0; m < merges; ++m) {
    std::map<std::pair<std::int32_t, std::int32_t>, std::int64_t> pairs;
    for (const auto& [ids, f] : words)
      for (std::size_t i = 0; i + 1 < ids.size(); ++i) pairs[{ids[i], ids[i + 1]}] += f;
    if (pairs.empty()) break;
    auto best = pairs.begin();  // std::map order: ties go to the smallest pair
    for (auto it = pairs.begin(); it != pairs.end(); ++it)
      if (it->second > best->second) best = it;
    if (best->second < 2) break;  // a pair seen once teaches nothing
    const auto [l, r] = best->first;
    tok.add_merge(l, r);
    const std::int32_t id = static_cast<std::int32_t>(tok.vocab_.size() - 1);
    for (auto& [ids, f] : words) {
      std::vector<std::int32_t> next;
      for (std::size_t i = 0; i < ids.size(); ++i) {
        if (i + 1 < ids.size() && ids[i] == l && ids[i + 1] == r) {
          next.push_back(id);
          ++i;
        } else {
          next.push_back(ids[i]);
        }
      }
      ids = std::move(next);
    }
  }
  return tok;
}

Result<BpeTokenizer> BpeTokenizer::from_merges(std::string_view text) {
  std::map<std::uint32_t, std::uint8_t> to_byte;
  for (int b = 0; b < 256; ++b) to_byte[byte_to_codepoint(static_cast<std::uint8_t>(b))] = static_cast<std::uint8_t>(b);
  BpeTokenizer tok;
  std::map<std::string, std::int32_t> id_of;
  for (int b = 0; b < 256; ++b) id_of[tok.vocab_[static_cast<std::size_t>(b)]] = b;
  std::istringstream in{std::string(text)};
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (number == 1 && line.rfind("#version", 0) == 0)) continue;
    const auto sp = line.find(' ');
    if (sp == std::string::npos || sp == 0 || sp + 1 >= line.size() || line.find(' ', sp + 1) != std::string::npos)
      return invalid_argument("merges line " + std::to_string(number) + ": expected 'LEFT RIGHT'");
    std::int32_t side[2];
    for (int k = 0; k < 2; ++k) {
      const std::string word = k == 0 ? line.substr(0, sp) : line.substr(sp + 1);
      std::vector<std::uint32_t> cps;
      if (!utf8_codepoints(word, &cps))
        return invalid_argument("merges line " + std::to_string(number) + ": '" + word + "' is not UTF-8");
      std::string bytes;
      for (std::uint32_t cp : cps) {
        auto it = to_byte.find(cp);
        if (it == to_byte.end())
          return invalid_argument("merges line " + std::to_string(number) + ": code point " + std::to_string(cp) +
                                  " is outside the byte-to-unicode alphabet");
        bytes += static_cast<char>(it->second);
      }
      auto id = id_of.find(bytes);
      if (id == id_of.end())
        return invalid_argument("merges line " + std::to_string(number) + ": '" + word +
                                "' is not a token yet (merges must build on earlier ones)");
      side[k] = id->second;
    }
    if (tok.rank_.count({side[0], side[1]})) return invalid_argument("merges line " + std::to_string(number) + ": duplicate merge");
    tok.add_merge(side[0], side[1]);
    id_of.emplace(tok.vocab_.back(), static_cast<std::int32_t>(tok.vocab_.size() - 1));
  }
  return tok;
}

std::string BpeTokenizer::to_merges() const {
  std::string out = "#version: 0.2\n";
  auto write = [&](std::int32_t id) {
    for (unsigned char b : vocab_[static_cast<std::size_t>(id)]) append_utf8(out, byte_to_codepoint(b));
  };
  for (const auto& [l, r] : merges_) {
    write(l);
    out += ' ';
    write(r);
    out += '\n';
  }
  return out;
}

std::vector<std::int32_t> BpeTokenizer::encode(std::string_view bytes) const {
  std::vector<std::int32_t> out;
  for (const std::string& chunk : chunks_of(bytes)) {
    std::vector<std::int32_t> ids;
    for (unsigned char c : chunk) ids.push_back(c);
    for (;;) {
      std::int32_t best = std::numeric_limits<std::int32_t>::max();
      for (std::size_t i = 0; i + 1 < ids.size(); ++i) {
        auto it = rank_.find({ids[i], ids[i + 1]});
        if (it != rank_.end()) best = std::min(best, it->second);
      }
      if (best == std::numeric_limits<std::int32_t>::max()) break;
      const auto [l, r] = merges_[static_cast<std::size_t>(best)];
      std::vector<std::int32_t> next;
      for (std::size_t i = 0; i < ids.size(); ++i) {
        if (i + 1 < ids.size() && ids[i] == l && ids[i + 1] == r) {
          next.push_back(256 + best);
          ++i;
        } else {
          next.push_back(ids[i]);
        }
      }
      ids = std::move(next);
    }
    out.insert(out.end(), ids.begin(), ids.end());
  }
  return out;
}

Result<std::string> BpeTokenizer::decode(const std::vector<std::int32_t>& ids) const {
  std::string out;
  for (std::int32_t id : ids) {
    if (id < 0 || static_cast<std::size_t>(id) >= vocab_.size())
      return invalid_argument("token id " + std::to_string(id) + " is outside the vocabulary of " +
                              std::to_string(vocab_.size()));
    out += vocab_[static_cast<std::size_t>(id)];
  }
  return out;
}

const BpeTokenizer& BpeTokenizer::builtin() {
  static const BpeTokenizer tok = train(kCorpus, 200);
  return tok;
}

const std::vector<std::string>& BpeTokenizer::corpus_words() {
  static const std::vector<std::string> words = [] {
    std::vector<std::string> w;
    std::string cur;
    for (char c : kCorpus) {
      if (c == ' ') {
        if (!cur.empty()) w.push_back(cur);
        cur.clear();
      } else {
        cur += c;
      }
    }
    if (!cur.empty()) w.push_back(cur);
    return w;
  }();
  return words;
}

}  // namespace kc::tokenize
