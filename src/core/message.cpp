#include "kc/message.h"

#include <mutex>
#include <set>
#include <utility>

namespace kc {
namespace {

struct Messages {
  std::mutex mu;
  MessageSink sink;
  std::set<std::string> said;
};

Messages& messages() {
  static Messages* m = new Messages;  // never destroyed: a late message from another thread stays safe
  return *m;
}

}  // namespace

MessageSink set_message_sink(MessageSink sink) {
  Messages& m = messages();
  const std::lock_guard<std::mutex> lock(m.mu);
  std::swap(m.sink, sink);
  return sink;
}

void say(const std::string& text) {
  Messages& m = messages();
  const std::lock_guard<std::mutex> lock(m.mu);
  if (m.sink) m.sink(text);
}

void say_once(const std::string& text) {
  Messages& m = messages();
  const std::lock_guard<std::mutex> lock(m.mu);
  if (!m.said.insert(text).second) return;
  if (m.sink) m.sink(text);
}

}  // namespace kc
