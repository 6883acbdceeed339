// What crosses a module boundary as data instead of a name or a print: the
// message sink (kc/message.h) and the declared flags isolate, engine and
// ladder read (kc/declaration.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kc/declaration.h"
#include "kc/message.h"

namespace kc {
namespace {

TEST(MessageSink, SaysToTheInstalledSinkOnlyAndOnceWhenAskedOnce) {
  std::vector<std::string> heard;
  const MessageSink before = set_message_sink([&heard](const std::string& t) { heard.push_back(t); });
  say("first");
  say("first");
  const std::string unique = "once-" + std::to_string(reinterpret_cast<std::uintptr_t>(&heard));
  say_once(unique);
  say_once(unique);
  EXPECT_EQ(heard, (std::vector<std::string>{"first", "first", unique}));
  set_message_sink(nullptr);
  say("dropped");  // no sink: the library stays silent
  EXPECT_EQ(heard.size(), 3u);
  set_message_sink(before);
}

TEST(Declaration, BrokenOnPurposeIsAFlagTheDeclarationSets) {
  Declaration d;
  EXPECT_TRUE(d.broken_on_purpose.empty());
  std::string error;
  ASSERT_TRUE(d.set("broken_on_purpose", "incident replay", &error)) << error;
  EXPECT_EQ(d.broken_on_purpose, "incident replay");
  EXPECT_EQ(d.get("broken_on_purpose"), "incident replay");  // still among the declared facts
  ASSERT_TRUE(d.set("calibration", "bad", &error));
  EXPECT_EQ(d.broken_on_purpose, "incident replay");
}

TEST(Declaration, RuntimeDefaultsToForkSafeHostCode) {
  const Declaration d;
  EXPECT_TRUE(d.runtime.survives_fork);
  EXPECT_TRUE(d.runtime.runs_on_host);
  EXPECT_EQ(d.runtime.sandbox, "strict");
}

}  // namespace
}  // namespace kc
