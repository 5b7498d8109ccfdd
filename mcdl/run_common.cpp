#include "mcdl/run_common.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <thread>

#include "data/gcd_split.h"
#include "engine/error.h"
#include "engine/optim/schedule.h"
#include "layers/backbone_file.h"

namespace mcdl {

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::string percent(double fraction) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.1f", 100.0 * fraction);
  return buf;
}

BackboneSource backbone_source(const TrainConfig& config) {
  BackboneSource source;
  if (!config.weights.empty()) {
    BackboneFile file = load_backbone_file(config.weights);
    source.config = file.config.backbone;
    source.tensors = std::move(file.tensors);
    return source;
  }
  check(!config.model.empty(), "no backbone weights: pass --weights FILE. Download DINO's ViT-B/16 from ",
        "https://dl.fbaipublicfiles.com/dino/dino_vitbase16_pretrain/dino_vitbase16_pretrain.pth and convert it ",
        "with ./mcdl_convert dino_vitbase16_pretrain.pth -o dino_vitb16.safetensors (see the README), or pass ",
        "--model SPEC for a randomly initialised backbone");
  source.config = parse_model_config(config.model).backbone;
  return source;
}

int64_t first_trained_block(const TrainConfig& config, int64_t depth) {
  const int64_t from = config.grad_from_block >= 0 ? config.grad_from_block : depth - 1;
  check(from < depth, "--grad-from-block ", from, " is past the last block (the backbone has ", depth, ")");
  return from;
}

void begin_run(const TrainConfig& config, const TrainingData& data, const RunDirectory& run, bool resume) {
  std::fprintf(stderr, "%s: %lld training images, %lld classes (%lld old): %zu labelled, %zu unlabelled\n",
               config.dataset.c_str(), static_cast<long long>(data.dataset.size()),
               static_cast<long long>(data.num_classes()), static_cast<long long>(data.num_old_classes()),
               data.labelled.size(), data.unlabelled.size());
  run.write_text("config.json", config_to_json(config));
  if (!resume) write_split_csv(run.file("split.csv"), data.dataset, data.split);
}

int64_t loader_workers(const TrainConfig& config, Device device) {
  if (config.workers >= 0) return config.workers;
  const int64_t cores = std::max<int64_t>(1, std::thread::hardware_concurrency());
  // On the CPU backend the model itself uses every core (a loader thread would only compete with
  // it: batches are prepared between steps); on a GPU the loader gets the cores.
  return device.is_cpu() ? 0 : std::max<int64_t>(1, cores - 1);
}

LoaderOptions train_loader_options(const TrainConfig& config, const TrainingData& data, Device device,
                                   std::vector<ViewKind> views) {
  LoaderOptions options;
  options.image_size = config.image_size;
  options.normalization = data.normalization;
  options.views = std::move(views);
  options.workers = loader_workers(config, device);
  options.prefetch = std::max<int64_t>(1, 2 * options.workers);
  options.seed = config.seed;
  options.device = device;
  return options;
}

EpochPlan plan_epoch(const TrainConfig& config, const TrainingData& data, int64_t epoch) {
  const GcdSampler sampler(static_cast<int64_t>(data.labelled.size()), static_cast<int64_t>(data.unlabelled.size()),
                           config.batch_size, config.seed);
  EpochPlan plan;
  plan.draws = sampler.draw_epoch(epoch);
  const int64_t b = config.batch_size;
  plan.batches.resize(static_cast<size_t>(sampler.batches_per_epoch()));
  for (int64_t i = 0; i < sampler.batches_per_epoch() * b; ++i) {
    const SampledItem& item = plan.draws[static_cast<size_t>(i)];
    plan.batches[static_cast<size_t>(i / b)].push_back(item.labelled ? data.labelled[static_cast<size_t>(item.index)]
                                                                     : data.unlabelled[static_cast<size_t>(item.index)]);
  }
  return plan;
}

