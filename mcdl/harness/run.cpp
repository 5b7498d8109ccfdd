#include "mcdl/harness/run.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <type_traits>

#include "data/loader.h"
#include "engine/byte_hash.h"
#include "engine/collective.h"
#include "engine/error.h"
#include "engine/nccl_transport.h"
#include "engine/ops.h"
#include "engine/ops/linalg.h"
#include "engine/settings.h"
#include "io/safetensors.h"
#include "mcdl/method/mcdl.h"
#include "mcdl/method/registry.h"
#include "mcdl/run/accuracy_report.h"
#include "mcdl/run/checkpoint_writer.h"
#include "mcdl/run/epoch_loop.h"
#include "mcdl/run/estimate_k.h"
#include "mcdl/run/frozen_backbone.h"
#include "mcdl/run/run_checkpoint.h"
#include "mcdl/run/run_start.h"
#include "mcdl/run/stop_request.h"

namespace mcdl {
namespace {

// The checked config with the defaults that depend on the settings alone filled in; with
// several processes, --shards defaults to their number.
TrainConfig validated(TrainConfig config, const Collective& world) {
  if (world.size() > 1 && !config.shards) config.shards = world.size();
  validate_config(config);
  return resolve_defaults(config);
}

// A short fingerprint of this program's file, so that ranks running different builds are found.
std::string program_fingerprint() {
  std::ifstream in("/proc/self/exe", std::ios::binary);
  uint64_t hash = kByteHashStart;
  std::vector<char> buffer(size_t{1} << 20);
  while (in.read(buffer.data(), static_cast<std::streamsize>(buffer.size())) || in.gcount() > 0) {
    hash_bytes(hash, buffer.data(), static_cast<size_t>(in.gcount()));
    if (!in) break;
  }
  return std::to_string(hash);
}

// Several processes on GPUs: NCCL carries their device data when it loads on every rank
// (--gpu-collectives auto) or must (nccl); otherwise it goes through host memory and MPI. Until
// the run ends (the communicator is released before the CUDA runtime is).
class GpuLink {
 public:
  GpuLink(Collective& world, GpuCollectives choice, Device device) : world_(world) {
    check(choice != GpuCollectives::nccl || device.is_cuda(), "--gpu-collectives nccl: this run is on the CPU, and ",
          "NCCL moves GPU memory only; pass --device cuda, or leave --gpu-collectives at auto");
    if (world.device_transport()) {  // the NCCL world (no MPI) carries everything on the GPUs already
      check(choice != GpuCollectives::host, "--gpu-collectives host sends GPU data through MPI, but these ",
            "processes were started without it (RANK and WORLD_SIZE only); start them with mpirun, or drop the option");
      return;
    }
    if (world.size() == 1 || !device.is_cuda() || choice == GpuCollectives::host) return;
    std::string why;
    std::unique_ptr<DeviceTransport> transport = make_nccl_transport(world, why);
    if (!transport) {
      check(choice != GpuCollectives::nccl, "--gpu-collectives nccl, but NCCL could not be loaded:\n", why,
            "\n(--gpu-collectives auto goes on without it, through host memory)");
      if (world.rank() == 0)
        std::fprintf(stderr, "note: NCCL could not be loaded, so GPU data goes through host memory and MPI:\n%s\n",
                     why.c_str());
      return;
    }
    if (world.rank() == 0)
      std::fprintf(stderr, "collectives: MPI between the processes, %s between the GPUs\n", transport->name().c_str());
    world.set_device_transport(std::move(transport));
    linked_ = true;
  }
  ~GpuLink() {
    if (linked_) world_.set_device_transport(nullptr);
  }
  GpuLink(const GpuLink&) = delete;
  GpuLink& operator=(const GpuLink&) = delete;

 private:
  Collective& world_;
  bool linked_ = false;  // this link set the world's transport (and takes it away at the end)
};

void append_missing(MetricsRow& row, const std::vector<std::string>& names) {
  for (const std::string& name : names) row.push_back({name, std::nan("")});
}

class Run {
 public:
  Run(const TrainConfig& config, bool resume);
  RunSummary run();

 private:
  RunSummary score_once();  // a method that does not train
  bool train_epoch(int64_t epoch, MetricsRow& row);  // true when every batch ran
  // A step's loss terms, the total first: over the whole batch, or per shard (--batch-stats local).
  std::vector<Tensor> step_terms(const LoadedBatch& batch, const BatchLabels& labels, int64_t epoch,
                                 double mcdl_weight);
  std::vector<Tensor> local_step_terms(const LoadedBatch& batch, const BatchLabels& labels, int64_t epoch,
                                       double mcdl_weight);
  EvalPhases finish_epoch(int64_t epoch, MetricsRow& row, bool final);
  // The scores of an epoch: the method's, MCDL's buckets and the validation columns (NaN where
  // the method did not predict); returns the summary line's part, and in `phases` where the
  // method's scoring went.
  std::string score(int64_t epoch, bool final, MetricsRow& row, EvalPhases& phases);
  std::string append_validation(MetricsRow& row, const std::optional<EpochPredictions>& predictions) const;
  std::vector<std::string> loss_names() const;
  void save_checkpoint(int64_t epochs_completed);
  void load_checkpoint();

