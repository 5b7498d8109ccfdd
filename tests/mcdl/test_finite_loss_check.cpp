// The check of a training step's loss terms (mcdl/run/epoch_loop.h): a term that is not finite
// stops the run with its name, the epoch, the iteration and the last checkpoint, which is settled
// on disk first (a checkpoint whose rows still travel between steps would otherwise be given up).
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "mcdl/run/epoch_loop.h"
#include "mcdl/run/run_directory.h"

using namespace mcdl;
namespace fs = std::filesystem;

TEST_CASE("finite loss check: a term that is not finite settles the checkpoint, then names the term and what to do") {
  const fs::path dir = fs::temp_directory_path() / ("mcdl-finite-loss-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const RunDirectory run(dir.string());
  int settled = 0;
  const EpochLog::Check check =
      finite_loss_check({"loss", "l_sup"}, "total", 2, run, 1, [&settled] { ++settled; });
  CHECK_NOTHROW(check({1.5, 0.25}, 4));
  CHECK(settled == 0);
  try {
    check({1.5, std::nan("")}, 7);
    FAIL("no error for a NaN term");
  } catch (const std::exception& e) {
    const std::string message = e.what();
    CHECK(message.find("loss term 'l_sup' became nan at epoch 2, iteration 7") != std::string::npos);
    CHECK(message.find("The last good checkpoint is " + run.last_checkpoint() + " (after epoch 1)") !=
          std::string::npos);
  }
  CHECK(settled == 1);
  // Without a checkpoint yet, and without anything to settle.
  const EpochLog::Check first = finite_loss_check({"loss"}, "total", 0, run, 0);
  CHECK_THROWS_WITH(first({INFINITY}, 0), doctest::Contains("No checkpoint was written yet"));
  fs::remove_all(dir);
}
