#include "tools/common/cli.h"

#include <signal.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>

#include "engine/collective.h"
#include "engine/device.h"
#include "engine/settings.h"
#include "mcdl/run/stop_request.h"

namespace mcdl::tools {
namespace {

extern "C" void on_interrupt(int) {
  request_stop();
  static const char message[] = "\nstopping after the current step; once more to quit at once\n";
  [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, message, sizeof message - 1);
}

// The engine settings with `field` as the environment variable names it (`parse` reads its text),
// unchanged when it is unset: the run's choice of the frozen blocks' bf16 attention
// ($MCDL_ATTENTION), MLP GELU ($MCDL_BF16_GELU) and CUDA graphs ($MCDL_CUDA_GRAPHS) on a GPU
// (engine/settings.h), for comparing them on one run.
template <class Value>
EngineSettings setting_from_environment(EngineSettings settings, const char* variable, Value EngineSettings::*field,
                                        Value (*parse)(const std::string&)) {
  const char* text = std::getenv(variable);
  if (!text || !*text) return settings;
  try {
    settings.*field = parse(text);
    return settings;
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string(variable) + ": " + e.what() + "; unset it for the default");
  }
}

}  // namespace

void stop_runs_on_interrupt() {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  action.sa_flags = SA_RESETHAND;  // the second signal takes the default action: the end
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
}

int run_tool(int argc, char** argv, int (*run)(int argc, char** argv)) {
  // Under a file size limit (ulimit -f) a write past it then fails with EFBIG, which the checked
  // writes report (io/durable_file.h), instead of SIGXFSZ ending the process without a word.
  std::signal(SIGXFSZ, SIG_IGN);
  int status = 1;
  try {
    EngineSettings settings = engine_settings();
    settings = setting_from_environment(settings, "MCDL_ATTENTION", &EngineSettings::attention,
                                        parse_attention_algorithm);
    settings = setting_from_environment(settings, "MCDL_BF16_GELU", &EngineSettings::bf16_gelu, parse_bf16_gelu);
    settings = setting_from_environment(settings, "MCDL_CUDA_GRAPHS", &EngineSettings::cuda_graphs, parse_cuda_graphs);
    const ScopedEngineSettings from_environment(settings);
    status = run(argc, argv);
  } catch (const std::exception& e) {
    if (Collective* world = multi_process_world()) {
      // The other ranks would wait for this one forever: the message, then every rank ends.
      std::fprintf(stderr, "error on rank %d of %d: %s\n", world->rank(), world->size(), e.what());
      std::fflush(stderr);
      world->abort(1);
    }
    std::fprintf(stderr, "error: %s\n", e.what());
  }
  // Every tensor of run() is gone by now; the GPU's handles, stream and pool go before main
  // returns, while the CUDA runtime is still up (see cuda::release_device).
  release_device_resources();
  return status;
}

std::string option_value(int argc, char** argv, int& i) {
  if (i + 1 >= argc) throw UsageError{std::string(argv[i]) + " needs a value"};
  return argv[++i];
}

int64_t positive_integer(const std::string& text, const std::string& option) {
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || value <= 0)
    throw UsageError{option + " needs a positive integer, got '" + text + "'"};
  return value;
}

}  // namespace mcdl::tools
