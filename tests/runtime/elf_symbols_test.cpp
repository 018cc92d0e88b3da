// Function names from the ELF symbol tables on disk (util/elf_symbols.h): what dladdr cannot
// name (static functions, anonymous namespaces, an executable's unexported code) is named,
// in the symbolizer and in a snapshot's frames; unreadable files fall back to dladdr's answer.
#include "util/elf_symbols.h"

#include <cudascope/cuda/memory.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace cudascope::testing {
namespace {

using ::testing::HasSubstr;

// Code that only this file's symbol table names: internal linkage, in a test executable
// linked without -rdynamic.
__attribute__((noinline)) int triple_in_anonymous_namespace(int x) {
  asm volatile("" : "+r"(x));  // kept as a function of its own, whatever the optimiser sees
  return 3 * x;
}

// Allocates through the caching allocator from a function only .symtab names; the work after
// the call keeps its return address in this function (no tail call).
__attribute__((noinline)) void* allocate_in_anonymous_namespace(std::size_t size) {
  void* p = cuda::caching_allocator_alloc(size);
  asm volatile("" : : "r"(p) : "memory");
  return p;
}

const void* code_of(int (*f)(int)) { return reinterpret_cast<const void*>(f); }
// An address inside the function, past its first byte, as a return address would be.
const void* inside(int (*f)(int)) { return static_cast<const char*>(code_of(f)) + 1; }

std::uintptr_t main_program_bias() {
  Dl_info info{};
  link_map* map = nullptr;
  EXPECT_NE(dladdr1(code_of(&triple_in_anonymous_namespace), &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP), 0);
  return map != nullptr ? map->l_addr : 0;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string write_temp(const std::string& name, const std::string& bytes) {
  const std::string path = ::testing::TempDir() + "elf_symbols_" + name;
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size()));
  return path;
}

const char* const kExportedMangled = "_ZN9cudascope4cuda12device_countEv";
const char* const kExportedDemangled = "cudascope::cuda::device_count()";

TEST(ElfSymbolsTest, NamesAFunctionInAnAnonymousNamespaceThatDladdrCannot) {
  Dl_info info{};
  ASSERT_NE(dladdr(inside(&triple_in_anonymous_namespace), &info), 0);
  EXPECT_EQ(info.dli_sname, nullptr) << "dladdr names it after all: " << info.dli_sname;
  EXPECT_EQ(util::function_name_at(inside(&triple_in_anonymous_namespace)),
            "cudascope::testing::(anonymous namespace)::triple_in_anonymous_namespace(int)");
  EXPECT_EQ(triple_in_anonymous_namespace(2), 6);
}

TEST(ElfSymbolsTest, NamesExportedFunctionsOfSharedLibrariesAsDladdrDoes) {
  const void* exported = dlsym(RTLD_DEFAULT, kExportedMangled);
  ASSERT_NE(exported, nullptr);
  EXPECT_EQ(util::function_name_at(static_cast<const char*>(exported) + 1), kExportedDemangled);
}

TEST(ElfSymbolsTest, FileAddressesAreRunTimeAddressesLessTheLoadBias) {
  const util::ElfSymbols exe("/proc/self/exe");
  ASSERT_GT(exe.size(), 0u);
  const auto at = reinterpret_cast<std::uintptr_t>(inside(&triple_in_anonymous_namespace));
  EXPECT_EQ(exe.function_at(at - main_program_bias()), "_ZN9cudascope7testing12_GLOBAL__N_129triple_in_anonymous_namespaceEi");
  EXPECT_EQ(exe.function_at(0), "");
  EXPECT_EQ(exe.function_at(UINT64_MAX), "");
}

TEST(ElfSymbolsTest, AddressesOutsideAnyObjectHaveNoName) {
  std::vector<char> heap(64);
  EXPECT_EQ(util::function_name_at(heap.data()), "");
  EXPECT_EQ(util::function_name_at(nullptr), "");
}

TEST(ElfSymbolsTest, ASnapshotFrameNamesTheAnonymousNamespaceCaller) {
  cuda::memory::record_memory_history("all", "all", "all");
  void* p = allocate_in_anonymous_namespace(4096);
  const auto snapshot = cuda::memory::memory_snapshot();
  cuda::caching_allocator_delete(p);
  cuda::memory::record_memory_history(std::nullopt);
  ASSERT_FALSE(snapshot.device_traces.empty());
  std::vector<std::string> names;
  for (const auto& entry : snapshot.device_traces[0]) {
    if (entry.action != "alloc" || entry.addr != reinterpret_cast<std::uintptr_t>(p)) continue;
    for (const auto& frame : entry.frames) names.emplace_back(frame.name);
  }
  ASSERT_FALSE(names.empty()) << "the allocation kept no frames";
  EXPECT_THAT(names, ::testing::Contains(HasSubstr("(anonymous namespace)::allocate_in_anonymous_namespace(unsigned long)")))
      << ::testing::PrintToString(names);
}

