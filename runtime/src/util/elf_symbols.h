#pragma once
// Function names for code addresses, read from the ELF symbol tables of the files the
// process's objects were loaded from. dladdr names only exported (dynamic) symbols: static
// functions, anonymous namespaces and any function of an executable linked without
// -rdynamic come out unnamed. The full .symtab (and .dynsym) of the file on disk names them.
//
// Slow the first time an object is asked about (its file is read); call it when writing a
// snapshot, never on the allocation path. Thread-safe.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cudascope::util {

// The function symbols (STT_FUNC, STT_GNU_IFUNC) of one 64-bit ELF file, sorted by address.
// Immutable once read.
class ElfSymbols {
 public:
  // Reads `path`'s .symtab and .dynsym. A file that is missing, truncated, not a 64-bit ELF
  // of this byte order, stripped, or whose offsets point past its end gives what could be
  // read safely, often nothing; it never throws and never reads outside the file.
  explicit ElfSymbols(const std::string& path);

  // The mangled name of the function whose [start, start + size) holds `file_address` (the
  // address as the file's symbols count it: the run-time address less the load bias); empty
  // when no function symbol holds it.
  std::string_view function_at(std::uint64_t file_address) const;
  std::size_t size() const noexcept { return functions_.size(); }

 private:
  struct Function {
    std::uint64_t start = 0, end = 0;
    std::uint32_t name = 0;  // offset in names_, NUL-terminated
  };
  void load(int fd, std::uint64_t file_size);
  std::vector<Function> functions_;
  std::string names_;
};

// The demangled name of the function holding `address`, a code address of this process:
// from the symbol tables of its object's file (each file read once per process), else the
// exported name dladdr gives; empty when neither names it.
std::string function_name_at(const void* address);

// The same for an object read from `path` and loaded with load bias `bias`: the name in
// that file's symbol tables, else `fallback` (a mangled or plain name; may be null)
// demangled. The file is read once per process.
std::string function_name_in(const std::string& path, std::uintptr_t bias, const void* address, const char* fallback);

// abi::__cxa_demangle's answer for `name`, or `name` itself when it is not a mangled name.
std::string demangle(const char* name);

}  // namespace cudascope::util
