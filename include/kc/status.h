// kc — Status and Result<T>: how expected failures travel between modules.
//
// No exception crosses a module boundary. A function that can fail for a
// reason the user should see returns Status or Result<T>; context is added on
// the way up with Status::with_context. Bugs are KC_CHECK (always on) and
// KC_DCHECK (debug only).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace kc {

/// The small, documented set of failure codes.
enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument,   ///< caller passed something malformed (bad flag, bad shape)
  kParseError,        ///< contract text could not be parsed
  kNotFound,          ///< unknown contract, op, impl or file
  kUnavailable,       ///< backend or library not present on this machine
  kUnimplemented,     ///< impl cannot run this problem (shape class, dtype)
  kKernelRaised,      ///< the kernel under test reported an error (e.g. OOB RAISE)
  kResourceExhausted, ///< allocation failed, memory limit hit
  kDeadlineExceeded,  ///< a kernel or worker timed out
  kCrashed,           ///< a kernel or worker died (signal)
  kInternal,          ///< a bug in kc
};

std::string_view status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return {}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  /// Prepends "context: " to the message; keeps the code.
  Status with_context(std::string_view context) const;

  /// "kNotFound: message" style one-liner.
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status ok_status() { return {}; }
inline Status invalid_argument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status not_found(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status unimplemented(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }
inline Status kernel_raised(std::string m) { return {StatusCode::kKernelRaised, std::move(m)}; }
inline Status internal_error(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

/// A value or the Status explaining why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (std::get<Status>(v_).ok()) v_ = Status(StatusCode::kInternal, "Result built from OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

[[noreturn]] void check_failed(const char* expr, const char* file, int line, const char* msg);

}  // namespace kc

#define KC_CHECK(cond)                                                       \
  do {                                                                       \
    if (!(cond)) ::kc::check_failed(#cond, __FILE__, __LINE__, nullptr);     \
  } while (0)
#define KC_CHECK_MSG(cond, msg)                                              \
  do {                                                                       \
    if (!(cond)) ::kc::check_failed(#cond, __FILE__, __LINE__, (msg));       \
  } while (0)
#ifdef NDEBUG
#define KC_DCHECK(cond) \
  do {                  \
  } while (0)
#else
#define KC_DCHECK(cond) KC_CHECK(cond)
#endif

#define KC_CONCAT_INNER(a, b) a##b
#define KC_CONCAT(a, b) KC_CONCAT_INNER(a, b)

#define KC_RETURN_IF_ERROR(expr)              \
  do {                                        \
    ::kc::Status kc_status_ = (expr);         \
    if (!kc_status_.ok()) return kc_status_;  \
  } while (0)

#define KC_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()

/// KC_ASSIGN_OR_RETURN(auto x, f()); — returns f()'s Status on failure.
#define KC_ASSIGN_OR_RETURN(lhs, expr) \
  KC_ASSIGN_OR_RETURN_IMPL(KC_CONCAT(kc_result_, __LINE__), lhs, expr)
