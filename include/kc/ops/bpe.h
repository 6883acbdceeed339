// kc — a small byte-level BPE tokenizer (docs/transformer-training.md).
//
// Byte-level: the base vocabulary is the 256 bytes (ids 0..255), so every
// byte string, valid UTF-8 or not, has an encoding; merge i makes id 256 + i.
// Text is cut into chunks before every space byte (GPT-2 style "word with its
// leading space"); merges never cross a chunk boundary. Encoding applies, in
// each chunk, the lowest-ranked adjacent pair until none applies. Decoding
// concatenates the tokens' bytes, so decode(encode(x)) = x for every x — the
// contract KC-BPE-01 checks it on a kernel that claims to do this.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kc/status.h"

namespace kc::tokenize {

class BpeTokenizer {
 public:
  /// Learns up to `merges` merges from `corpus` (most frequent adjacent pair
  /// first; ties to the smallest id pair, so training is deterministic); it
  /// stops early when no pair occurs twice.
  static BpeTokenizer train(std::string_view corpus, int merges);
  /// Loads a GPT-2 style merges list: one merge per line, "LEFT RIGHT", each
  /// side a token written in GPT-2's byte-to-unicode alphabet; a first line
  /// starting with "#version" and blank lines are skipped. Each side must be
  /// a token known by then. Errors name the line.
  static Result<BpeTokenizer> from_merges(std::string_view text);
  /// The merges list of this tokenizer in the format from_merges reads.
  std::string to_merges() const;

  std::vector<std::int32_t> encode(std::string_view bytes) const;
  /// kInvalidArgument on an id outside the vocabulary.
  Result<std::string> decode(const std::vector<std::int32_t>& ids) const;

  std::size_t vocab_size() const { return vocab_.size(); }
  /// The bytes of token `id` (id < vocab_size()).
  const std::string& token(std::int32_t id) const { return vocab_[static_cast<std::size_t>(id)]; }

  /// The tokenizer the ref kernel uses: up to 200 merges (136) learned from a
  /// small built-in English corpus (the same on every machine).
  static const BpeTokenizer& builtin();
  /// Words of the built-in corpus, for generating text inputs.
  static const std::vector<std::string>& corpus_words();

 private:
  BpeTokenizer();
  void add_merge(std::int32_t left, std::int32_t right);

  std::vector<std::string> vocab_;                            // id -> bytes
  std::vector<std::pair<std::int32_t, std::int32_t>> merges_;  // rank -> pair
  std::map<std::pair<std::int32_t, std::int32_t>, std::int32_t> rank_;
};

/// GPT-2's byte-to-unicode map: the code point byte b is written as.
std::uint32_t byte_to_codepoint(std::uint8_t b);

}  // namespace kc::tokenize
