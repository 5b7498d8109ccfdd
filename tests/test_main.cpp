// The test runner: doctest, after the binary has set up (or ruled out) its CUDA device.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "engine/device.h"
#include "engine/ops/linalg.h"
#include "tests/test_device.h"

namespace {
// Every test case starts from the process's default settings: a run on the (emulated) CUDA device
// selects bf16 products for the process, which a later CPU test must not inherit.
struct ResetProcessSettings : doctest::IReporter {
  explicit ResetProcessSettings(const doctest::ContextOptions&) {}
  void test_case_start(const doctest::TestCaseData&) override { mcdl::set_matmul_precision(mcdl::MatmulPrecision::fp32); }
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};
}  // namespace
DOCTEST_REGISTER_LISTENER("reset_process_settings", 0, ResetProcessSettings);

int main(int argc, char** argv) {
  if (!mcdl::testing::prepare_test_device()) return 0;
  doctest::Context context(argc, argv);
  const int status = context.run();
  // Before main returns, so that compute-sanitizer's leak check (make test-gpu-sanitize) finds
  // every handle, stream and pool block released.
  mcdl::release_device_resources();
  return status;
}
