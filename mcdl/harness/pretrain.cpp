#include "mcdl/harness/pretrain.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "data/datasets.h"
#include "data/image_cache.h"
#include "data/loader.h"
#include "engine/device.h"
#include "engine/error.h"
#include "engine/ops.h"
#include "engine/optim/adamw.h"
#include "engine/optim/schedule.h"
#include "engine/optim/sgd.h"
#include "engine/profile.h"
#include "engine/random.h"
#include "io/durable_file.h"
#include "layers/backbone_file.h"
#include "layers/mlp.h"
#include "layers/vision_transformer.h"
#include "mcdl/run/epoch_loop.h"
#include "mcdl/method/simgcd_loss.h"

namespace mcdl {

std::vector<ConfigOption> pretrain_options(PretrainConfig& c) {
  return {
      {"data-root", "dataset folder (default: the dataset's usual location)", &c.data_root},
      {"model", "backbone spec (layers/vit_config.h keys: img, patch, chans, dim, depth, heads, ...)", &c.model},
      {"out", "backbone file to write (.safetensors); also -o", &c.out},
      {"device", "auto, cpu or cuda", device_field(c.device)},
      {"precision", "matrix products and the frozen blocks: auto (bf16 on a GPU, fp32 on the CPU), fp32, tf32 or bf16 (bf16 activations in the frozen blocks, products rounded as PyTorch's autocast, fp32 accumulation)", precision_field(c.precision)},
      {"optimizer", "adamw or sgd (momentum 0.9)",
       enum_field("optimizer", &c.optimizer, {{PretrainOptimizer::adamw, "adamw"}, {PretrainOptimizer::sgd, "sgd"}})},
      {"seed", "seed of every random draw", &c.seed},
      {"epochs", "training epochs", &c.epochs},
      {"batch-size", "images per batch (two views each)", &c.batch_size},
      {"lr", "peak learning rate", &c.lr},
      {"weight-decay", "weight decay (not on biases and 1-D parameters)", &c.weight_decay},
      {"warmup-epochs", "linear warm-up epochs before the cosine decay", &c.warmup_epochs},
      {"temperature", "InfoNCE temperature", &c.temperature},
      {"crop-scale-min", "smallest area fraction of the random resized crop", &c.crop_scale_min},
      {"projection-hidden", "projection MLP hidden width (0: 4 x the embedding width)", &c.projection_hidden},
      {"max-train", "use only the first N training images (0: all)", &c.max_train},
      {"max-iters", "stop after this many iterations in all (0: no limit)", &c.max_iters},
      {"workers", "data loader threads (auto: none on the CPU, all cores but one with a GPU)", &c.workers},
      {"progress", "progress bar on a terminal (true/false)", &c.progress},
  };
}

void validate_pretrain_config(const PretrainConfig& c) {
  check(!c.out.empty(), "no output file: pass -o BACKBONE.safetensors");
  check(c.epochs > 0 && c.batch_size >= 2 && c.lr > 0 && c.temperature > 0, "--epochs, --lr and --temperature must ",
        "be positive and --batch-size at least 2");
  check(c.crop_scale_min > 0 && c.crop_scale_min <= 1, "--crop-scale-min must be in (0, 1]");
  check(c.warmup_epochs >= 0 && c.max_train >= 0 && c.max_iters >= 0 && (!c.workers || *c.workers >= 0),
        "--warmup-epochs, --max-train, --max-iters and --workers must not be negative");
  check(c.warmup_epochs < c.epochs, "--warmup-epochs (", c.warmup_epochs, ") must be fewer than --epochs (", c.epochs,
        "): the warm-up comes before the cosine decay");
}

RunSummary run_pretraining(const PretrainConfig& config) {
  validate_pretrain_config(config);
  // The backbone file is written after every epoch: a full disk or read-only directory is found
  // now, before the images are decoded.
  const std::string out_dir = std::filesystem::path(config.out).parent_path().string();
  probe_writable_directory(out_dir.empty() ? "." : out_dir,
                           "free some space there or choose another -o, then run again");
  const Device device = select_device(device_choice_name(config.device));
  const ScopedEngineSettings precision(&EngineSettings::matmul_precision,
                                       select_matmul_precision(precision_request(config.precision), device));
  DatasetOptions dataset_options;
  dataset_options.max_train = config.max_train;
  const Dataset dataset = load_dataset(config.dataset, config.data_root, dataset_options);
  const VitConfig vit = parse_model_config(config.model).backbone;
  check(vit.in_chans == dataset.channels, "--model has chans=", vit.in_chans, " but ", config.dataset, " images have ",
        dataset.channels, " channel(s)");
  std::vector<int64_t> all(static_cast<size_t>(dataset.size()));
  for (int64_t i = 0; i < dataset.size(); ++i) all[static_cast<size_t>(i)] = i;
  ImageCacheOptions cache_options;
  cache_options.resize_size = TransformSizes{vit.img_size}.resize_size();
  cache_options.progress = config.progress;
  const ImageCache cache(dataset, all, cache_options);
  check(cache.bad_images().empty(), cache.bad_images().size(), " image(s) could not be read, e.g. ",
        cache.bad_images().empty() ? "" : cache.bad_images()[0].path);

  VisionTransformer backbone(vit);
  backbone.initialize(config.seed);
  const int64_t hidden = config.projection_hidden > 0 ? config.projection_hidden : 4 * vit.embed_dim;
  Mlp projection(vit.embed_dim, hidden);
  projection.initialize(config.seed + 1);
  backbone.to(device);
  projection.to(device);
  ParamGroup decay{"decay", {}, config.lr, config.weight_decay}, no_decay{"no_decay", {}, config.lr, 0.0};
  auto add = [&](const std::vector<NamedParameter>& params) {
    for (const auto& p : params) (p.tensor.dim() <= 1 || p.name.find("token") != std::string::npos ||
                                  p.name.find("pos_embed") != std::string::npos ? no_decay : decay).params.push_back(p);
  };
  add(backbone.trainable_parameters());
  add(projection.trainable_parameters());
  std::unique_ptr<Optimizer> optimizer;
  if (config.optimizer == PretrainOptimizer::adamw) optimizer = std::make_unique<AdamW>(std::vector<ParamGroup>{decay, no_decay});
  else optimizer = std::make_unique<Sgd>(std::vector<ParamGroup>{decay, no_decay}, SgdOptions{0.9, false});
  const WarmupCosine schedule(config.lr * 1e-2, config.warmup_epochs, config.lr, config.epochs, config.lr * 1e-3);

  LoaderOptions loader_options;
  loader_options.image_size = vit.img_size;
  loader_options.normalization = Normalization::for_channels(dataset.channels);
  loader_options.views = {ViewKind::pretrain, ViewKind::pretrain};
  loader_options.crop_scale_min = config.crop_scale_min;
  const int64_t cores = std::max<int64_t>(1, std::thread::hardware_concurrency());
  loader_options.workers = config.workers.value_or(device.is_cpu() ? 0 : std::max<int64_t>(1, cores - 1));
  loader_options.prefetch = std::max<int64_t>(1, 2 * loader_options.workers);
  loader_options.seed = config.seed;
  loader_options.device = device;
  BatchLoader loader(cache, loader_options);

  const int64_t b = config.batch_size, num_batches = dataset.size() / b;
  check(num_batches > 0, "--batch-size ", b, " is larger than the dataset (", dataset.size(), " images)");
  std::printf("pretraining %s on %lld images (%s): %lld parameters, %lld batches per epoch\n", config.model.c_str(),
              static_cast<long long>(dataset.size()), device.str().c_str(),
              static_cast<long long>(backbone.parameter_count()), static_cast<long long>(num_batches));
  RunProgress progress;
  Clock::time_point epoch_start;
  auto train = [&](int64_t epoch, MetricsRow& row) {
    epoch_start = Clock::now();
    RandomStream order_stream(config.seed, stream_id("pretrain_order", {epoch}));
    const std::vector<int64_t> order = order_stream.permutation(dataset.size());
    std::vector<std::vector<int64_t>> batches(static_cast<size_t>(num_batches));
    for (int64_t i = 0; i < num_batches * b; ++i) batches[static_cast<size_t>(i / b)].push_back(order[static_cast<size_t>(i)]);
    loader.start(epoch, batches);
    const auto finite = [epoch](const std::vector<double>& values, int64_t iteration) {
      check(std::isfinite(values[0]), "pretraining loss became ", values[0], " at epoch ", epoch, ", iteration ",
            iteration, "; lower --lr");
    };
    EpochLog log("pretrain " + std::to_string(epoch + 1) + "/" + std::to_string(config.epochs), num_batches, b,
                 config.max_iters, config.progress, {"loss"}, finite);
    LoadedBatch batch;
    while (loader.next(batch)) {
      const Tensor images = concat({batch.views[0], batch.views[1]}, 0);
      const Tensor features = profiled(device, "forward", [&] { return projection.forward(backbone.forward(images)); });
      const Tensor loss = info_nce_loss(features, config.temperature);
      backward_and_step(loss, *optimizer);
      if (!log.record({loss}, batch.batch, progress.iterations)) {
        progress.stop = true;
        break;
      }
    }
    return log.finish(row);
  };
  // The backbone file after every epoch, even one cut short by --max-iters: it is the product.
  auto finish = [&](int64_t epoch, MetricsRow& row, bool) {
    save_backbone_file(config.out, backbone);
    std::printf("epoch %lld/%lld  loss %.4f  lr %.6f  %.1f s\n", static_cast<long long>(epoch + 1),
                static_cast<long long>(config.epochs), metric_value(row, "loss"), metric_value(row, "lr"), seconds_since(epoch_start));
    std::fflush(stdout);
    return EvalPhases{};  // nothing scored
  };
  return run_epochs(
      {.epochs = config.epochs, .lr_at = [&](int64_t epoch) { return schedule.lr_at(epoch); }, .device = device},
      *optimizer, progress, {train, finish, {}});
}

}  // namespace mcdl
