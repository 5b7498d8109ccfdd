// Every setting of a training run, with the reference's defaults, in one table: the command
// line (--name value), the run directory's config.json and the help text all come from it, so
// a saved config.json passed back with --config reproduces the run.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "mcdl/options.h"

namespace mcdl {

// The training methods (--method), parsed once from the option's text.
enum class Method { simgcd, simgcd_mcdl, kmeans, gcd, gcd_mcdl };
// "simgcd", "simgcd+mcdl", "kmeans", "gcd" or "gcd+mcdl"; the error names the choices.
Method parse_method(const std::string& name);
// gcd or gcd+mcdl: GCD's training and its final semi-supervised k-means (mcdl/gcd_baseline.h).
bool is_gcd_method(Method method);

struct TrainConfig {
  // What to run.
  std::string dataset;                 // cub scars aircraft herbarium19 cifar10 cifar100 imagenet100 fmnist folder
  std::string data_root;               // empty: the dataset's default location
  std::string weights;                 // backbone (.safetensors from mcdl_convert or mcdl_pretrain)
  std::string model;                   // model spec when no weights file is given (layers/vit_config.h)
  int64_t head_hidden = 2048;          // SimGCD head MLP: D → hidden → hidden → bottleneck
  int64_t head_bottleneck = 256;
  double head_init_std = 0.02;         // SimGCD's; small backbones need more (see the README's demo)
  // simgcd, simgcd+mcdl, kmeans, gcd, gcd+mcdl. The default was chosen on the validation split only (README,
  // "MCDL: two variants"): the unlabelled images' labels never pick a default.
  std::string method = "simgcd+mcdl";
  std::string device = "auto";         // auto, cpu, cuda
  std::string precision = "auto";      // auto, fp32, tf32, bf16 (engine/ops/linalg.h); config.json: resolved
  std::string out;                     // run directory
  uint64_t seed = 0;
  // Data.
  int64_t image_size = 224;            // S: crop size; the resize is int(S / 0.875)
  double prop_labelled = 0.5;          // fraction of old-class training images that are labelled
  int64_t max_train = 0;               // keep the first N training images (0: all)
  int64_t num_classes = 0;             // K for the folder layout
  // The model's number of clusters: 0, the dataset's K; -1 ("auto"), estimated before training as
  // GCD does (mcdl/estimate_k.h) over [the labelled classes, k_max]; config.json records the number.
  int64_t clusters = 0;
  int64_t k_max = 1000;
  int64_t workers = -1;                // loader threads (-1: automatic, 0: none)
  int64_t cache_mem_mb = 0;            // image cache budget in MiB (0: a quarter of the RAM)
  std::string cache_dir;               // keep the decoded image cache here across runs
  bool skip_bad_images = false;
  // Optimisation (SimGCD).
  int64_t epochs = 200;
  int64_t batch_size = 128;
  double lr = 0.1;
  double lr_min_factor = 1e-3;         // cosine annealing to lr · factor
  double momentum = 0.9;
  double weight_decay = 5e-5;
  int64_t grad_from_block = -1;        // −1: the last block only
  int64_t max_iters = 0;               // stop after this many iterations in all (0: no limit)
  // SimGCD losses.
  double student_temp = 0.1;
  double warmup_teacher_temp = 0.07;
  double teacher_temp = 0.04;
  int64_t warmup_teacher_epochs = 30;
  double memax_weight = -1.0;          // −1: the dataset's value (CUB 2, CIFAR-100 4, others 1)
  double sup_weight = 0.35;            // also GCD's sup_con_weight
  // MCDL.
  std::string mcdl_variant = "robust";  // paper (mcdl-spec exactly) or robust (README: "Two MCDL variants")
  int64_t mu = 16;                     // memory bank length
  int64_t mcdl_start = -1;             // −1: the variant's (paper: 10% of the epochs; robust: the teacher warm-up)
  double lambda = 0.35;
  std::string mcdl_losses = "sup,semi,self";  // which DCL losses train (ablations: a subset, or none)
  double tau_s = -1.0;                 // L_sup temperature (−1: the variant's: paper 0.04, robust 0.07)
  // The robust variant's safeguards, each also usable alone (−1 / "": the variant's value).
  std::string sup_norm;                // L_sup averaging: "high" (paper) or "union" (robust)
  int64_t mcdl_ramp = -1;              // epochs of the linear ramp of the MCDL losses' weights (paper 0)
  double self_threshold = -1.0;        // L_self only where max p_w reaches this (−1: 0, both variants)
  double tau_u = 0.7;                  // sharpening temperature
  double mix_alpha = 0.5;              // MixMatch Beta(α, α)
  // GCD baseline (gcd_reference.md §3): the head MLP uses head_hidden / head_bottleneck / head_init_std.
  int64_t gcd_head_out = 65536;        // width of the weight-normed last layer the losses act on
  double gcd_temperature = 1.0;        // InfoNCE temperature (GCD's --temperature)
  // k-means (the kmeans method, and GCD's final semi-supervised k-means).
  int64_t kmeans_restarts = -1;        // −1: the method's value (kmeans 10 as sklearn, gcd 100)
  int64_t kmeans_iters = -1;           // −1: the method's value (kmeans 300 as sklearn, gcd 200)
  // Output.
  int64_t keep_every = 0;              // also keep every N-th epoch's checkpoint
  int64_t eval_batch_size = 256;
  int64_t eval_subset = 0;             // evaluate on the first N unlabelled images only (0: all)
  // unlabelled (transductive), test (inductive, the layout's test split), both; auto: both where the
  // layout has a test split, else unlabelled (config.json records the resolved choice).
  std::string eval_on = "auto";
  int64_t max_test = 0;                // evaluate on N test images, evenly spaced (0: all)
  int64_t eval_every = 1;              // score every N-th epoch and the last (0: the last only)
  bool progress = true;                // progress bar on a terminal
  // Validation inside the labelled set (README: "Choosing settings without the unlabelled labels").
  int64_t val_classes = 0;             // hold out this many known classes as validation-new classes
};

// The values the run actually uses after dataset and method defaults (memax weight,
// mcdl_start, k-means restarts and iterations; grad_from_block needs the model).
double effective_memax_weight(const TrainConfig& config);
int64_t effective_mcdl_start(const TrainConfig& config);
// The config with every MCDL setting left at −1 / "" replaced by the variant's value, so that
// config.json records exactly what runs (checks the variant's name).
TrainConfig with_variant_defaults(TrainConfig config);
// Whether --mcdl-losses names `term` (sup, semi or self).
bool mcdl_loss_enabled(const TrainConfig& config, const std::string& term);
int64_t effective_kmeans_restarts(const TrainConfig& config);
int64_t effective_kmeans_iters(const TrainConfig& config);

// The table over `config`'s fields (pointers into it).
std::vector<ConfigOption> config_options(TrainConfig& config);

// Sets one option from its text value (flags: "true"/"false"); the error names the option
// and what it expects.
void set_config_option(TrainConfig& config, const std::string& name, const std::string& value);
std::string config_to_json(const TrainConfig& config);
// Reads a config.json (unknown keys are an error, so a typo never passes silently).
TrainConfig config_from_json_file(const std::string& path);
// The same from JSON text (a checkpoint's "config" entry); `where` names it in messages.
TrainConfig config_from_json(const std::string& json, const std::string& where);
// Checks ranges and combinations; the message names the option.
void validate_config(const TrainConfig& config);

}  // namespace mcdl