BatchLabels batch_labels(const EpochPlan& plan, const TrainingData& data, int64_t batch) {
  const std::vector<int64_t>& images = plan.batches[static_cast<size_t>(batch)];
  const size_t b = images.size();
  BatchLabels out{std::vector<int64_t>(b, -1), std::vector<uint8_t>(b, 0), std::vector<int64_t>(b, -1)};
  for (size_t i = 0; i < b; ++i) {
    const SampledItem& item = plan.draws[static_cast<size_t>(batch) * b + i];
    if (item.labelled) {
      out.labels[i] = data.label(images[i]);
      out.labelled[i] = 1;
    } else {
      out.bank_index[i] = item.index;
    }
  }
  return out;
}

KnownLabels known_labels(const std::vector<int64_t>& truth, const std::vector<int64_t>& predictions,
                         const std::vector<bool>& is_old) {
  KnownLabels k;
  for (size_t i = 0; i < truth.size(); ++i)
    if (truth[i] >= 0) {
      k.truth.push_back(truth[i]);
      k.predictions.push_back(predictions[i]);
      k.is_old.push_back(is_old[i]);
    }
  return k;
}

ClusterAccuracy known_accuracy(const KnownLabels& k, bool balanced) {
  if (k.truth.empty()) return {std::nan(""), std::nan(""), std::nan("")};
  return balanced ? split_cluster_acc_v2b(k.truth, k.predictions, k.is_old)
                  : split_cluster_acc_v2(k.truth, k.predictions, k.is_old);
}

ClusterAccuracy append_accuracy(MetricsRow& row, const KnownLabels& known, bool balanced_too) {
  const ClusterAccuracy acc = known_accuracy(known, false);
  row.push_back({"all", acc.all});
  row.push_back({"old", acc.old_classes});
  row.push_back({"new", acc.new_classes});
  if (balanced_too) {
    const ClusterAccuracy bal = known_accuracy(known, true);
    row.push_back({"all_v2b", bal.all});
    row.push_back({"old_v2b", bal.old_classes});
    row.push_back({"new_v2b", bal.new_classes});
  }
  return acc;
}

std::string predictions_csv(const std::vector<int64_t>& ids, const std::vector<int64_t>& predictions,
                            const std::vector<int64_t>& truth, int64_t num_old_classes) {
  std::string csv = "id,prediction,label,old\n";
  for (size_t i = 0; i < predictions.size(); ++i)
    csv += std::to_string(ids[i]) + "," + std::to_string(predictions[i]) + "," + std::to_string(truth[i]) + "," +
           (truth[i] < 0 ? "unknown" : truth[i] < num_old_classes ? "old" : "new") + "\n";
  return csv;
}

std::string loss_summary(const MetricsRow& row) {
  std::string out;
  for (size_t i = 2; i < row.size() && row[i].first != "iterations"; ++i) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%s%s %.4f", i == 2 ? "" : " ", row[i].first.c_str(), row[i].second);
    out += buf;
  }
  return out;
}

std::map<std::string, Tensor> prefixed(const std::string& prefix, const std::map<std::string, Tensor>& tensors) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, t] : tensors) out[prefix + name] = t;
  return out;
}

std::map<std::string, Tensor> unprefixed(const std::string& prefix, const std::map<std::string, Tensor>& tensors) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, t] : tensors)
    if (name.compare(0, prefix.size(), prefix) == 0) out[name.substr(prefix.size())] = t;
  return out;
}

std::string checkpoint_entry(const SafetensorsFile& file, const std::string& path, const char* key) {
  auto it = file.metadata.find(key);
  check(it != file.metadata.end(), "checkpoint ", path, " has no '", key, "' entry (not written by mcdl_train?)");
  return it->second;
}

EpochLog::EpochLog(const TrainConfig& config, int64_t epoch, int64_t num_batches, std::vector<std::string> names)
    : names_(std::move(names)),
      sums_(names_.size(), 0.0),
      num_batches_(num_batches),
      batch_size_(config.batch_size),
      max_iters_(config.max_iters),
      bar_("epoch " + std::to_string(epoch + 1) + "/" + std::to_string(config.epochs), num_batches, config.progress) {}

