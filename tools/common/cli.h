// The shared outer shell of the command-line tools: any error ends the program with one line
// "error: <message>" on stderr and exit status 1, never an uncaught exception or a crash.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

namespace mcdl::tools {

// Runs `run` with the attention algorithm $MCDL_ATTENTION names (fused, unfused, flash, cudnn, wgmma),
// the bf16 MLP's GELU $MCDL_BF16_GELU names (erf, tanh, cudnn) and the CUDA graphs $MCDL_CUDA_GRAPHS
// names (off, frozen) when they are set (engine/settings.h).
int run_tool(int argc, char** argv, int (*run)(int argc, char** argv));

// Ctrl-C and SIGTERM then ask a training run to stop after its current step (mcdl/run/stop_request.h)
// and say so on stderr; a second one ends the program at once, as without this.
void stop_runs_on_interrupt();
// The exit status of a run stopped that way (128 + SIGINT, as a shell reports Ctrl-C).
constexpr int interrupted_status = 130;

// A bad command line: the tools print "error: <message>" and the usage hint, and exit with 2.
struct UsageError {
  std::string message;
};

// The start of a tool with its own argument parser: --help or -h anywhere prints `usage` (exit
// 0); a UsageError from parse(argc, argv) prints it with the help hint (exit 2). Returns the
// exit status to stop with, or nothing with `args` filled.
template <class Args, class Parse>
std::optional<int> parse_tool_arguments(int argc, char** argv, const char* tool, const char* usage, Parse parse,
                                        Args& args) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::fputs(usage, stdout);
      return 0;
    }
  try {
    args = parse(argc, argv);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "error: %s\nrun '%s --help' for usage\n", e.message.c_str(), tool);
    return 2;
  }
  return std::nullopt;
}

// The value after the option argv[i], advancing i past it, or a UsageError naming the option.
std::string option_value(int argc, char** argv, int& i);

// The value of `option` as a positive integer, or a UsageError naming it.
int64_t positive_integer(const std::string& text, const std::string& option);

}  // namespace mcdl::tools
