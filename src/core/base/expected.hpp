// A small Expected<T> (C++20 has no std::expected) plus the error type every
// layer returns. Errors carry the exit code they should end the process with.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace ezpz {

/// Exit codes (DESIGN.md). A job's own code passes through untouched; these are
/// for ezpz's own failures.
enum class ExitCode : int {
  ok = 0,
  failure = 1,     ///< a check or an operation failed
  usage = 2,       ///< bad command line, bad input file, bad environment value
  timeout = 124,   ///< watchdog fired
  internal = 125,  ///< a bug in ezpz
  cannot_execute = 126,
  not_found = 127,
  unreachable = 255,  ///< a launcher could not reach a node (ssh's own code for it)
};

/// What kind of failure, where a caller acts on it (never decided by matching the message).
enum class ErrorKind {
  other,
  needs_full_copy,  ///< an incremental update cannot apply to this copy: send the whole tree
  config,           ///< the user's config file is wrong (fix it at the line named)
};

struct Error {
  ExitCode code = ExitCode::failure;
  std::string message;  ///< one line naming the thing and the fix
  ErrorKind kind = ErrorKind::other;
};

inline Error usage_error(std::string message) {
  return Error{ExitCode::usage, std::move(message)};
}
inline Error failure(std::string message) {
  return Error{ExitCode::failure, std::move(message)};
}

template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : state_(std::in_place_index<0>, std::move(value)) {}      // NOLINT: implicit by design
  Expected(Error error) : state_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  [[nodiscard]] bool has_value() const { return state_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  [[nodiscard]] const Error& error() const { return std::get<1>(state_); }

 private:
  std::variant<T, Error> state_;
};

/// Expected<void>: success or an Error.
template <>
class [[nodiscard]] Expected<void> {
 public:
  Expected() = default;
  Expected(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT

  [[nodiscard]] bool has_value() const { return ok_; }
  explicit operator bool() const { return ok_; }
  [[nodiscard]] const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

}  // namespace ezpz

/// In a function that returns an Expected (or an Error): evaluate `expr`, an Expected, and
/// return its error when it has one (ccache's TRY):   EZPZ_TRY(write_manifest(dir, entries));
#define EZPZ_TRY(expr)                         \
  do {                                         \
    if (auto ezpz_try_ = (expr); !ezpz_try_) { \
      return ezpz_try_.error();                \
    }                                          \
  } while (false)

#define EZPZ_TRY_CAT2(a, b) a##b
#define EZPZ_TRY_CAT(a, b) EZPZ_TRY_CAT2(a, b)
/// The same, declaring `decl` from its value when it has one:
///   EZPZ_TRY_ASSIGN(const auto plan, core::plan_yeet(request, env, facts));
#define EZPZ_TRY_ASSIGN(decl, expr)                   \
  auto EZPZ_TRY_CAT(ezpz_try_, __LINE__) = (expr);    \
  if (!EZPZ_TRY_CAT(ezpz_try_, __LINE__)) {           \
    return EZPZ_TRY_CAT(ezpz_try_, __LINE__).error(); \
  }                                                   \
  decl = std::move(*EZPZ_TRY_CAT(ezpz_try_, __LINE__))  // NOLINT(bugprone-macro-parentheses): a declaration
