// Crash safety end to end: ./mcdl_train killed with SIGKILL, or stopped with Ctrl-C, at
// pseudo-random moments (inside a step, an evaluation or a checkpoint write, wherever the moment
// falls), restarted with --resume (or afresh while no checkpoint exists yet) until it finishes,
// must end with the uninterrupted run's checkpoint, metrics and predictions, bit for bit, on the
// CPU.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "engine/random.h"
#include "mcdl/harness/run.h"
#include "tests/run_checks.h"
#include "tests/synthetic_folder_dataset.h"
#include "tests/tool_binary.h"

extern char** environ;

using namespace mcdl;
namespace fs = std::filesystem;

namespace {

// Starts ./mcdl_train with `args`, its output into `log`; returns the child's pid.
pid_t start_mcdl_train(const std::vector<std::string>& args, const fs::path& log) {
  std::vector<std::string> all = {testing::tool_binary("mcdl_train")};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = -1;
  const int error = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE_MESSAGE(error == 0, "cannot start ./mcdl_train: ", std::strerror(error));
  return pid;
}

// The arguments that continue the run in `out`: --resume once a checkpoint exists, else a fresh
// start from the saved settings.
std::vector<std::string> continue_args(const fs::path& out, const fs::path& config) {
  if (fs::exists(out / "checkpoints" / "last.safetensors")) return {"--resume", out.string()};
  return {"--config", config.string()};
}

}  // namespace

TEST_CASE("crash safety: SIGKILL at random moments, then --resume, ends where an uninterrupted run ends") {
  REQUIRE_MESSAGE(fs::exists(testing::tool_binary("mcdl_train")), "build ./mcdl_train first (make test does)");
  const fs::path base = fs::temp_directory_path() / ("mcdl-kill-" + std::to_string(::getpid()));
  fs::remove_all(base);
  fs::create_directories(base);
  TrainConfig c = testing::squares_run_config(testing::coloured_squares_dataset("kill"), base / "whole");
  c.method = parse_method("simgcd+mcdl");
  c.epochs = 4;
  c.mu = 2;
  c.mcdl_start = 1;
  c.warmup_teacher_epochs = 1;
  c.workers = 0;
  // The uninterrupted reference: a child process as the killed runs are (same binary, same
  // start-up), timed from its start to its exit.
  const auto write_config = [&](const fs::path& path) { std::ofstream(path) << config_to_json(c); };
  write_config(base / "whole.json");
  const auto started = std::chrono::steady_clock::now();
  int reference_status = 0;
  waitpid(start_mcdl_train({"--config", (base / "whole.json").string()}, base / "whole.log"), &reference_status, 0);
  double run_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  INFO("reference log: ", testing::read_text(base / "whole.log"));
  REQUIRE((WIFEXITED(reference_status) && WEXITSTATUS(reference_status) == 0));

  c.out = (base / "killed").string();
  const fs::path config = base / "killed.json", log = base / "killed.log";
  write_config(config);
  // Kill moments drawn from a fixed stream over 10-90% of the reference's length. The machine's
  // load can change between runs (other jobs, sanitizers): a run that finishes before any kill
  // has landed is thrown away and the series starts again on a time scale half as long, so the
  // test always kills at least once, wherever the moment falls.
  // Every other stop is a Ctrl-C (SIGINT) instead: the run ends its step, lets the checkpoint in
  // flight finish and exits with 130 (or dies at once if the signal came before the handler).
  RandomStream stream(11, stream_id("kill-resume"));
  int kills = 0, interrupts = 0, finished = -1;
  for (int attempt = 0, restarts = 0; attempt < 12 && finished != 0; ++attempt) {
    const pid_t pid = start_mcdl_train(continue_args(c.out, config), log);
    int status = 0;
    if (attempt < 6) {
      const double fraction = 0.1 + 0.8 * static_cast<double>(stream.randint(0, 1000)) / 1000.0;
      std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int64_t>(fraction * run_ms)));
      if (waitpid(pid, &status, WNOHANG) == 0) {
        const bool interrupt = attempt % 2 == 1;
        ::kill(pid, interrupt ? SIGINT : SIGKILL);
        waitpid(pid, &status, 0);
        if (!interrupt || !WIFEXITED(status)) {
          ++kills;
          continue;
        }
        if (WEXITSTATUS(status) == 130) {
          ++interrupts;
          const std::string text = testing::read_text(log);
          CHECK(text.find("interrupted after") != std::string::npos);
          CHECK(text.find("stopped; continue with ./mcdl_train --resume " + c.out) != std::string::npos);
          continue;
        }
      }
    } else {
      waitpid(pid, &status, 0);
    }
    finished = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (finished == 0 && (kills == 0 || interrupts == 0) && restarts < 8) {
      fs::remove_all(c.out);
      run_ms *= 0.5;
      ++restarts;
      attempt = -1;
      finished = -1;
    }
  }
  INFO("log: ", testing::read_text(log));
  REQUIRE(finished == 0);
  CHECK(kills >= 1);
  CHECK(interrupts >= 1);

  testing::check_same_checkpoints(base / "whole/checkpoints/last.safetensors",
                                  base / "killed/checkpoints/last.safetensors");
  CHECK(testing::metrics_without_timing(base / "whole/metrics.csv") ==
        testing::metrics_without_timing(base / "killed/metrics.csv"));
  CHECK(testing::read_text(base / "whole/predictions.csv") == testing::read_text(base / "killed/predictions.csv"));
  fs::remove_all(base);
}
