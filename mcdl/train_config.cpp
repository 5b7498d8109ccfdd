#include "mcdl/train_config.h"

#include <algorithm>

#include "engine/error.h"
#include "engine/ops/linalg.h"

namespace mcdl {

Method parse_method(const std::string& name) {
  if (name == "simgcd") return Method::simgcd;
  if (name == "simgcd+mcdl") return Method::simgcd_mcdl;
  if (name == "kmeans") return Method::kmeans;
  if (name == "gcd") return Method::gcd;
  if (name == "gcd+mcdl") return Method::gcd_mcdl;
  fail("--method: expected simgcd, simgcd+mcdl, kmeans, gcd or gcd+mcdl, got '", name, "'");
}

bool is_gcd_method(Method method) { return method == Method::gcd || method == Method::gcd_mcdl;
}

double effective_memax_weight(const TrainConfig& c) {
  if (c.memax_weight >= 0) return c.memax_weight;
  // SimGCD's scripts: CUB 2, CIFAR-100 4, every other dataset 1.
  if (c.dataset == "cub") return 2.0;
  if (c.dataset == "cifar100") return 4.0;
  return 1.0;
}

int64_t effective_mcdl_start(const TrainConfig& c) {
  if (c.mcdl_start >= 0) return c.mcdl_start;
  // Robust: once the teacher temperature has settled, so that the banks record the predictions
  // the SimGCD loss is sharpening towards, not the warm-up's.
  if (c.mcdl_variant == "robust") return std::min(c.warmup_teacher_epochs, c.epochs - 1);
  return c.epochs / 10;  // 20 of 200, as the public MCDL code
}

TrainConfig with_variant_defaults(TrainConfig c) {
  check(c.mcdl_variant == "paper" || c.mcdl_variant == "robust", "--mcdl-variant: expected paper or robust, got '",
        c.mcdl_variant, "'");
  const bool robust = c.mcdl_variant == "robust";
  c.mcdl_start = effective_mcdl_start(c);
  if (c.tau_s < 0) c.tau_s = robust ? 0.07 : 0.04;  // robust: SimGCD's SupCon temperature
  if (c.sup_norm.empty()) c.sup_norm = robust ? "union" : "high";
  if (c.mcdl_ramp < 0) c.mcdl_ramp = robust ? std::max<int64_t>(1, c.epochs / 10) : 0;
  if (c.self_threshold < 0) c.self_threshold = 0.0;  // robust too: the validation runs gained nothing from a mask
  return c;
}

int64_t effective_kmeans_restarts(const TrainConfig& c) {
  if (c.kmeans_restarts >= 1) return c.kmeans_restarts;
  return is_gcd_method(parse_method(c.method)) ? 100 : 10;  // GCD's k_means.py script; sklearn's n_init
}

int64_t effective_kmeans_iters(const TrainConfig& c) {
  if (c.kmeans_iters >= 1) return c.kmeans_iters;
  return is_gcd_method(parse_method(c.method)) ? 200 : 300;  // GCD's k_means.py script; sklearn's max_iter
}

bool mcdl_loss_enabled(const TrainConfig& c, const std::string& term) {
  std::string list = "," + c.mcdl_losses + ",";
  return list.find("," + term + ",") != std::string::npos;
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
       &c.method},
      {"device", "auto (GPU when present), cpu or cuda", &c.device},
      {"precision", "matrix products and the frozen blocks: auto (bf16 on a GPU, fp32 on the CPU), fp32, tf32 or bf16 (bf16 activations in the frozen blocks, products rounded as PyTorch's autocast, fp32 accumulation)", &c.precision},
      {"out", "run directory (config, metrics, split, predictions, checkpoints)", &c.out},
      {"seed", "seed of every random draw (sampler, augmentation, initialisation, MixMatch)", &c.seed},
      {"image-size", "crop size S fed to the model; images are resized to int(S/0.875) first", &c.image_size},
      {"prop-labelled", "fraction of the old-class training images that are labelled", &c.prop_labelled},
      {"max-train", "use only the first N training images (0: all)", &c.max_train},
      {"num-classes", "total number of classes K (folder layout); 'auto' is --clusters auto", &c.num_classes},
      {"clusters", "the model's number of clusters: 0 the dataset's K, N, or 'auto': estimated from the labelled "
                   "images as ./mcdl_estimate_k does (config.json records the number)", &c.clusters},
      {"k-max", "the largest K --clusters auto tries", &c.k_max},
      {"workers", "data loader threads (-1: automatic: none on the CPU, all cores but one with a GPU)", &c.workers},
      {"cache-mem", "image cache memory budget in MiB (0: a quarter of the RAM)", &c.cache_mem_mb},
      {"cache-dir", "keep the decoded, resized images here so later runs skip decoding", &c.cache_dir},
      {"skip-bad-images", "drop unreadable images (after the split is drawn) instead of stopping", &c.skip_bad_images},
      {"epochs", "training epochs", &c.epochs},
      {"batch-size", "samples per batch (each gives 2 views, 3 with MCDL)", &c.batch_size},
      {"lr", "SGD learning rate", &c.lr},
      {"lr-min-factor", "cosine annealing ends at lr times this", &c.lr_min_factor},
      {"momentum", "SGD momentum", &c.momentum},
      {"weight-decay", "weight decay (SimGCD: weights only; gcd: every trained parameter)", &c.weight_decay},
      {"grad-from-block", "first trainable backbone block (-1: the last block only)", &c.grad_from_block},
      {"max-iters", "stop after this many iterations in all (0: no limit)", &c.max_iters},
      {"student-temp", "student temperature of the classifier logits", &c.student_temp},
      {"warmup-teacher-temp", "teacher temperature at epoch 0", &c.warmup_teacher_temp},
      {"teacher-temp", "teacher temperature after the warm-up", &c.teacher_temp},
      {"warmup-teacher-epochs", "epochs of the linear teacher-temperature warm-up", &c.warmup_teacher_epochs},
      {"memax-weight", "mean-entropy weight (-1: the dataset's value)", &c.memax_weight},
      {"sup-weight", "weight of the supervised terms in SimGCD's loss (gcd, gcd+mcdl: of SupCon)", &c.sup_weight},
      {"mcdl-variant", "robust (default: the safeguards below) or paper (mcdl-spec exactly)", &c.mcdl_variant},
      {"mu", "memory bank length (predictions kept per unlabelled sample)", &c.mu},
      {"mcdl-start", "epoch from which the MCDL losses apply (-1: paper 10% of the epochs, robust the teacher warm-up)",
       &c.mcdl_start},
      {"lambda", "weight of L_semi + L_self", &c.lambda},
      {"mcdl-losses", "the DCL losses that train: a comma list of sup, semi, self, or none (ablations)",
       &c.mcdl_losses},
      {"tau-s", "temperature of L_sup (-1: paper 0.04, robust 0.07)", &c.tau_s},
      {"sup-norm", "L_sup averaged over the high anchors (high: paper) or over labelled + high anchors with "
                   "SimGCD's SupCon weight (union: robust)", &c.sup_norm},
      {"mcdl-ramp", "epochs over which the MCDL losses' weights rise linearly from 0 (-1: paper 0, robust 10% of "
                    "the epochs)", &c.mcdl_ramp},
      {"self-threshold", "L_self only on samples whose weak prediction reaches this confidence (-1: 0 in both "
                         "variants)", &c.self_threshold},
      {"tau-u", "sharpening temperature", &c.tau_u},
      {"mix-alpha", "MixMatch Beta(alpha, alpha)", &c.mix_alpha},
      {"gcd-head-out", "gcd, gcd+mcdl: width of the head's last layer, where the contrastive losses act", &c.gcd_head_out},
      {"gcd-temperature", "gcd, gcd+mcdl: InfoNCE temperature", &c.gcd_temperature},
      {"kmeans-restarts", "k-means restarts (kmeans, gcd and gcd+mcdl, whose later per-epoch fits warm-start with one; "
                          "-1: 10, gcd 100)", &c.kmeans_restarts},
      {"kmeans-iters", "k-means iterations per restart (-1: 300, gcd and gcd+mcdl 200)", &c.kmeans_iters},
      {"keep-every", "also keep the checkpoint of every N-th epoch (0: only the last)", &c.keep_every},
      {"eval-batch-size", "batch size of the per-epoch evaluation", &c.eval_batch_size},
      {"eval-subset", "evaluate on the first N unlabelled images only, for quick checks (0: all)", &c.eval_subset},
      {"eval-on", "what each evaluation scores: unlabelled (the unlabelled training images, transductive, as the "
                  "papers report), test (the layout's test split, inductive), both, or auto (both where the layout "
                  "has a test split; config.json records the choice)", &c.eval_on},
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
  if ((name == "clusters" || name == "num-classes") && value == "auto") {
    config.clusters = -1;
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
  const Method method = parse_method(c.method);
  check(c.device == "auto" || c.device == "cpu" || c.device == "cuda", "--device: expected auto, cpu or cuda, got '",
        c.device, "'");
  if (c.precision != "auto") parse_matmul_precision(c.precision);
  check(c.epochs > 0, "--epochs must be positive");
  check(c.batch_size >= 2, "--batch-size must be at least 2");
  check(c.image_size > 0, "--image-size must be positive");
  check(c.prop_labelled > 0 && c.prop_labelled < 1, "--prop-labelled must be in (0, 1)");
  check(c.lr > 0, "--lr must be positive");
  check(c.mu >= 1, "--mu must be at least 1");
  check(c.mcdl_variant == "paper" || c.mcdl_variant == "robust", "--mcdl-variant: expected paper or robust, got '",
        c.mcdl_variant, "'");
  check(c.sup_norm.empty() || c.sup_norm == "high" || c.sup_norm == "union", "--sup-norm: expected high or union, got '",
        c.sup_norm, "'");
  {
    std::string rest = c.mcdl_losses == "none" ? "" : c.mcdl_losses + ",";
    for (size_t comma; !rest.empty(); rest = rest.substr(comma + 1)) {
      comma = rest.find(',');
      const std::string term = rest.substr(0, comma);
      check(term == "sup" || term == "semi" || term == "self", "--mcdl-losses: expected a comma list of sup, semi ",
            "and self, or none, got '", c.mcdl_losses, "'");
    }
  }
  check(c.mcdl_ramp >= -1, "--mcdl-ramp must be -1 (the variant's) or at least 0");
  check(c.self_threshold == -1.0 || (c.self_threshold >= 0 && c.self_threshold <= 1),
        "--self-threshold must be in [0, 1] (or -1: the variant's)");
  check(c.val_classes >= 0, "--val-classes must not be negative");
  check(c.val_classes == 0 || !is_gcd_method(method), "--val-classes: the ", c.method,
        " method does not score validation images (use simgcd or simgcd+mcdl)");
  check((c.tau_s > 0 || c.tau_s == -1.0) && c.tau_u > 0 && c.student_temp > 0 && c.teacher_temp > 0 && c.warmup_teacher_temp > 0 &&
            c.gcd_temperature > 0,
        "temperatures must be positive");
  check(c.mix_alpha > 0, "--mix-alpha must be positive");
  check(c.max_train >= 0 && c.max_iters >= 0 && c.keep_every >= 0 && c.cache_mem_mb >= 0,
        "--max-train, --max-iters, --keep-every and --cache-mem must not be negative");
  check(c.workers >= -1, "--workers must be -1 (automatic) or at least 0");
  check(c.head_init_std > 0, "--head-init-std must be positive");
  check(c.head_hidden >= 1 && c.head_bottleneck >= 1, "--head-hidden and --head-bottleneck must be positive");
  check(c.eval_subset >= 0, "--eval-subset must not be negative");
  check(c.eval_on == "auto" || c.eval_on == "unlabelled" || c.eval_on == "test" || c.eval_on == "both",
        "--eval-on '", c.eval_on, "': expected unlabelled, test, both or auto");
  check(c.eval_on != "test" || method == Method::simgcd || method == Method::simgcd_mcdl, "--eval-on test: the ",
        c.method, " method clusters the unlabelled images, so it always scores them; use --eval-on both");
  check(c.max_test >= 0, "--max-test must not be negative");
  check(c.eval_every >= 0, "--eval-every must not be negative");
  check(c.eval_batch_size >= 1, "--eval-batch-size must be positive");
  check(c.clusters >= -1 && c.k_max >= 1, "--clusters must be auto, 0 or a positive number, --k-max positive");
  check((c.kmeans_restarts >= 1 || c.kmeans_restarts == -1) && (c.kmeans_iters >= 1 || c.kmeans_iters == -1),
        "--kmeans-restarts and --kmeans-iters must be positive (or -1: the method's value)");
  check(c.gcd_head_out >= 1, "--gcd-head-out must be positive");
}

}  // namespace mcdl
