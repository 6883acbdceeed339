// `post output O satisfies elementwise_close(O, ref(O)) or raise E`: the
// relation with an accepted refusal (INC-FA3-SHAPE), parsed, printed and
// rejected when malformed.
#include <gtest/gtest.h>

#include <string>

#include "kc/lang.h"

namespace kc::lang {
namespace {

std::string contract_with_post(const std::string& post) {
  return "contract T-1 {\n  scope attention\n  pre precision(out) in {FP32}\n  post " + post +
         "\n  tolerance bound gamma(L, P) * |out|\n  reference higher_precision FP64\n"
         "  measure sample 1 random inputs per config; compute max bound_ratio; pass if <= 1\n"
         "  violation signature HELD_OUT_SHAPE\n}\n";
}

TEST(PostOrRaise, ParsesPrintsAndRoundTrips) {
  auto r = parse_kc(contract_with_post("output out satisfies elementwise_close(out, ref(out)) or raise Unsupported"),
                    "t.kc");
  ASSERT_FALSE(r.has_errors());
  ASSERT_EQ(r.document.contracts.size(), 1u);
  const Contract& c = r.document.contracts[0];
  EXPECT_EQ(c.post.kind, Postcondition::Kind::kElementwiseClose);
  EXPECT_EQ(c.post.or_raise, "Unsupported");
  EXPECT_TRUE(c.executable());
  const std::string printed = print_kc(r.document);
  EXPECT_NE(printed.find("or raise Unsupported"), std::string::npos) << printed;
  auto again = parse_kc(printed, "t2.kc");
  ASSERT_FALSE(again.has_errors());
  EXPECT_EQ(again.document.contracts[0].post.or_raise, "Unsupported");
  EXPECT_EQ(again.document.contracts[0].content_hash(), c.content_hash());
}

TEST(PostOrRaise, PlainRelationHasNoRaiseAndMalformedTailsAreProse) {
  auto plain = parse_kc(contract_with_post("output out satisfies elementwise_close(out, ref(out))"), "t.kc");
  ASSERT_FALSE(plain.has_errors());
  EXPECT_TRUE(plain.document.contracts[0].post.or_raise.empty());
  // Not the structured form: the post clause is prose (no error), with a gap
  // that says what was expected; nothing of it reaches the engine.
  for (const char* tail : {" or clamp", " or raise"}) {
    auto r = parse_kc(contract_with_post(std::string("output out satisfies elementwise_close(out, ref(out))") + tail),
                      "t.kc");
    EXPECT_FALSE(r.has_errors()) << tail;
    ASSERT_EQ(r.document.contracts.size(), 1u);
    const Contract& c = r.document.contracts[0];
    EXPECT_EQ(c.post.kind, Postcondition::Kind::kProse) << tail;
    EXPECT_TRUE(c.post.or_raise.empty()) << tail;
    EXPECT_NE(c.post_info.gap.find("raise"), std::string::npos) << c.post_info.gap;
  }
}

}  // namespace
}  // namespace kc::lang