  Collective& world_;  // the processes of the run (one unless an MPI launcher started several)
  TrainConfig config_;
  bool resume_;
  Device device_;
  RunDirectory run_;  // written by rank 0 alone
  CheckpointWriter checkpoints_{run_, world_};  // after run_: written in the background, waited for before run_ goes
  TrainingData data_;
  ScopedEngineSettings settings_;  // the run's matmul precision, until its last product
  int64_t clusters_ = 0;  // the model's clusters (--clusters)
  RunProgress progress_;
  std::optional<GpuLink> gpu_link_;  // NCCL between the processes' GPUs, once the ranks agree on the settings
  Shards shards_;  // --shards: how the method's forwards and the backward run
  std::unique_ptr<BaseMethod> method_;
  TrainedMethod* trained_ = nullptr;  // the method's training side (null: k-means)
  std::unique_ptr<Mcdl> mcdl_;        // where --method attaches MCDL
  ClusterAccuracy last_accuracy_{std::nan(""), std::nan(""), std::nan("")};
  ClusterAccuracy last_test_accuracy_{std::nan(""), std::nan(""), std::nan("")};
};

Run::Run(const TrainConfig& config, bool resume)
    : world_(world()),
      config_(validated(config, world_)),
      resume_(resume),
      device_(select_device(device_choice_name(config_.device))),
      run_(config_.out, world_.rank() == 0),
      data_(load_training_data(config_)),
      settings_(&EngineSettings::matmul_precision,
                select_matmul_precision(precision_request(config_.precision), device_)),
      shards_(config_.shards, &world_) {
  if (world_.size() > 1) {
    check_same_on_every_rank(world_, program_fingerprint(), "program (another build of mcdl_train)");
    TrainConfig shared = config_;
    shared.progress = false;  // only rank 0 shows a progress bar
    check_same_on_every_rank(world_, config_to_json(shared), "configuration");
    // How the checkpoints' rows travel (MCDL_MPI_SIDE_CHANNEL, the MPI's thread support).
    check_same_on_every_rank(world_, world_.side_channel() ? "side channel" : "between steps",
                             "way of sending checkpoints to rank 0 (set MCDL_MPI_SIDE_CHANNEL alike on every rank)");
  }
  gpu_link_.emplace(world_, config_.gpu_collectives, device_);
  // What depends on the machine and the data, resolved here once, before config.json is written.
  config_.precision = engine_settings().matmul_precision;
  config_.eval_on = data_.eval_on;
  clusters_ = resolve_clusters(config_, data_, device_);
  begin_run(config_, data_, run_, resume_);
  MethodRecipe recipe = make_method(config_.method, {config_, data_, device_, clusters_, run_, progress_, shards_});
  method_ = std::move(recipe.base);
  trained_ = method_->trained();
  if (recipe.with_mcdl) {
    trained_->enable_predictions(resume_);
    mcdl_ = std::make_unique<Mcdl>(mcdl_settings(config_), data_, clusters_, device_, &world_, &shards_);
    if (world_.size() > 1 && !world_.side_channel() && world_.rank() == 0)
      std::fprintf(stderr,
                   "note: each checkpoint's memory banks go to rank 0 a piece after each training step that follows "
                   "it, as these processes have no side channel for them (%s)\n",
                   world_.transport() == "MPI" ? "MPI without full thread support, or MCDL_MPI_SIDE_CHANNEL=off"
                                               : "started without MPI, NCCL carries everything");
  }
  if (resume_) load_checkpoint();
}

RunSummary Run::run() {
  if (!trained_) return score_once();
  RunSummary summary = run_epochs(
      training_epoch_loop(config_, device_, run_), trained_->optimizer(), progress_,
      {[this](int64_t epoch, MetricsRow& row) { return train_epoch(epoch, row); },
       [this](int64_t epoch, MetricsRow& row, bool final) { return finish_epoch(epoch, row, final); },
       [this](int64_t epochs_completed) { save_checkpoint(epochs_completed); }});
  checkpoints_.wait();  // the last checkpoint is on disk before the run reports it is done
  summary.accuracy = last_accuracy_;
  summary.test_accuracy = last_test_accuracy_;
  return summary;
}

RunSummary Run::score_once() {
  const auto start = Clock::now();
  MetricsRow row{{"epoch", 0}};
  const EpochScore score = method_->score(0, true, row);
  const std::string validation = append_validation(row, score.predictions);
  method_->append_closing_columns(row);
  append_eval_seconds(row, seconds_since(start), score.phases);  // all of it is evaluation
  row.push_back({"seconds", seconds_since(start)});
  run_.append_metrics(row);
  std::printf("%s%s\n", score.line.c_str(), validation.c_str());
  RunSummary summary;
  if (score.accuracy) summary.accuracy = *score.accuracy;
  if (score.test_accuracy) summary.test_accuracy = *score.test_accuracy;
  summary.seconds = seconds_since(start);
  return summary;
}

std::vector<std::string> Run::loss_names() const {
  std::vector<std::string> names = {"loss"};
  for (const std::string& name : trained_->loss_names()) names.push_back(name);
  if (mcdl_)
    for (const std::string& name : Mcdl::loss_names()) names.push_back(name);
  return names;
}

bool Run::train_epoch(int64_t epoch, MetricsRow& row) {
  const double mcdl_weight = mcdl_ ? mcdl_->begin_epoch(epoch) : 0.0;
  const EpochPlan plan = plan_epoch(config_, data_, epoch);
  const int64_t num_batches = static_cast<int64_t>(plan.batches.size());
  std::vector<ViewKind> views = {ViewKind::train, ViewKind::train};
  if (mcdl_) views.push_back(ViewKind::strong);  // MCDL's strong view (docs/method.md §2)
  LoaderOptions loader_options = train_loader_options(config_, data_, device_, views);
  // Each process prepares only the images its shards read; the other rows stay zeros.
  loader_options.positions = [this](int64_t batch_size) { return shards_.own_positions(batch_size); };
  BatchLoader loader(*data_.cache, std::move(loader_options));
  loader.start(epoch, plan.batches);

  const std::vector<std::string> names = loss_names();
  EpochLog log(config_, epoch, num_batches, names,
               finite_loss_check(names, trained_->total_name(), epoch, run_, progress_.epochs_completed,
                                 [this] { checkpoints_.wait(); }));
  LoadedBatch batch;
  while (loader.next(batch)) {
    const BatchLabels labels = batch_labels(plan, data_, batch.batch);
    const std::vector<Tensor> terms = config_.batch_stats == BatchStats::local
                                          ? local_step_terms(batch, labels, epoch, mcdl_weight)
                                          : step_terms(batch, labels, epoch, mcdl_weight);
    backward_and_step(terms.front(), trained_->optimizer(), shards_);
    trained_->after_step();
    agree_on_stop(world_);  // several ranks stop after the same step
    checkpoints_.send_piece();  // a world without a side channel sends the last checkpoint's rows here
    if (!log.record(terms, batch.batch, progress_.iterations)) {
      progress_.stop = true;
      break;
    }
  }
  return log.finish(row);
}

std::vector<Tensor> Run::step_terms(const LoadedBatch& batch, const BatchLabels& labels, int64_t epoch,
                                    double mcdl_weight) {
  const BaseStep base = trained_->step(batch, labels, epoch);
  Tensor total = base.total;
  std::vector<Tensor> terms = base.terms;
  if (mcdl_) {
    const McdlTerms extra = mcdl_->step(*trained_, base, batch, labels, epoch, mcdl_weight > 0);
    total = mcdl_->total(total, extra, mcdl_weight);
    terms.insert(terms.end(), {extra.sup, extra.semi, extra.self});
  }
  terms.insert(terms.begin(), total);
  return terms;
}

// --batch-stats local: the step once per shard on its rows alone, as each GPU of a DDP run takes
// it, and the mean of the shards' terms (DDP's mean of the GPUs' gradients). A shard's MixMatch
// draws come from a stream of its own.
std::vector<Tensor> Run::local_step_terms(const LoadedBatch& batch, const BatchLabels& labels, int64_t epoch,
                                          double mcdl_weight) {
  const int64_t count = shards_.count();
  const auto shard_ranges = Shards::ranges(batch.views[0].size(0), count);
  std::vector<Tensor> sums;
  for (int64_t s = 0; s < count; ++s) {
    const auto [begin, end] = shard_ranges[static_cast<size_t>(s)];
    LoadedBatch part;
    part.batch = batch.batch * count + s;
    for (const Tensor& view : batch.views) part.views.push_back(slice(view, 0, begin, end));
    BatchLabels part_labels;
    const auto rows = [&](const auto& values) {
      using Values = std::decay_t<decltype(values)>;
      return Values(values.begin() + begin, values.begin() + end);
    };
    part_labels.labels = rows(labels.labels);
    part_labels.labelled = rows(labels.labelled);
    part_labels.bank_index = rows(labels.bank_index);
    shards_.set_local_shard(s);
    const std::vector<Tensor> terms = step_terms(part, part_labels, epoch, mcdl_weight);
    shards_.set_local_shard(std::nullopt);
    if (sums.empty()) {
      sums = terms;
    } else {
      for (size_t k = 0; k < terms.size(); ++k) sums[k] = sums[k] + terms[k];
    }
  }
  for (Tensor& sum : sums) sum = sum * (1.0 / static_cast<double>(count));
  return sums;
}

EvalPhases Run::finish_epoch(int64_t epoch, MetricsRow& row, bool final) {
  EvalPhases phases;
  const std::string scores = score(epoch, final, row, phases);
  // The summary line: every loss term, lr, accuracies, buckets and the validation signal.
  std::printf("epoch %lld/%lld  %s  lr %.5f%s\n", static_cast<long long>(epoch + 1),
              static_cast<long long>(config_.epochs), loss_summary(row, loss_names()).c_str(),
              metric_value(row, "lr"), scores.c_str());
  std::fflush(stdout);
  return phases;
}

std::string Run::score(int64_t epoch, bool final, MetricsRow& row, EvalPhases& phases) {
  const EpochScore score = method_->score(epoch, final, row);
  phases = score.phases;
  if (score.accuracy) last_accuracy_ = *score.accuracy;
  if (score.test_accuracy) last_test_accuracy_ = *score.test_accuracy;
  std::string line = score.line;
  if (mcdl_) {
    if (score.predictions)
      line += mcdl_->append_buckets(row, *score.predictions);
    else
      append_missing(row, bucket_columns());
    mcdl_->append_view_accuracy(row);
  }
  return line + append_validation(row, score.predictions);
}

// The validation columns (--val-classes): All / Old / New on the validation images with their own
// v2 assignment, and MCDL's pseudo-label precision on them, where the truth is the user's own
// labels.
std::string Run::append_validation(MetricsRow& row, const std::optional<EpochPredictions>& predictions) const {
  if (!data_.has_validation()) return "";
  if (!predictions) {
    append_missing(row, {"val_all", "val_old", "val_new"});
    if (mcdl_) append_missing(row, Mcdl::validation_columns());
    return "";
  }
  const KnownLabels known = known_labels(predictions->val_truth, predictions->predictions, predictions->val_is_old);
  const ClusterAccuracy acc = known_accuracy(known, false);
  row.push_back({"val_all", acc.all});
  row.push_back({"val_old", acc.old_classes});
  row.push_back({"val_new", acc.new_classes});
  std::string line = "  val All " + percent(acc.all) + " Old " + percent(acc.old_classes) + " New " +
                     percent(acc.new_classes);
  if (mcdl_) line += mcdl_->append_validation(row, v2_assignment(known.truth, known.predictions));
  return line;
}

void Run::save_checkpoint(int64_t epochs_completed) {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, RowBlocks> row_blocks;
  trained_->save(tensors);
  if (mcdl_) mcdl_->save(tensors, row_blocks);
  auto metadata = checkpoint_metadata(config_, progress_, epochs_completed, trained_->model_config_json());
  metadata[frozen_backbone_key] = trained_->frozen_fingerprint();
  checkpoints_.save(tensors, row_blocks, metadata, epochs_completed - 1, config_.keep_every);
}

void Run::load_checkpoint() {
  check(run_.has_checkpoint(), "--resume ", run_.path(), ": no checkpoint there yet (", run_.last_checkpoint(),
        ")");
  // The banks' probabilities stay in the file: each process reads only its block of them.
  const SafetensorsFile file = load_safetensors(run_.last_checkpoint(), read_in_part);
  trained_->load(file, run_.last_checkpoint());
  if (mcdl_) mcdl_->load(file.tensors, file.stored);
  resume_progress(file, run_, config_, progress_);
}

}  // namespace

TrainConfig resume_config(const std::string& run_dir) {
  const std::string saved = (std::filesystem::path(run_dir) / "config.json").string();
  check(std::filesystem::is_directory(run_dir), "--resume ", run_dir,
        ": no such directory (give the --out directory of the run to continue)");
  check(std::filesystem::exists(saved), "--resume ", run_dir, ": no config.json there (is it a run directory?)");
  TrainConfig config = config_from_json_file(saved);
  config.out = run_dir;
  // A run saved before the MCDL variants existed ran the paper's MCDL and has no such key.
  std::ifstream in(saved);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (text.find("\"mcdl-variant\"") == std::string::npos) config.mcdl_variant = McdlVariant::paper;
  // Nor had a run saved before --precision: it computed in fp32.
  if (text.find("\"precision\"") == std::string::npos) config.precision = MatmulPrecision::fp32;
  // Nor had a run saved before --eval-on: it scored the unlabelled images only.
  if (text.find("\"eval-on\"") == std::string::npos) config.eval_on = EvalOn::unlabelled;
  return config;
}

RunSummary run_training(const TrainConfig& config, bool resume) {
  Run run(config, resume);
  return run.run();
}

}  // namespace mcdl