bool EpochLog::record(const std::vector<double>& values, int64_t& iterations) {
  for (size_t t = 0; t < sums_.size() && t < values.size(); ++t) sums_[t] += values[t];
  ++done_;
  ++iterations;
  char status[64];
  std::snprintf(status, sizeof status, "loss %.4f", sums_[0] / static_cast<double>(done_));
  bar_.update(done_, done_ * batch_size_, status);
  return max_iters_ <= 0 || iterations < max_iters_;
}

bool EpochLog::finish(MetricsRow& row) {
  bar_.finish();
  for (size_t t = 0; t < names_.size(); ++t)
    row.push_back({names_[t], done_ > 0 ? sums_[t] / static_cast<double>(done_) : std::nan("")});
  row.push_back({"iterations", static_cast<double>(done_)});
  return done_ == num_batches_;
}

std::map<std::string, std::string> checkpoint_metadata(const TrainConfig& config, const RunProgress& progress,
                                                       int64_t epochs_completed, const std::string& model_config_json) {
  return {{"epochs_completed", std::to_string(epochs_completed)},
          {"iterations", std::to_string(progress.iterations)},
          {"config", config_to_json(config)},
          {"model_config", model_config_json}};
}

void resume_progress(const SafetensorsFile& file, const RunDirectory& run, const TrainConfig& config,
                     RunProgress& progress) {
  progress.start_epoch = progress.epochs_completed =
      std::stoll(checkpoint_entry(file, run.last_checkpoint(), "epochs_completed"));
  progress.iterations = std::stoll(checkpoint_entry(file, run.last_checkpoint(), "iterations"));
  run.truncate_metrics(progress.start_epoch);
  std::fprintf(stderr, "resuming %s after epoch %lld\n", run.path().c_str(),
               static_cast<long long>(progress.start_epoch));
  if (progress.start_epoch >= config.epochs) progress.stop = true;
}

RunSummary run_epochs(const TrainConfig& config, Device device, Optimizer& optimizer, const RunDirectory& run,
                      RunProgress& progress, const EpochSteps& steps) {
  const auto start = Clock::now();
  const CosineAnnealing schedule(config.lr, config.epochs, config.lr * config.lr_min_factor);
  for (int64_t epoch = progress.start_epoch; epoch < config.epochs && !progress.stop; ++epoch) {
    const auto epoch_start = Clock::now();
    optimizer.set_lr(schedule.lr_at(epoch));
    MetricsRow row{{"epoch", static_cast<double>(epoch)}, {"lr", schedule.lr_at(epoch)}};
    const bool complete = steps.train(epoch, row);
    steps.finish(epoch, row, progress.stop || epoch + 1 == config.epochs);
    row.push_back({"seconds", seconds_since(epoch_start)});
    run.append_metrics(row);
    if (!complete) {
      std::fprintf(stderr, "stopped after %lld iterations, in the middle of epoch %lld (not checkpointed)\n",
                   static_cast<long long>(progress.iterations), static_cast<long long>(epoch + 1));
      continue;
    }
    steps.checkpoint(epoch + 1);
    progress.epochs_completed = epoch + 1;
    if (epoch == progress.start_epoch && device.is_cpu())
      std::fprintf(stderr, "running on the CPU: %.1f s per epoch\n", seconds_since(epoch_start));
  }
  RunSummary summary;
  summary.iterations = progress.iterations;
  summary.epochs_completed = progress.epochs_completed;
  summary.seconds = seconds_since(start);
  return summary;
}

void check_finite_loss(double value, const std::string& term, int64_t epoch, int64_t iteration,
                       const RunDirectory& run, int64_t epochs_checkpointed) {
  if (std::isfinite(value)) return;
  fail("loss term '", term, "' became ", value, " at epoch ", epoch, ", iteration ", iteration, "; training stopped. ",
       epochs_checkpointed > 0 ? "The last good checkpoint is " + run.last_checkpoint() + " (after epoch " +
                                     std::to_string(epochs_checkpointed) + "); resume with --resume " + run.path() +
                                     " after lowering --lr"
                               : std::string("No checkpoint was written yet; check the weights and lower --lr"));
}

}  // namespace mcdl
