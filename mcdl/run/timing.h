// Wall-clock timing of a run's parts: the clock, and where the end-of-epoch work (the metrics
// column eval_seconds) goes.
#pragma once
#include <chrono>

namespace mcdl {

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The phases of a method's end-of-epoch scoring, in seconds (0 where it did not score). Each
// phase ends with its results read to the host, which waits for the device's queued work, so on
// a GPU a phase's time holds the device work it queued. The rest of eval_seconds (bucket reports
// with their matching, the validation columns, predictions.csv and features.npy, the summary
// line) is the metrics' eval_report_seconds.
struct EvalPhases {
  double features_seconds = 0;  // the model's forward over the evaluated images (EvaluationSet)
  double cluster_seconds = 0;   // k-means, the Hungarian matching and the accuracies
};

// Runs work() and adds its wall time to `seconds`; returns what work() returns.
template <class Work>
decltype(auto) timed(double& seconds, Work&& work) {
  struct AddElapsed {
    double& seconds;
    Clock::time_point start = Clock::now();
    ~AddElapsed() { seconds += seconds_since(start); }
  } add{seconds};
  return work();
}

}  // namespace mcdl
