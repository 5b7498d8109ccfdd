// Where a run stands: what its checkpoints record (mcdl/run/run_checkpoint.h) and what the epoch
// loop advances (mcdl/run/epoch_loop.h).
#pragma once
#include <cstdint>

namespace mcdl {

struct RunProgress {
  int64_t start_epoch = 0, epochs_completed = 0, iterations = 0;
  bool stop = false;  // the --max-iters budget is spent, or a resumed run has nothing left
};

}  // namespace mcdl
