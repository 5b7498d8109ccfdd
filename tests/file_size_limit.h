// A full disk, simulated without mounting anything (the tests run as root, for whom permission
// bits do not stop a write): a forked child under RLIMIT_FSIZE, with SIGXFSZ ignored, gets EFBIG
// from any write that would grow a file past the limit, after storing what fits, as a write to a
// full disk stores what fits and then fails with ENOSPC. Only the child is limited.
#pragma once
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tests/tool_binary.h"

namespace mcdl::testing {

struct ChildOutcome {
  int status;          // the exit status (a signal fails the REQUIRE)
  std::string err;  // everything the child wrote to stderr
};

// Runs `body` in a child whose files may not grow past `limit` bytes (RLIM_INFINITY: no limit);
// its stdout goes to /dev/null, its stderr through a pipe (a pipe is not subject to the limit);
// its exit status is what `body` returns.
inline ChildOutcome run_with_file_size_limit(rlim_t limit, const std::function<int()>& body) {
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const rlimit rl{limit, limit};
    ::signal(SIGXFSZ, SIG_IGN);
    const int null = ::open("/dev/null", O_WRONLY);
    if (::setrlimit(RLIMIT_FSIZE, &rl) != 0 || null < 0 || ::dup2(null, STDOUT_FILENO) < 0 ||
        ::dup2(pipe_fds[1], STDERR_FILENO) < 0)
      ::_exit(126);
    ::close(pipe_fds[0]);
    ::_exit(body());
  }
  ::close(pipe_fds[1]);
  std::string err;
  char buffer[4096];
  for (ssize_t got; (got = ::read(pipe_fds[0], buffer, sizeof buffer)) != 0;) {
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) break;
    err.append(buffer, static_cast<size_t>(got));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE_MESSAGE(WIFEXITED(status), "the child died of signal ", WTERMSIG(status), "; stderr: ", err);
  return {WEXITSTATUS(status), err};
}

// Runs ./mcdl_train with `args` under that limit (exec right after fork: nothing of the test
// process's threads is used in the child). SIGXFSZ is back at its default, which ends the
// process: the tool must ignore it itself to report the failed write.
inline ChildOutcome run_mcdl_train(rlim_t limit, std::vector<std::string> args) {
  args.insert(args.begin(), tool_binary("mcdl_train"));
  return run_with_file_size_limit(limit, [&] {
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::signal(SIGXFSZ, SIG_DFL);
    ::execv(argv[0], argv.data());
    return 127;
  });
}

}  // namespace mcdl::testing
