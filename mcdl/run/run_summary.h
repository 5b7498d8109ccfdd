// What a finished (or stopped) run reports to its caller: the last accuracies, how far it got
// and whether a stop request ended it.
#pragma once
#include <cmath>
#include <cstdint>

#include "mcdl/evaluation/cluster_accuracy.h"

namespace mcdl {

struct RunSummary {
  // v2 All / Old / New of the last evaluation on the unlabelled training images (transductive)
  // and on the test split (inductive); NaN where not scored.
  ClusterAccuracy accuracy{std::nan(""), std::nan(""), std::nan("")};
  ClusterAccuracy test_accuracy{std::nan(""), std::nan(""), std::nan("")};
  int64_t epochs_completed = 0;
  int64_t iterations = 0;
  double seconds = 0.0;
  bool interrupted = false;  // stopped by Ctrl-C or SIGTERM (mcdl/run/stop_request.h) before the end
};

}  // namespace mcdl
