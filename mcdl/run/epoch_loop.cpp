#include "mcdl/run/epoch_loop.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "engine/autograd.h"
#include "engine/error.h"
#include "engine/ops.h"
#include "engine/optim/schedule.h"
#include "engine/profile.h"
#include "mcdl/run/stop_request.h"

namespace mcdl {

void append_eval_seconds(MetricsRow& row, double eval_seconds, const EvalPhases& phases) {
  row.push_back({"eval_seconds", eval_seconds});
  row.push_back({"eval_features_seconds", phases.features_seconds});
  row.push_back({"eval_cluster_seconds", phases.cluster_seconds});
  // Its phases were timed within it: max keeps rounding from going below zero.
  row.push_back(
      {"eval_report_seconds", std::max(0.0, eval_seconds - phases.features_seconds - phases.cluster_seconds)});
}

std::string loss_summary(const MetricsRow& row, const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%s%s %.4f", out.empty() ? "" : " ", name.c_str(), metric_value(row, name));
    out += buf;
  }
  return out;
}

EpochLog::EpochLog(const TrainConfig& config, int64_t epoch, int64_t num_batches, std::vector<std::string> names,
                   Check check)
    : EpochLog("epoch " + std::to_string(epoch + 1) + "/" + std::to_string(config.epochs), num_batches,
               config.batch_size, config.max_iters, config.progress, std::move(names), std::move(check)) {}

EpochLog::EpochLog(std::string label, int64_t num_batches, int64_t batch_size, int64_t max_iters, bool progress,
                   std::vector<std::string> names, Check check)
    : names_(std::move(names)),
      check_(std::move(check)),
      sums_(names_.size(), 0.0),
      num_batches_(num_batches),
      batch_size_(batch_size),
      max_iters_(max_iters),
      bar_(std::move(label), num_batches, progress) {}

bool EpochLog::record(const std::vector<Tensor>& terms, int64_t batch, int64_t& iterations) {
  check(terms.size() == names_.size(), "EpochLog::record: ", terms.size(), " terms for ", names_.size(), " names");
  for (const Tensor& t : terms) kept_.push_back(t.detach());
  kept_batches_.push_back(batch);
  ++done_;
  ++iterations;
  // On the CPU reading costs nothing: every step, so the bar is live and a NaN stops at once.
  if (terms.front().device().is_cpu() || static_cast<int64_t>(kept_batches_.size()) >= steps_per_read) read_kept();
  char status[64] = "";  // the running mean of the steps read so far
  const int64_t read = done_ - static_cast<int64_t>(kept_batches_.size());
  if (read > 0) std::snprintf(status, sizeof status, "loss %.4f", sums_[0] / static_cast<double>(read));
  bar_.update(done_, done_ * batch_size_, status);
  return (max_iters_ <= 0 || iterations < max_iters_) && !stop_requested();
}

void EpochLog::read_kept() {
  if (kept_.empty()) return;
  const std::vector<double> values = profiled(kept_[0].device(), "read_losses", [&] { return read_scalars(kept_); });
  const size_t n = names_.size();
  for (size_t step = 0; step < kept_batches_.size(); ++step) {
    const std::vector<double> row(values.begin() + static_cast<std::ptrdiff_t>(step * n),
                                  values.begin() + static_cast<std::ptrdiff_t>((step + 1) * n));
    if (check_) check_(row, kept_batches_[step]);
    for (size_t t = 0; t < n; ++t) sums_[t] += row[t];
  }
  kept_.clear();
  kept_batches_.clear();
}

bool EpochLog::finish(MetricsRow& row) {
  read_kept();
  bar_.finish();
  for (size_t t = 0; t < names_.size(); ++t)
    row.push_back({names_[t], done_ > 0 ? sums_[t] / static_cast<double>(done_) : std::nan("")});
  row.push_back({"iterations", static_cast<double>(done_)});
  return done_ == num_batches_;
}

EpochLoop training_epoch_loop(const TrainConfig& config, Device device, const RunDirectory& run) {
  const CosineAnnealing schedule(config.lr, config.epochs, config.lr * config.lr_min_factor);
  return {config.epochs, [schedule](int64_t epoch) { return schedule.lr_at(epoch); }, device, &run, device.is_cpu()};
}

