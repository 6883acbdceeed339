// The byte-level BPE tokenizer (include/kc/ops/bpe.h).
#include "kc/ops/bpe.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "kc/rng.h"

namespace kc::tokenize {
namespace {

std::string roundtrip(const BpeTokenizer& t, const std::string& s) {
  auto r = t.decode(t.encode(s));
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : std::string();
}

TEST(Bpe, LearnsMergesThatShortenTheCorpusLanguage) {
  const BpeTokenizer& t = BpeTokenizer::builtin();
  // Up to 200 merges; training stops when no pair occurs twice (136 here).
  EXPECT_GT(t.vocab_size(), 256u + 100u);
  EXPECT_LE(t.vocab_size(), 256u + 200u);
  const std::string text = "the kernel computes the loss and the tokenizer reads the text";
  const auto ids = t.encode(text);
  EXPECT_LT(ids.size() * 2, text.size()) << "merges should at least halve corpus-like text";
  EXPECT_EQ(roundtrip(t, text), text);
}

TEST(Bpe, EveryByteAloneAndEveryPairRoundTrips) {
  const BpeTokenizer& t = BpeTokenizer::builtin();
  for (int a = 0; a < 256; ++a) {
    const std::string one(1, static_cast<char>(a));
    ASSERT_EQ(roundtrip(t, one), one) << a;
    for (int b = 0; b < 256; ++b) {
      const std::string two = {static_cast<char>(a), static_cast<char>(b)};
      ASSERT_EQ(t.decode(t.encode(two)).value(), two) << a << " " << b;
    }
  }
}

TEST(Bpe, RandomByteStringsRoundTrip) {
  const BpeTokenizer& t = BpeTokenizer::builtin();
  Rng rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string s(static_cast<std::size_t>(rng.uniform_int(0, 64)), '\0');
    for (char& c : s) c = static_cast<char>(rng.uniform() < 0.5 ? rng.uniform_int(0, 255) : " thea"[rng.uniform_int(0, 4)]);
    ASSERT_EQ(roundtrip(t, s), s);
  }
}

TEST(Bpe, DecodeRejectsUnknownIds) {
  const BpeTokenizer& t = BpeTokenizer::builtin();
  EXPECT_FALSE(t.decode({-1}).ok());
  EXPECT_FALSE(t.decode({static_cast<std::int32_t>(t.vocab_size())}).ok());
}

TEST(Bpe, ByteToUnicodeIsABijectionOntoPrintableCodePoints) {
  std::set<std::uint32_t> seen;
  for (int b = 0; b < 256; ++b) seen.insert(byte_to_codepoint(static_cast<std::uint8_t>(b)));
  EXPECT_EQ(seen.size(), 256u);
  EXPECT_EQ(byte_to_codepoint(' '), 256u + 32u);  // GPT-2 writes a space as U+0120 'Ġ'
  EXPECT_EQ(byte_to_codepoint('a'), static_cast<std::uint32_t>('a'));
}

TEST(Bpe, MergesListWritesAndReadsBackTheSameTokenizer) {
  const BpeTokenizer& t = BpeTokenizer::builtin();
  auto back = BpeTokenizer::from_merges(t.to_merges());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->vocab_size(), t.vocab_size());
  const std::string text = "the training data and the schedule";
  EXPECT_EQ(back->encode(text), t.encode(text));
}

TEST(Bpe, MalformedMergesListsNameTheLine) {
  auto r = BpeTokenizer::from_merges("#version: 0.2\nt h\nth e\nqq\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("line 4"), std::string::npos) << r.status().message();
  r = BpeTokenizer::from_merges("ab c\n");  // "ab" is not a token yet
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("line 1"), std::string::npos);
  // GPT-2's "Ġ" (U+0120) is the space byte.
  r = BpeTokenizer::from_merges("\xC4\xA0 t\n");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->token(256), " t");
}

}  // namespace
}  // namespace kc::tokenize
