// Tests of kc::run_in_child (src/core/child.cpp): the probe runner the device
// backends use so kc's own process never initialises their runtimes.
#include "kc/child.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

namespace kc {
namespace {

TEST(RunInChild, ReturnsTheChildsTextAndRunsInAnotherProcess) {
  const pid_t here = getpid();
  auto r = run_in_child([] { return Result<std::string>(std::to_string(getpid())); }, 30, "the test child");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_NE(*r, std::to_string(here));
  EXPECT_FALSE(r->empty());
  // Text longer than one pipe buffer arrives whole.
  const std::string big(200000, 'x');
  auto b = run_in_child([&] { return Result<std::string>(big); }, 30, "the test child");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, big);
}

TEST(RunInChild, TheChildsStatusComesBack) {
  auto r = run_in_child([] { return Result<std::string>(unavailable("no device here")); }, 30, "the test child");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(r.status().message(), "no device here");
  auto e = run_in_child([] { return Result<std::string>(invalid_argument("bad")); }, 30, "the test child");
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
}

TEST(RunInChild, ACrashOrAHangIsUnavailableAndNamed) {
  auto crash = run_in_child(
      []() -> Result<std::string> {
        raise(SIGKILL);  // not SIGSEGV: a sanitizer build would catch that one
        return std::string("unreachable");
      },
      30, "the crashing probe");
  ASSERT_FALSE(crash.ok());
  EXPECT_EQ(crash.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(crash.status().message().find("the crashing probe died with signal 9"), std::string::npos)
      << crash.status().message();

  const auto t0 = std::chrono::steady_clock::now();
  auto hang = run_in_child(
      []() -> Result<std::string> {
        std::this_thread::sleep_for(std::chrono::seconds(60));
        return std::string("late");
      },
      0.5, "the hanging probe");
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(hang.ok());
  EXPECT_NE(hang.status().message().find("the hanging probe gave no answer within"), std::string::npos)
      << hang.status().message();
  EXPECT_LT(waited, 20.0);  // killed at its deadline, not waited for
}

}  // namespace
}  // namespace kc