TEST(ElfSymbolsTest, MissingAndNonRegularFilesFallBackToTheGivenName) {
  const void* at = inside(&triple_in_anonymous_namespace);
  EXPECT_EQ(util::ElfSymbols(::testing::TempDir() + "no_such_object.so").size(), 0u);
  EXPECT_EQ(util::function_name_in(::testing::TempDir() + "no_such_object.so", 0, at, kExportedMangled), kExportedDemangled);
  EXPECT_EQ(util::function_name_in("/proc/self", 0, at, kExportedMangled), kExportedDemangled);
  EXPECT_EQ(util::function_name_in("/dev/zero", 0, at, nullptr), "");
  EXPECT_EQ(util::function_name_in("/dev/zero", 0, at, "plain_c_name"), "plain_c_name");
}

// Every cut of the executable that loses its section headers reads as no symbols, and the
// name falls back; garbage reads as nothing.
TEST(ElfSymbolsTest, TruncatedAndGarbageFilesReadAsNoSymbolsAndFallBack) {
  const std::string exe = read_file("/proc/self/exe");
  Elf64_Ehdr header{};
  ASSERT_GE(exe.size(), sizeof header);
  std::memcpy(&header, exe.data(), sizeof header);
  const std::size_t headers_end = header.e_shoff + std::size_t{header.e_shnum} * header.e_shentsize;
  ASSERT_LE(headers_end, exe.size());
  const std::uintptr_t bias = main_program_bias();
  const void* at = inside(&triple_in_anonymous_namespace);
  for (std::size_t cut : {std::size_t{0}, std::size_t{1}, std::size_t{4}, sizeof header - 1, sizeof header,
                          std::size_t{4096}, exe.size() / 2, headers_end - 1}) {
    const std::string path = write_temp("cut", exe.substr(0, cut));
    EXPECT_EQ(util::ElfSymbols(path).size(), 0u) << "cut at " << cut;
    EXPECT_EQ(util::function_name_in(path, bias, at, kExportedMangled), kExportedDemangled) << "cut at " << cut;
  }
  std::string garbage(1 << 16, '\0');
  for (std::size_t i = 0; i < garbage.size(); ++i) garbage[i] = char((i * 2654435761u) >> 13);
  EXPECT_EQ(util::ElfSymbols(write_temp("garbage", garbage)).size(), 0u);
  garbage.replace(0, SELFMAG, ELFMAG);  // the magic, then nonsense
  EXPECT_EQ(util::ElfSymbols(write_temp("magic_garbage", garbage)).size(), 0u);
  // The whole file, as a control: the same reader names the function.
  EXPECT_EQ(util::function_name_in(write_temp("whole", exe), bias, at, kExportedMangled),
            "cudascope::testing::(anonymous namespace)::triple_in_anonymous_namespace(int)");
}

// Section headers that point past the end of the file, or names past their string table,
// are skipped, not followed.
TEST(ElfSymbolsTest, OffsetsAndSizesPastTheEndAreNotFollowed) {
  const std::string exe = read_file("/proc/self/exe");
  Elf64_Ehdr header{};
  ASSERT_GE(exe.size(), sizeof header);
  std::memcpy(&header, exe.data(), sizeof header);
  auto with_sections = [&](auto change) {
    std::string copy = exe;
    for (std::size_t i = 0; i < header.e_shnum; ++i) {
      Elf64_Shdr section{};
      char* at = copy.data() + header.e_shoff + i * sizeof section;
      std::memcpy(&section, at, sizeof section);
      change(section);
      std::memcpy(at, &section, sizeof section);
    }
    return util::ElfSymbols(write_temp("changed", copy)).size();
  };
  EXPECT_GT(with_sections([](Elf64_Shdr&) {}), 0u) << "the unchanged copy has symbols";
  EXPECT_EQ(with_sections([](Elf64_Shdr& s) { s.sh_offset = UINT64_MAX - 8; }), 0u);
  EXPECT_EQ(with_sections([](Elf64_Shdr& s) { s.sh_size = UINT64_MAX / 2; }), 0u);
  EXPECT_EQ(with_sections([](Elf64_Shdr& s) {
              if (s.sh_type == SHT_STRTAB) s.sh_size = 1;  // every name now lies past its table
            }),
            0u);
  EXPECT_EQ(with_sections([](Elf64_Shdr& s) {
              if (s.sh_type == SHT_SYMTAB || s.sh_type == SHT_DYNSYM) s.sh_link = 0xffff;
            }),
            0u);
  std::string huge_count = exe;
  reinterpret_cast<Elf64_Ehdr*>(huge_count.data())->e_shnum = 0xffff;  // headers past the end
  EXPECT_EQ(util::ElfSymbols(write_temp("huge_count", huge_count)).size(), 0u);
}

}  // namespace
}  // namespace cudascope::testing
