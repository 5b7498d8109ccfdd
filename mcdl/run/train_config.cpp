#include "mcdl/run/train_config.h"

#include <algorithm>
#include <charconv>

#include "engine/error.h"

namespace mcdl {
namespace {

const std::vector<std::pair<Method, std::string>>& method_names() {
  static const std::vector<std::pair<Method, std::string>> names = {{Method::simgcd, "simgcd"},
                                                                     {Method::simgcd_mcdl, "simgcd+mcdl"},
                                                                     {Method::kmeans, "kmeans"},
                                                                     {Method::gcd, "gcd"},
                                                                     {Method::gcd_mcdl, "gcd+mcdl"}};
  return names;
}

// --sup-norm: high, union, or auto (unset: the variant's).
TextField sup_norm_field(std::optional<SupNorm>& sup_norm) {
  return {[&sup_norm] {
            return std::string(!sup_norm ? "auto" : *sup_norm == SupNorm::high ? "high" : "union");
          },
          [&sup_norm](const std::string& text) {
            // "": the unset value of run directories written before the settings were typed.
            if (text == "auto" || text.empty()) sup_norm.reset();
            else if (text == "high") sup_norm = SupNorm::high;
            else if (text == "union") sup_norm = SupNorm::labelled_and_high;
            else throw_option_error("sup-norm", "expected high, union or auto, got '" + text + "'");
          }};
}

// An option that is off (unset) or a number (--ema-teacher's momentum, --shards' count), written
// as "off" or the number's shortest exact text.
template <class T>
TextField off_or_number_field(const std::string& option, std::optional<T>& value) {
  return {[&value] {
            if (!value) return std::string("off");
            char text[32];
            const auto end = std::to_chars(text, text + sizeof text, *value).ptr;
            return std::string(text, end);
          },
          [option, &value](const std::string& text) {
            if (text == "off") {
              value.reset();
              return;
            }
            T number = 0;
            set_option({{option, "", &number}}, option, text);
            value = number;
          }};
}

// --clusters: a number, 0 (unset: the dataset's K) or auto (estimated).
TextField clusters_field(TrainConfig& c) {
  return {[&c] { return c.estimate_clusters ? std::string("auto") : std::to_string(c.clusters.value_or(0)); },
          [&c](const std::string& text) {
            if (text == "auto" || text == "-1") {  // -1: auto in older run directories
              c.estimate_clusters = true;
              c.clusters.reset();
              return;
            }
            int64_t n = 0;
            set_option({{"clusters", "", &n}}, "clusters", text);
            check(n >= 0, "--clusters must be auto, 0 or a positive number, got ", n);
            c.estimate_clusters = false;
            if (n == 0) c.clusters.reset();
            else c.clusters = n;
          }};
}

}  // namespace

TextField device_field(DeviceChoice& device) {
  return enum_field("device", &device,
                    {{DeviceChoice::automatic, "auto"}, {DeviceChoice::cpu, "cpu"}, {DeviceChoice::cuda, "cuda"}});
}

// --precision: auto (unset) or one of engine/ops/linalg.h's precisions.
TextField precision_field(std::optional<MatmulPrecision>& precision) {
  return {[&precision] { return std::string(precision_request(precision)); },
          [&precision](const std::string& text) {
            if (text == "auto") precision.reset();
            else precision = parse_matmul_precision(text);
          }};
}

Method parse_method(const std::string& name) {
  Method method = Method::simgcd_mcdl;
  enum_field("method", &method, method_names()).set(name);
  return method;
}

const char* method_name(Method method) {
  for (const auto& [value, name] : method_names())
    if (value == method) return name.c_str();
  return "";
}

bool is_gcd_method(Method method) { return method == Method::gcd || method == Method::gcd_mcdl; }
bool has_mcdl(Method method) { return method == Method::simgcd_mcdl || method == Method::gcd_mcdl; }

const char* device_choice_name(DeviceChoice device) {
  return device == DeviceChoice::cpu ? "cpu" : device == DeviceChoice::cuda ? "cuda" : "auto";
}

const char* precision_request(const std::optional<MatmulPrecision>& precision) {
  return precision ? matmul_precision_name(*precision) : "auto";
}

const char* eval_on_name(EvalOn eval_on) {
  switch (eval_on) {
    case EvalOn::unlabelled: return "unlabelled";
    case EvalOn::test: return "test";
    case EvalOn::both: return "both";
    case EvalOn::automatic: break;
  }
  return "auto";
}

const char* mcdl_variant_name(McdlVariant variant) { return variant == McdlVariant::paper ? "paper" : "robust"; }

McdlLosses parse_mcdl_losses(const std::string& text) {
  McdlLosses losses{false, false, false};
  if (text == "none") return losses;
  std::string rest = text + ",";
  for (size_t comma; !rest.empty(); rest = rest.substr(comma + 1)) {
    comma = rest.find(',');
    const std::string term = rest.substr(0, comma);
    if (term == "sup") losses.sup = true;
    else if (term == "semi") losses.semi = true;
    else if (term == "self") losses.self = true;
    else throw_option_error("mcdl-losses", "expected a comma list of sup, semi and self, or none, got '" + text + "'");
  }
  return losses;
}

std::string mcdl_losses_name(const McdlLosses& losses) {
  std::string text;
  for (const auto& [on, name] : {std::pair{losses.sup, "sup"}, {losses.semi, "semi"}, {losses.self, "self"}})
    if (on) text += (text.empty() ? "" : ",") + std::string(name);
  return text.empty() ? "none" : text;
}

TrainConfig resolve_defaults(TrainConfig c) {
  const bool robust = c.mcdl_variant == McdlVariant::robust;
  // Robust: once the teacher temperature has settled, so that the banks record the predictions
  // the SimGCD loss is sharpening towards, not the warm-up's; paper: 20 of 200, as the public code.
  if (!c.mcdl_start) c.mcdl_start = robust ? std::min(c.warmup_teacher_epochs, c.epochs - 1) : c.epochs / 10;
  if (!c.tau_s) c.tau_s = robust ? 0.07 : 0.04;  // robust: SimGCD's SupCon temperature
  if (!c.sup_norm) c.sup_norm = robust ? SupNorm::labelled_and_high : SupNorm::high;
  if (!c.mcdl_ramp) c.mcdl_ramp = robust ? std::max<int64_t>(1, c.epochs / 10) : 0;
  if (!c.self_threshold) c.self_threshold = 0.0;  // robust too: the validation runs gained nothing from a mask
  if (!c.mcdl_class_cap) c.mcdl_class_cap = 0.0;  // both: no validation run has earned it the default yet
  if (!c.mcdl_start_fill) c.mcdl_start_fill = 0.0;  // both: the start is an epoch
  // SimGCD's scripts: CUB 2, CIFAR-100 4, every other dataset 1.
  if (!c.memax_weight) c.memax_weight = c.dataset == "cub" ? 2.0 : c.dataset == "cifar100" ? 4.0 : 1.0;
  // GCD's k_means.py script; sklearn's n_init and max_iter.
  if (!c.kmeans_restarts) c.kmeans_restarts = is_gcd_method(c.method) ? 100 : 10;
  if (!c.kmeans_iters) c.kmeans_iters = is_gcd_method(c.method) ? 200 : 300;
  return c;
}

McdlSettings mcdl_settings(const TrainConfig& resolved) {
  const TrainConfig c = resolve_defaults(resolved);
  McdlSettings s;
  s.variant = c.mcdl_variant;
  s.mu = c.mu;
  s.start = *c.mcdl_start;
  s.ramp = *c.mcdl_ramp;
  s.lambda = c.lambda;
  s.tau_s = *c.tau_s;
  s.tau_u = c.tau_u;
  s.mix_alpha = c.mix_alpha;
  s.self_threshold = *c.self_threshold;
  s.class_cap = *c.mcdl_class_cap;
  s.start_fill = *c.mcdl_start_fill;
  s.sup_norm = *c.sup_norm;
  s.losses = c.mcdl_losses;
  s.student_temp = c.student_temp;
  s.sup_weight = c.sup_weight;
  s.seed = c.seed;
  return s;
}

std::vector<ConfigOption> config_options(TrainConfig& c) {
  return {
      {"data-root", "dataset folder (default: the dataset's usual location)", &c.data_root},
      {"weights", "backbone weights (.safetensors from mcdl_convert or mcdl_pretrain)", &c.weights},
      {"model", "model spec when no --weights is given, e.g. img=28,patch=7,dim=64,depth=4,heads=4,chans=1", &c.model},
      {"head-hidden", "hidden width of the SimGCD / GCD head's projection MLP", &c.head_hidden},
      {"head-bottleneck", "output width of the projection MLP", &c.head_bottleneck},
      {"head-init-std", "std of the head MLP weights at initialisation", &c.head_init_std},
      {"method", "simgcd+mcdl (default: MCDL on SimGCD, see --mcdl-variant), simgcd, kmeans, gcd (the GCD "
                 "baseline) or gcd+mcdl (MCDL on GCD, its classifier the per-epoch semi-supervised k-means)",
       enum_field("method", &c.method, method_names())},
      {"device", "auto (GPU when present), cpu or cuda", device_field(c.device)},
      {"precision", "matrix products and the frozen blocks: auto (bf16 on a GPU, fp32 on the CPU), fp32, tf32 or bf16 (bf16 activations in the frozen blocks, products rounded as PyTorch's autocast, fp32 accumulation)", precision_field(c.precision)},
      {"out", "run directory (config, metrics, split, predictions, checkpoints)", &c.out},
      {"seed", "seed of every random draw (sampler, augmentation, initialisation, MixMatch)", &c.seed},
      {"image-size", "crop size S fed to the model; images are resized to int(S/0.875) first", &c.image_size},
      {"prop-labelled", "fraction of the old-class training images that are labelled", &c.prop_labelled},
      {"max-train", "use only the first N training images (0: all)", &c.max_train},
      {"num-classes", "total number of classes K (folder layout); 'auto' is --clusters auto", &c.num_classes},
      {"clusters", "the model's number of clusters: 0 the dataset's K, N, or 'auto': estimated from the labelled "
                   "images as ./mcdl_estimate_k does (config.json records the number)", clusters_field(c)},
      {"k-max", "the largest K --clusters auto tries", &c.k_max},
      {"workers", "data loader threads (auto: none on the CPU, all cores but one with a GPU)", &c.workers},
      {"cache-mem", "image cache memory budget in MiB (0: a quarter of the RAM)", &c.cache_mem_mb},
      {"cache-dir", "keep the decoded, resized images here so later runs skip decoding", &c.cache_dir},
      {"skip-bad-images", "drop unreadable images (after the split is drawn) instead of stopping", &c.skip_bad_images},
      {"image-cache", "all: decode every image once at the start and keep it (memory, then a mapped file); off: "
                      "decode each image when a batch reads it, keeping nothing (ImageNet-1K's size); auto: all up to "
                      "200,000 training images, off above. The same pixels either way",
       enum_field("image-cache", &c.image_cache,
                  {{ImageCacheMode::automatic, "auto"}, {ImageCacheMode::all, "all"}, {ImageCacheMode::off, "off"}})},
      {"epochs", "training epochs", &c.epochs},
      {"batch-size", "samples per batch (each gives 2 views, 3 with MCDL)", &c.batch_size},
      {"shards", "off, or S: the batch's forwards and backwards run on S equal shards, one after another, while "
                 "every loss sees the whole batch (the unsharded result to rounding; docs/scaling.md)",
       off_or_number_field("shards", c.shards)},
      {"batch-stats", "global (every loss over the whole batch) or local: each shard's losses over its own rows "
                      "alone, averaged, as each GPU of a PyTorch DDP run computes them (needs --shards)",
       enum_field("batch-stats", &c.batch_stats, {{BatchStats::global, "global"}, {BatchStats::local, "local"}})},
      {"gpu-collectives", "several processes on GPUs: auto (NCCL when it loads, else host), nccl (required) or host "
                          "(device data through host memory and MPI); the results are the same bytes",
       enum_field("gpu-collectives", &c.gpu_collectives,
                  {{GpuCollectives::automatic, "auto"}, {GpuCollectives::nccl, "nccl"}, {GpuCollectives::host, "host"}})},
      {"lr", "SGD learning rate", &c.lr},
      {"lr-min-factor", "cosine annealing ends at lr times this", &c.lr_min_factor},
      {"momentum", "SGD momentum", &c.momentum},
      {"weight-decay", "weight decay (SimGCD: weights only; gcd: every trained parameter)", &c.weight_decay},
      {"grad-from-block", "first trainable backbone block (auto: the last block only)", &c.grad_from_block},
      {"max-iters", "stop after this many iterations in all (0: no limit)", &c.max_iters},
      {"student-temp", "student temperature of the classifier logits", &c.student_temp},
      {"warmup-teacher-temp", "teacher temperature at epoch 0", &c.warmup_teacher_temp},
      {"teacher-temp", "teacher temperature after the warm-up", &c.teacher_temp},
      {"warmup-teacher-epochs", "epochs of the linear teacher-temperature warm-up", &c.warmup_teacher_epochs},
      {"memax-weight", "mean-entropy weight (auto: the dataset's value, CUB 2, CIFAR-100 4, others 1)", &c.memax_weight},
      {"sup-weight", "weight of the supervised terms in SimGCD's loss (gcd, gcd+mcdl: of SupCon)", &c.sup_weight},
      {"ema-teacher", "simgcd, simgcd+mcdl: off, or the per-step momentum m of an EMA teacher (t = m·t + (1 − m)·θ "
                      "after each step) whose predictions are the self-distillation's targets and, with MCDL, fill "
                      "the memory banks", off_or_number_field("ema-teacher", c.ema_teacher)},
      {"mcdl-variant", "robust (default: the safeguards below) or paper (the paper's method exactly)",
       enum_field("mcdl-variant", &c.mcdl_variant, {{McdlVariant::paper, "paper"}, {McdlVariant::robust, "robust"}})},
      {"mu", "memory bank length (predictions kept per unlabelled sample)", &c.mu},
      {"mcdl-start", "epoch from which the MCDL losses apply (auto: paper 10% of the epochs, robust the teacher warm-up)",
       &c.mcdl_start},
      {"lambda", "weight of L_semi + L_self", &c.lambda},
      {"mcdl-losses", "the DCL losses that train: a comma list of sup, semi, self, or none (ablations)",
       TextField{[&c] { return mcdl_losses_name(c.mcdl_losses); },
                 [&c](const std::string& text) { c.mcdl_losses = parse_mcdl_losses(text); }}},
      {"tau-s", "temperature of L_sup (auto: paper 0.04, robust 0.07)", &c.tau_s},
      {"sup-norm", "L_sup averaged over the high anchors (high: paper) or over labelled + high anchors with "
                   "SimGCD's SupCon weight (union: robust); auto: the variant's", sup_norm_field(c.sup_norm)},
      {"mcdl-ramp", "epochs over which the MCDL losses' weights rise linearly from 0 (auto: paper 0, robust 10% "
                    "of the epochs)", &c.mcdl_ramp},
      {"self-threshold", "L_self only on samples whose weak prediction reaches this confidence (auto: 0 in both "
                         "variants)", &c.self_threshold},
      {"mcdl-class-cap", "class-balanced high bucket: a pseudo-label keeps at most this many times N/K high samples, "
                         "its least confident others count as medium (0: no cap; auto: 0 in both variants)",
       &c.mcdl_class_cap},
      {"mcdl-start-fill", "the MCDL losses start at the first epoch (from --mcdl-start) whose start finds this share of "
                          "the unlabelled images with a full weak window (mu predictions); the ramp counts from there "
                          "(0: at --mcdl-start; auto: 0 in both variants)", &c.mcdl_start_fill},
      {"tau-u", "sharpening temperature", &c.tau_u},
      {"mix-alpha", "MixMatch Beta(alpha, alpha)", &c.mix_alpha},
      {"gcd-head-out", "gcd, gcd+mcdl: width of the head's last layer, where the contrastive losses act", &c.gcd_head_out},
      {"gcd-temperature", "gcd, gcd+mcdl: InfoNCE temperature", &c.gcd_temperature},
      {"kmeans-restarts", "k-means restarts (kmeans, gcd and gcd+mcdl, whose later per-epoch fits warm-start with one; "
                          "auto: 10, gcd 100)", &c.kmeans_restarts},
      {"kmeans-iters", "k-means iterations per restart (auto: 300, gcd and gcd+mcdl 200)", &c.kmeans_iters},
      {"keep-every", "also keep the checkpoint of every N-th epoch (0: only the last)", &c.keep_every},
      {"eval-batch-size", "batch size of the per-epoch evaluation", &c.eval_batch_size},
      {"eval-subset", "evaluate on the first N unlabelled images only, for quick checks (0: all)", &c.eval_subset},
      {"eval-on", "what each evaluation scores: unlabelled (the unlabelled training images, transductive, as the "
                  "papers report), test (the layout's test split, inductive), both, or auto (both where the layout "
                  "has a test split; config.json records the choice)",
       enum_field("eval-on", &c.eval_on, {{EvalOn::automatic, "auto"}, {EvalOn::unlabelled, "unlabelled"},
                                          {EvalOn::test, "test"}, {EvalOn::both, "both"}})},
      {"max-test", "evaluate on N test images only, evenly spaced over the test split (0: all)", &c.max_test},
      {"eval-every", "score every N-th epoch and the last one (0: the last only; the others' metrics are empty)",
       &c.eval_every},
      {"progress", "progress bar on a terminal (true/false)", &c.progress},
      {"val-classes", "validation: hold out this many known classes (and half of the other known classes' "
                      "labelled images) as unlabelled images whose labels score the run (0: off)", &c.val_classes},
  };
}

void set_config_option(TrainConfig& config, const std::string& name, const std::string& value) {
  // An unknown number of classes: the model's clusters are estimated (the dataset's K, where it
  // has one, stays what it is: it scores the run).
  if (name == "num-classes" && value == "auto") {
    config.estimate_clusters = true;
    config.clusters.reset();
    return;
  }
  set_option(config_options(config), name, value);
}

std::string config_to_json(const TrainConfig& config) {
  TrainConfig copy = config;
  return options_to_json(config_options(copy), {{"dataset", copy.dataset}});
}

TrainConfig config_from_json_file(const std::string& path) {
  TrainConfig config;
  for (const auto& [key, value] : options_from_json_file(config_options(config), path, {"dataset"}))
    config.dataset = value;
  return config;
}

TrainConfig config_from_json(const std::string& json, const std::string& where) {
  TrainConfig config;
  for (const auto& [key, value] : options_from_json(config_options(config), json, where, {"dataset"}))
    config.dataset = value;
  return config;
}

void validate_config(const TrainConfig& c) {
  check(c.epochs > 0, "--epochs must be positive");
  check(c.batch_size >= 2, "--batch-size must be at least 2");
  check(!c.shards || *c.shards >= 1, "--shards must be off or at least 1, got ", c.shards.value_or(0));
  check(c.batch_stats == BatchStats::global || c.shards, "--batch-stats local computes each shard's losses alone: ",
        "give the number of shards with --shards S (the number of GPUs of the run to match)");
  check(!c.shards || c.batch_size % *c.shards == 0, "--shards ", c.shards.value_or(0), " does not divide --batch-size ",
        c.batch_size, ": the batch is cut into equal shards; pick a divisor of the batch size (e.g. 2, 4 or 8 for 128)");
  check(c.image_size > 0, "--image-size must be positive");
  check(c.prop_labelled > 0 && c.prop_labelled < 1, "--prop-labelled must be in (0, 1)");
  check(c.lr > 0, "--lr must be positive");
  check(c.mu >= 1, "--mu must be at least 1");
  check(!c.mcdl_ramp || *c.mcdl_ramp >= 0, "--mcdl-ramp must be auto (the variant's) or at least 0");
  check(!c.mcdl_start || *c.mcdl_start >= 0, "--mcdl-start must be auto (the variant's) or at least 0");
  check(!c.self_threshold || (*c.self_threshold >= 0 && *c.self_threshold <= 1),
        "--self-threshold must be in [0, 1] (or auto: the variant's)");
  check(!c.mcdl_class_cap || *c.mcdl_class_cap >= 0, "--mcdl-class-cap must be at least 0 (0: no cap; or auto)");
  check(!c.mcdl_start_fill || (*c.mcdl_start_fill >= 0 && *c.mcdl_start_fill <= 1),
        "--mcdl-start-fill must be in [0, 1] (0: start at --mcdl-start; or auto)");
  check(!c.ema_teacher || (*c.ema_teacher >= 0 && *c.ema_teacher < 1),
        "--ema-teacher must be off or a momentum in [0, 1), got ", c.ema_teacher.value_or(0));
  check(!c.ema_teacher || c.method == Method::simgcd || c.method == Method::simgcd_mcdl, "--ema-teacher: the ",
        method_name(c.method), " method has no teacher (use simgcd or simgcd+mcdl)");
  check(c.val_classes >= 0, "--val-classes must not be negative");
  check(c.val_classes == 0 || !is_gcd_method(c.method), "--val-classes: the ", method_name(c.method),
        " method does not score validation images (use simgcd or simgcd+mcdl)");
  check((!c.tau_s || *c.tau_s > 0) && c.tau_u > 0 && c.student_temp > 0 && c.teacher_temp > 0 &&
            c.warmup_teacher_temp > 0 && c.gcd_temperature > 0,
        "temperatures must be positive");
  check(!c.memax_weight || *c.memax_weight >= 0, "--memax-weight must not be negative (or auto: the dataset's)");
  check(c.mix_alpha > 0, "--mix-alpha must be positive");
  check(c.max_train >= 0 && c.max_iters >= 0 && c.keep_every >= 0 && c.cache_mem_mb >= 0,
        "--max-train, --max-iters, --keep-every and --cache-mem must not be negative");
  check(!c.workers || *c.workers >= 0, "--workers must be auto or at least 0");
  check(!c.grad_from_block || *c.grad_from_block >= 0, "--grad-from-block must be auto (the last block) or at least 0");
  check(c.head_init_std > 0, "--head-init-std must be positive");
  check(c.head_hidden >= 1 && c.head_bottleneck >= 1, "--head-hidden and --head-bottleneck must be positive");
  check(c.eval_subset >= 0, "--eval-subset must not be negative");
  check(c.eval_on != EvalOn::test || c.method == Method::simgcd || c.method == Method::simgcd_mcdl,
        "--eval-on test: the ", method_name(c.method),
        " method clusters the unlabelled images, so it always scores them; use --eval-on both");
  check(c.max_test >= 0, "--max-test must not be negative");
  check(c.eval_every >= 0, "--eval-every must not be negative");
  check(c.eval_batch_size >= 1, "--eval-batch-size must be positive");
  check(c.k_max >= 1, "--k-max must be positive");
  check((!c.kmeans_restarts || *c.kmeans_restarts >= 1) && (!c.kmeans_iters || *c.kmeans_iters >= 1),
        "--kmeans-restarts and --kmeans-iters must be positive (or auto: the method's value)");
  check(c.gcd_head_out >= 1, "--gcd-head-out must be positive");
  check(!c.skip_bad_images || c.image_cache != ImageCacheMode::off,
        "--skip-bad-images leaves out the images the start-up pass cannot read, but --image-cache off has no such "
        "pass (each image is decoded when a batch reads it); pass --image-cache all with it");
}

}  // namespace mcdl
