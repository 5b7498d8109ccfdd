// Every setting of a training run, with the reference's defaults, in one table: the command
// line (--name value), the run directory's config.json and the help text all come from it, so
// a saved config.json passed back with --config reproduces the run.
//
// Settings are typed: a choice is an enum, a setting whose default depends on the dataset, the
// method or the MCDL variant is an optional that is unset ("auto" on the command line and in the
// help) until resolve_defaults fills it. The run resolves once, at its start, and config.json
// records the resolved values; the components read them from their own structs (McdlSettings,
// the losses' and k-means' options), so no step compares text.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/ops/linalg.h"
#include "mcdl/run/options.h"

namespace mcdl {

// --method: a base method, with MCDL attached for the "+mcdl" ones (mcdl/method/registry.h).
enum class Method { simgcd, simgcd_mcdl, kmeans, gcd, gcd_mcdl };
// "simgcd", "simgcd+mcdl", "kmeans", "gcd" or "gcd+mcdl"; the error names the choices.
Method parse_method(const std::string& name);
const char* method_name(Method method);
// gcd or gcd+mcdl: GCD's training and its final semi-supervised k-means (mcdl/method/gcd.h).
bool is_gcd_method(Method method);
// simgcd+mcdl or gcd+mcdl.
bool has_mcdl(Method method);

enum class DeviceChoice { automatic, cpu, cuda };
// "auto" or the precision's name: engine/ops/linalg.h's select_matmul_precision request.
const char* precision_request(const std::optional<MatmulPrecision>& precision);
const char* device_choice_name(DeviceChoice device);  // "auto", "cpu", "cuda" (engine/device.h's requests)
// What each evaluation scores: the unlabelled training images (transductive), the layout's test
// split (inductive), both; automatic is both where the layout has a test split.
enum class EvalOn { automatic, unlabelled, test, both };
const char* eval_on_name(EvalOn eval_on);
enum class McdlVariant { paper, robust };
const char* mcdl_variant_name(McdlVariant variant);
// L_sup's averaging: over the high anchors (paper), or over labelled ∪ high anchors with
// SimGCD's SupCon weight (robust).
enum class SupNorm { high, labelled_and_high };
// Where a step's batch statistics come from: the whole batch, or each shard alone (as every GPU
// of a PyTorch DDP run computes its losses on its own images).
enum class BatchStats { global, local };
// How several processes on GPUs exchange device data: NCCL when it loads (auto) or always (nccl),
// or through host memory and MPI (host). Every choice moves the same bytes: results are identical.
enum class GpuCollectives { automatic, nccl, host };
// The training images decoded once at the start and kept (all), or each time a batch reads them
// (off: nothing kept, for datasets too big to keep decoded); auto: all up to
// kDecodeOnceMaxImages training images, off above.
enum class ImageCacheMode { automatic, all, off };
constexpr int64_t kDecodeOnceMaxImages = 200000;
// The DCL losses that train (--mcdl-losses: a comma list of sup, semi, self, or none).
struct McdlLosses {
  bool sup = true, semi = true, self = true;
  bool operator==(const McdlLosses&) const = default;
};
McdlLosses parse_mcdl_losses(const std::string& text);
std::string mcdl_losses_name(const McdlLosses& losses);  // "sup,semi,self", ..., "none"

// The option fields of --device and --precision, shared with pretraining's table.
TextField device_field(DeviceChoice& device);
TextField precision_field(std::optional<MatmulPrecision>& precision);

struct TrainConfig {
  // What to run.
  std::string dataset;                 // cub scars aircraft herbarium19 cifar10 cifar100 imagenet100 fmnist folder
  std::string data_root;               // empty: the dataset's default location
  std::string weights;                 // backbone (.safetensors from mcdl_convert or mcdl_pretrain)
  std::string model;                   // model spec when no weights file is given (layers/vit_config.h)
  int64_t head_hidden = 2048;          // SimGCD head MLP: D → hidden → hidden → bottleneck
  int64_t head_bottleneck = 256;
  double head_init_std = 0.02;         // SimGCD's; small backbones need more (docs/training-and-evaluation.md §10)
  // The default was chosen on the validation split only (docs/results.md, "How the robust variant
  // was chosen"): the unlabelled images' labels never pick a default.
  Method method = Method::simgcd_mcdl;
  DeviceChoice device = DeviceChoice::automatic;
  // Unset: bf16 on a GPU, fp32 on the CPU (engine/ops/linalg.h); config.json records the choice.
  std::optional<MatmulPrecision> precision;
  std::string out;                     // run directory
  uint64_t seed = 0;
  // Data.
  int64_t image_size = 224;            // S: crop size; the resize is int(S / 0.875)
  double prop_labelled = 0.5;          // fraction of old-class training images that are labelled
  int64_t max_train = 0;               // keep the first N training images (0: all)
  int64_t num_classes = 0;             // K for the folder layout
  // The model's number of clusters: unset, the dataset's K; with estimate_clusters ("auto"),
  // estimated before training as GCD does (mcdl/run/estimate_k.h) over [the labelled classes,
  // k_max]. config.json records the number.
  std::optional<int64_t> clusters;
  bool estimate_clusters = false;
  int64_t k_max = 1000;
  std::optional<int64_t> workers;      // loader threads (unset: none on the CPU, all cores but one with a GPU)
  int64_t cache_mem_mb = 0;            // image cache budget in MiB (0: a quarter of the RAM)
  std::string cache_dir;               // keep the decoded image cache here across runs
  bool skip_bad_images = false;
  ImageCacheMode image_cache = ImageCacheMode::automatic;
  // Optimisation (SimGCD).
  int64_t epochs = 200;
  int64_t batch_size = 128;
  // Exact sharding: the batch's model forwards and backwards run on this many equal shards, the
  // losses on the whole batch (engine/shards.h); unset: off, one graph per step.
  std::optional<int64_t> shards;
  BatchStats batch_stats = BatchStats::global;
  GpuCollectives gpu_collectives = GpuCollectives::automatic;
  double lr = 0.1;
  double lr_min_factor = 1e-3;         // cosine annealing to lr · factor
  double momentum = 0.9;
  double weight_decay = 5e-5;
  std::optional<int64_t> grad_from_block;  // unset: the last block only (needs the model's depth)
  int64_t max_iters = 0;               // stop after this many iterations in all (0: no limit)
  // SimGCD losses.
  double student_temp = 0.1;
  double warmup_teacher_temp = 0.07;
  double teacher_temp = 0.04;
  int64_t warmup_teacher_epochs = 30;
  std::optional<double> memax_weight;  // unset: the dataset's value (CUB 2, CIFAR-100 4, others 1)
  double sup_weight = 0.35;            // also GCD's sup_con_weight
  // An EMA teacher (simgcd, simgcd+mcdl): unset, none; else its per-step momentum. It gives the
  // self-distillation its targets and, with MCDL, feeds the banks (docs/method.md §7).
  std::optional<double> ema_teacher;
  // MCDL. Unset values are the variant's (resolve_defaults).
  McdlVariant mcdl_variant = McdlVariant::robust;  // paper (docs/method.md exactly) or robust
  int64_t mu = 16;                     // memory bank length
  std::optional<int64_t> mcdl_start;   // paper: 10% of the epochs; robust: the teacher warm-up
  double lambda = 0.35;
  McdlLosses mcdl_losses;              // which DCL losses train (ablations: a subset, or none)
  std::optional<double> tau_s;         // L_sup temperature (paper 0.04, robust 0.07)
  // The robust variant's safeguards, each also usable alone.
  std::optional<SupNorm> sup_norm;     // paper: high; robust: labelled_and_high
  std::optional<int64_t> mcdl_ramp;    // epochs of the linear ramp of the MCDL losses' weights (paper 0)
  std::optional<double> self_threshold;  // L_self only where max p_w reaches this (0 in both variants)
  std::optional<double> mcdl_class_cap;  // a pseudo-label's most high samples, × N/K (0: no cap; both variants)
  // The losses start at the first epoch from mcdl_start whose start finds this share of the
  // unlabelled images with a full weak window; the ramp counts from there (0: at mcdl_start; both variants).
  std::optional<double> mcdl_start_fill;
  double tau_u = 0.7;                  // sharpening temperature
  double mix_alpha = 0.5;              // MixMatch Beta(α, α)
  // GCD baseline (docs/reference-facts.md §3): the head MLP uses head_hidden / head_bottleneck / head_init_std.
  int64_t gcd_head_out = 65536;        // width of the weight-normed last layer the losses act on
  double gcd_temperature = 1.0;        // InfoNCE temperature (GCD's --temperature)
  // k-means (the kmeans method, and GCD's final semi-supervised k-means); unset: the method's
  // (kmeans 10 restarts of 300 iterations as sklearn, gcd 100 of 200).
  std::optional<int64_t> kmeans_restarts;
  std::optional<int64_t> kmeans_iters;
  // Output.
  int64_t keep_every = 0;              // also keep every N-th epoch's checkpoint
  int64_t eval_batch_size = 256;
  int64_t eval_subset = 0;             // evaluate on the first N unlabelled images only (0: all)
  EvalOn eval_on = EvalOn::automatic;  // resolved by the layout (training_data.h); config.json records it
  int64_t max_test = 0;                // evaluate on N test images, evenly spaced (0: all)
  int64_t eval_every = 1;              // score every N-th epoch and the last (0: the last only)
  bool progress = true;                // progress bar on a terminal
  // Validation inside the labelled set (docs/training-and-evaluation.md §4).
  int64_t val_classes = 0;             // hold out this many known classes as validation-new classes
};

// Every unset setting that depends only on the settings themselves replaced by its value: the
// MCDL variant's (mcdl_start, tau_s, sup_norm, mcdl_ramp, self_threshold, mcdl_class_cap, mcdl_start_fill), the dataset's mean-
// entropy weight, the method's k-means restarts and iterations. What depends on the machine or
// the data (precision, eval_on, clusters, workers, grad_from_block) is resolved where that is
// known, at the run's start (mcdl/harness/run.cpp).
TrainConfig resolve_defaults(TrainConfig config);

// MCDL's settings as its step reads them, from a resolved config.
struct McdlSettings {
  McdlVariant variant = McdlVariant::robust;
  int64_t mu = 16, start = 0, ramp = 0;
  double lambda = 0.35, tau_s = 0.07, tau_u = 0.7, mix_alpha = 0.5, self_threshold = 0.0;
  double class_cap = 0.0;  // 0: off (mcdl/method/class_cap.h)
  double start_fill = 0.0;  // 0: the losses start at `start` (mcdl/method/mcdl.h)
  SupNorm sup_norm = SupNorm::labelled_and_high;
  McdlLosses losses;
  double student_temp = 0.1, sup_weight = 0.35;  // the classifier's temperature, SimGCD's SupCon weight
  uint64_t seed = 0;                             // MixMatch's draws
};
McdlSettings mcdl_settings(const TrainConfig& resolved);

// The table over `config`'s fields (pointers into it).
std::vector<ConfigOption> config_options(TrainConfig& config);

// Sets one option from its text value (flags: "true"/"false"); the error names the option and
// what it expects.
void set_config_option(TrainConfig& config, const std::string& name, const std::string& value);
std::string config_to_json(const TrainConfig& config);
// Reads a config.json (unknown keys are an error, so a typo never passes silently).
TrainConfig config_from_json_file(const std::string& path);
// The same from JSON text (a checkpoint's "config" entry); `where` names it in messages.
TrainConfig config_from_json(const std::string& json, const std::string& where);
// Checks ranges and combinations; the message names the option.
void validate_config(const TrainConfig& config);

}  // namespace mcdl
