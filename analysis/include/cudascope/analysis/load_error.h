#pragma once
// The outcome of a fallible load: a value, or an error a user can act on (which file, at
// which byte, what was expected there). Loaders never throw for bad input.

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

namespace cudascope::analysis {

struct LoadError {
  std::string file;      // as given by the caller
  uint64_t offset = 0;   // byte offset in the (decompressed) stream where the problem was seen
  std::string expected;  // what the reader expected at that offset, and what it found
  bool cancelled = false;

  // "FILE: byte OFFSET: EXPECTED" — the form every front end prints.
  std::string message() const {
    if (cancelled) return file + ": loading cancelled";
    return file + ": byte " + std::to_string(offset) + ": " + expected;
  }
};

// A value or a LoadError. Deliberately small: just what the loaders and their callers use.
template <typename T>
class Result {
 public:
  Result(T value) : state_(std::move(value)) {}
  Result(LoadError error) : state_(std::move(error)) {}

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  const LoadError& error() const { return std::get<1>(state_); }

 private:
  std::variant<T, LoadError> state_;
};

}  // namespace cudascope::analysis