RunSummary run_epochs(const EpochLoop& loop, Optimizer& optimizer, RunProgress& progress, const EpochSteps& steps) {
  const auto start = Clock::now();
  bool interrupted = false;
  for (int64_t epoch = progress.start_epoch; epoch < loop.epochs && !progress.stop; ++epoch) {
    const auto epoch_start = Clock::now();
    const double lr = loop.lr_at(epoch);
    optimizer.set_lr(lr);
    MetricsRow row{{"epoch", static_cast<double>(epoch)}, {"lr", lr}};
    const bool complete = steps.train(epoch, row);
    const double train_seconds = seconds_since(epoch_start);  // its last read of the loss terms waited for the device
    // Ctrl-C or SIGTERM. In the middle of an epoch: no evaluation, no metrics row. During its last
    // step: the epoch ends as any other (evaluated, checkpointed), not as the run's last.
    const bool signalled = stop_requested();
    if (!complete && signalled) {
      const std::string last = !steps.checkpoint ? "this run writes no checkpoints"
                               : progress.epochs_completed > 0
                                   ? "the last checkpoint is after epoch " + std::to_string(progress.epochs_completed)
                                   : "no checkpoint was written yet";
      std::fprintf(stderr, "interrupted after %lld iterations, in epoch %lld (not checkpointed; %s)\n",
                   static_cast<long long>(progress.iterations), static_cast<long long>(epoch + 1), last.c_str());
      progress.stop = interrupted = true;
      break;
    }
    const auto finish_start = Clock::now();
    const bool last = epoch + 1 == loop.epochs || (progress.stop && !signalled);  // the end, or --max-iters
    const EvalPhases phases = steps.finish(epoch, row, last);
    // Where the epoch went: its steps, then the end-of-epoch work (evaluation, reports); the
    // checkpoint's copy to the host follows the row (its write runs in the background).
    row.push_back({"train_seconds", train_seconds});
    append_eval_seconds(row, seconds_since(finish_start), phases);
    row.push_back({"seconds", seconds_since(epoch_start)});
    if (loop.metrics) loop.metrics->append_metrics(row);
    if (!complete) {
      if (steps.checkpoint)
        std::fprintf(stderr, "stopped after %lld iterations, in the middle of epoch %lld (not checkpointed)\n",
                     static_cast<long long>(progress.iterations), static_cast<long long>(epoch + 1));
      continue;
    }
    if (steps.checkpoint) {
      const ProfileRange range(loop.device, "checkpoint");
      steps.checkpoint(epoch + 1);
    }
    progress.epochs_completed = epoch + 1;
    if (epoch == progress.start_epoch && loop.cpu_epoch_note)
      std::fprintf(stderr, "running on the CPU: %.1f s per epoch\n", seconds_since(epoch_start));
    if (signalled && !last) {
      std::fprintf(stderr, "interrupted after %lld iterations, at the end of epoch %lld (%s)\n",
                   static_cast<long long>(progress.iterations), static_cast<long long>(epoch + 1),
                   steps.checkpoint ? "checkpointed" : "this run writes no checkpoints");
      progress.stop = interrupted = true;
      break;
    }
  }
  RunSummary summary;
  summary.interrupted = interrupted;
  summary.iterations = progress.iterations;
  summary.epochs_completed = progress.epochs_completed;
  summary.seconds = seconds_since(start);
  return summary;
}

void backward_and_step(const Tensor& loss, Optimizer& optimizer) {
  Shards off;
  backward_and_step(loss, optimizer, off);
}

void backward_and_step(const Tensor& loss, Optimizer& optimizer, Shards& shards) {
  {
    const ProfileRange range(loss.device(), "backward");
    optimizer.zero_grad();
    std::vector<Tensor> parameters;
    for (const ParamGroup& group : optimizer.groups())
      for (const NamedParameter& p : group.params) parameters.push_back(p.tensor);
    shards.backward(loss, parameters);
  }
  const ProfileRange range(loss.device(), "optimizer_step");
  optimizer.step();
}

std::vector<double> read_scalars(const std::vector<Tensor>& scalars) {
  if (scalars.empty()) return {};
  NoGradGuard no_grad;
  std::vector<Tensor> rows;
  for (const Tensor& t : scalars) {
    check(t.numel() == 1 && t.dtype() == scalars[0].dtype() && t.device() == scalars[0].device(),
          "read_scalars: expected one-element tensors of one dtype on one device, got ", t);
    rows.push_back(reshape(t.detach(), {1}));
  }
  const Tensor host = concat(rows, 0).to(Device::cpu());
  std::vector<double> values;
  for (int64_t i = 0; i < host.numel(); ++i) values.push_back(read_as_double(host.raw_data(), host.dtype(), i));
  return values;
}

EpochLog::Check finite_loss_check(std::vector<std::string> names, std::string total_name, int64_t epoch,
                                  const RunDirectory& run, int64_t epochs_checkpointed, std::function<void()> settle) {
  return [names = std::move(names), total_name = std::move(total_name), epoch, &run, epochs_checkpointed,
          settle = std::move(settle)](const std::vector<double>& values, int64_t iteration) {
    for (size_t t = 0; t < values.size(); ++t) {
      if (std::isfinite(values[t])) continue;
      if (settle) settle();
      fail("loss term '", t == 0 ? total_name : names[t], "' became ", values[t], " at epoch ", epoch, ", iteration ",
           iteration, "; training stopped. ",
           epochs_checkpointed > 0 ? "The last good checkpoint is " + run.last_checkpoint() + " (after epoch " +
                                         std::to_string(epochs_checkpointed) + "); resume with --resume " +
                                         run.path() + " after lowering --lr"
                                   : std::string("No checkpoint was written yet; check the weights and lower --lr"));
    }
  };
}

}  // namespace mcdl
