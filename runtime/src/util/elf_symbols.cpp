#include "util/elf_symbols.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace cudascope::util {

namespace {

// Reads exactly `length` bytes at `offset`, only when they lie inside the file. pread, not
// mmap: a file cut short while it is read gives an error here, not SIGBUS.
bool read_at(int fd, std::uint64_t file_size, std::uint64_t offset, std::uint64_t length, void* out) {
  if (offset > file_size || length > file_size - offset) return false;
  auto* at = static_cast<char*>(out);
  while (length > 0) {
    const ssize_t n = pread(fd, at, length, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    at += n;
    offset += static_cast<std::uint64_t>(n);
    length -= static_cast<std::uint64_t>(n);
  }
  return true;
}

bool readable_header(const Elf64_Ehdr& h) {
  constexpr unsigned char kOurByteOrder = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
  return std::memcmp(h.e_ident, ELFMAG, SELFMAG) == 0 && h.e_ident[EI_CLASS] == ELFCLASS64 &&
         h.e_ident[EI_DATA] == kOurByteOrder && h.e_shentsize == sizeof(Elf64_Shdr) && h.e_shoff != 0;
}

// The section headers, or none when they do not fit the file.
std::vector<Elf64_Shdr> section_headers(int fd, std::uint64_t file_size, const Elf64_Ehdr& h) {
  std::uint64_t count = h.e_shnum;
  if (count == 0) {  // more than SHN_LORESERVE sections: the count is in section 0's sh_size
    Elf64_Shdr first{};
    if (!read_at(fd, file_size, h.e_shoff, sizeof first, &first)) return {};
    count = first.sh_size;
  }
  if (count > file_size / sizeof(Elf64_Shdr)) return {};
  std::vector<Elf64_Shdr> sections(count);
  if (!read_at(fd, file_size, h.e_shoff, count * sizeof(Elf64_Shdr), sections.data())) return {};
  return sections;
}

bool is_function(const Elf64_Sym& s) {
  const unsigned type = ELF64_ST_TYPE(s.st_info);
  return (type == STT_FUNC || type == STT_GNU_IFUNC) && s.st_shndx != SHN_UNDEF && s.st_value != 0 && s.st_size != 0;
}

// Symbols are read this many at a time, so a large .symtab never sits in memory whole.
constexpr std::size_t kSymbolsPerRead = 4096;

}  // namespace

ElfSymbols::ElfSymbols(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return;
  struct stat st {};
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) load(fd, static_cast<std::uint64_t>(st.st_size));
  close(fd);
  // By start; at one start the longest first, so an alias of the same code is the one kept.
  std::sort(functions_.begin(), functions_.end(), [](const Function& a, const Function& b) {
    return a.start != b.start ? a.start < b.start : a.end > b.end;
  });
  functions_.erase(std::unique(functions_.begin(), functions_.end(),
                               [](const Function& a, const Function& b) { return a.start == b.start; }),
                   functions_.end());
  functions_.shrink_to_fit();
}

void ElfSymbols::load(int fd, std::uint64_t file_size) {
  Elf64_Ehdr header{};
  if (!read_at(fd, file_size, 0, sizeof header, &header) || !readable_header(header)) return;
  const std::vector<Elf64_Shdr> sections = section_headers(fd, file_size, header);
  std::vector<Elf64_Sym> symbols;
  std::string strings;
  for (const Elf64_Shdr& table : sections) {
    if (table.sh_type != SHT_SYMTAB && table.sh_type != SHT_DYNSYM) continue;
    if (table.sh_entsize != sizeof(Elf64_Sym) || table.sh_link >= sections.size()) continue;
    const Elf64_Shdr& names = sections[table.sh_link];
    if (names.sh_type != SHT_STRTAB || names.sh_size > file_size) continue;
    strings.resize(names.sh_size);
    if (!read_at(fd, file_size, names.sh_offset, names.sh_size, strings.data())) continue;
    const std::uint64_t count = table.sh_size / sizeof(Elf64_Sym);
    for (std::uint64_t first = 0; first < count; first += kSymbolsPerRead) {
      const std::uint64_t n = std::min<std::uint64_t>(kSymbolsPerRead, count - first);
      symbols.resize(n);
      if (!read_at(fd, file_size, table.sh_offset + first * sizeof(Elf64_Sym), n * sizeof(Elf64_Sym), symbols.data()))
        break;
      for (const Elf64_Sym& s : symbols) {
        if (!is_function(s) || s.st_name == 0 || s.st_name >= strings.size()) continue;
        const char* name = strings.data() + s.st_name;
        const std::size_t length = strnlen(name, strings.size() - s.st_name);
        if (length == strings.size() - s.st_name || names_.size() + length + 1 > UINT32_MAX) continue;  // unterminated
        if (s.st_value > UINT64_MAX - s.st_size) continue;
        functions_.push_back({s.st_value, s.st_value + s.st_size, static_cast<std::uint32_t>(names_.size())});
        names_.append(name, length);
        names_.push_back('\0');
      }
    }
  }
}

std::string_view ElfSymbols::function_at(std::uint64_t file_address) const {
  auto after = std::upper_bound(functions_.begin(), functions_.end(), file_address,
                                [](std::uint64_t a, const Function& f) { return a < f.start; });
  // Functions rarely nest (a local label sized over its neighbours); look a few back for one
  // that holds the address rather than settling for the nearest start.
  for (int back = 0; back < 8 && after != functions_.begin(); ++back) {
    --after;
    if (file_address < after->end) return std::string_view(names_.data() + after->name);
  }
  return {};
}

std::string demangle(const char* name) {
  if (name == nullptr) return {};
  int status = 0;
  char* demangled = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && demangled != nullptr ? demangled : name;
  std::free(demangled);
  return out;
}

namespace {

// Each file's symbols, read once for the life of the process (addresses keep their names).
const ElfSymbols& symbols_of(const std::string& path) {
  static std::mutex mutex;
  static auto* files = new std::unordered_map<std::string, std::unique_ptr<const ElfSymbols>>();
  std::lock_guard lock(mutex);
  auto& slot = (*files)[path];
  if (!slot) slot = std::make_unique<const ElfSymbols>(path);
  return *slot;
}

}  // namespace

std::string function_name_in(const std::string& path, std::uintptr_t bias, const void* address, const char* fallback) {
  const auto file_address = reinterpret_cast<std::uintptr_t>(address) - bias;
  const std::string_view name = symbols_of(path).function_at(file_address);
  if (!name.empty()) return demangle(name.data());  // names are NUL-terminated in the table
  return demangle(fallback);
}

std::string function_name_at(const void* address) {
  Dl_info info{};
  link_map* map = nullptr;
  if (dladdr1(address, &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) == 0) return {};
  if (map == nullptr) return demangle(info.dli_sname);
  // l_addr is the load bias (dli_fbase is where the first mapping starts, which differs for
  // an executable not built as PIE); the main program's link map has no name.
  const std::string path = map->l_name != nullptr && map->l_name[0] != '\0' ? map->l_name : "/proc/self/exe";
  return function_name_in(path, map->l_addr, address, info.dli_sname);
}

}  // namespace cudascope::util
