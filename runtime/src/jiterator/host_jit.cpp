#include "host_jit.h"

#include "jit_source.h"
#include "kernel_cache.h"

#include "../check.h"
#include "../tool_loader.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

extern char** environ;

namespace cudascope::cuda::detail {
namespace {

constexpr std::size_t kMaxLogBytes = 16 << 10;

std::vector<std::string> split_words(const std::string& text) {
  std::istringstream words(text);
  std::vector<std::string> out;
  for (std::string word; words >> word;) out.push_back(word);
  return out;
}

std::string find_on_path(const std::string& program, std::string& tried) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty()) continue;
    const std::string candidate = dir + "/" + program;
    tried += (tried.empty() ? "" : ", ") + candidate;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

// A private directory for one compile, removed with its files when the compile is done (a
// loaded shared object stays mapped after its file is gone).
class ScratchDirectory {
 public:
  ScratchDirectory() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/cudascope-jit-XXXXXX";
    CUDASCOPE_CHECK(mkdtemp(pattern.data()) != nullptr, error_code::kUnknown, "mkdtemp",
                    "cannot make a directory for the jiterator's compiler in " + pattern + ": " + std::strerror(errno));
    path_ = pattern;
  }
  ~ScratchDirectory() {
    for (const char* name : {"kernel.cpp", "kernel.so", "compiler.log"}) unlink(file(name).c_str());
    rmdir(path_.c_str());
  }
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;
  std::string file(const char* name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::string read_log(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (log.size() > kMaxLogBytes) log = log.substr(0, kMaxLogBytes) + "\n[log cut at 16 KiB]";
  return log;
}

// Runs `argv` with stdout and stderr into `log_path`; returns its exit status (-1: not run).
int run_compiler(const std::vector<std::string>& argv, const std::string& log_path) {
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string joined(const std::vector<std::string>& words) {
  std::string text;
  for (const std::string& word : words) text += (text.empty() ? "" : " ") + word;
  return text;
}

HostJitKernel compile(const JitKernel& kernel) {
  std::string tried;
  std::vector<std::string> command = host_compiler_command(tried);
  CUDASCOPE_CHECK(!command.empty(), error_code::kNotSupported, "jiterator (sim)",
                  "no host C++ compiler for the jiterator's sim backend (set CXX; tried " + tried + ")");
  HostJitKernel compiled;
  compiled.name = jit_kernel_name(kernel, 1);
  const ScratchDirectory scratch;
  std::ofstream(scratch.file("kernel.cpp")) << host_jit_source(kernel, compiled.name);
  for (const char* flag : {"-std=c++17", "-O2", "-fPIC", "-shared", "-o"}) command.emplace_back(flag);
  command.push_back(scratch.file("kernel.so"));
  command.push_back(scratch.file("kernel.cpp"));
  const int status = run_compiler(command, scratch.file("compiler.log"));
  CUDASCOPE_CHECK(status == 0, error_code::kInvalidValue, "jiterator (sim)",
                  "'" + joined(command) + "' could not compile the jiterator function '" + kernel.program->name +
                      "' (exit status " + std::to_string(status) + "):\n" + read_log(scratch.file("compiler.log")));
  std::string error;
  void* library = tools::open_library(scratch.file("kernel.so"), false, error);
  CUDASCOPE_CHECK(library != nullptr, error_code::kUnknown, "dlopen", "the jiterator's compiled code: " + error);
  compiled.function = reinterpret_cast<HostJitKernel::Function>(tools::find_symbol(library, {compiled.name.c_str()}));
  CUDASCOPE_CHECK(compiled.function != nullptr, error_code::kUnknown, "dlsym", "no " + compiled.name + " in the jiterator's compiled code");
  return compiled;
}

}  // namespace

std::vector<std::string> host_compiler_command(std::string& tried) {
  if (const char* cxx = std::getenv("CXX"); cxx != nullptr && *cxx != '\0') {
    std::vector<std::string> words = split_words(cxx);
    tried = std::string("CXX=") + cxx;
    const bool found = !words.empty() && (words[0].find('/') != std::string::npos ? access(words[0].c_str(), X_OK) == 0
                                                                                 : !find_on_path(words[0], tried).empty());
    return found ? words : std::vector<std::string>{};
  }
  for (const char* program : {"c++", "g++"}) {
    const std::string path = find_on_path(program, tried);
    if (!path.empty()) return {path};
  }
  return {};
}

const HostJitKernel& host_jit_kernel(const JitKernel& kernel) {
  // Never destroyed: queued work and profiler records refer to its kernels until the end.
  static auto* const cache = new KernelCache<HostJitKernel>();
  return cache->get(jit_cache_key(kernel, 1, "host"), [&] { return compile(kernel); });
}

}  // namespace cudascope::cuda::detail
