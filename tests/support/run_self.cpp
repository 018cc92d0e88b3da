#include "test_support.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <climits>
#include <cstring>

extern char** environ;

namespace cudascope::testing {

ChildResult run_self(const std::vector<std::string>& args, const std::vector<std::string>& extra_env) {
  char self[PATH_MAX] = {};
  const ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
  if (length <= 0) return {};
  std::vector<std::string> argv_storage{self};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& arg : argv_storage) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_storage = extra_env;
  for (char** entry = environ; *entry != nullptr; ++entry) env_storage.emplace_back(*entry);
  std::vector<char*> envp;
  for (auto& entry : env_storage) envp.push_back(entry.data());
  envp.push_back(nullptr);

  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return {};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, self, &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  ChildResult result;
  if (spawned != 0) {
    close(pipe_fds[0]);
    return result;
  }
  std::array<char, 4096> buffer;
  for (ssize_t n; (n = read(pipe_fds[0], buffer.data(), buffer.size())) > 0;) result.output.append(buffer.data(), n);
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace cudascope::testing
