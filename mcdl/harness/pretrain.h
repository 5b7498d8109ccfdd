// Self-supervised pretraining of a backbone (SimCLR): two augmented views of every training
// image (random resized crop, flip, RandAugment), the backbone's CLS feature through a
// projection MLP, and InfoNCE with one positive (the other view) against the other 2B − 2
// rows; every label is ignored. For domains without a suitable pretrained backbone, which
// DINO is for the paper's datasets, and for the offline CPU demo.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "mcdl/run/options.h"
#include "mcdl/run/train_config.h"  // DeviceChoice, the precision
#include "mcdl/run/run_summary.h"  // RunSummary

namespace mcdl {

enum class PretrainOptimizer { adamw, sgd };

struct PretrainConfig {
  std::string dataset;
  std::string data_root;
  std::string model = "img=28,patch=7,dim=64,depth=4,heads=4,chans=1";  // layers/vit_config.h spec
  std::string out;                 // the backbone file written (-o)
  DeviceChoice device = DeviceChoice::automatic;
  std::optional<MatmulPrecision> precision;  // unset: bf16 on a GPU, fp32 on the CPU (engine/ops/linalg.h)
  PretrainOptimizer optimizer = PretrainOptimizer::adamw;
  uint64_t seed = 0;
  int64_t epochs = 100;
  int64_t batch_size = 256;
  double lr = 1e-3;
  double weight_decay = 0.05;
  int64_t warmup_epochs = 10;
  double temperature = 0.2;
  double crop_scale_min = 0.08;    // RandomResizedCrop scale lower bound
  int64_t projection_hidden = 0;   // 0: 4 × the embedding width
  int64_t max_train = 0;           // first N training images (0: all)
  int64_t max_iters = 0;
  std::optional<int64_t> workers;  // loader threads (unset: none on the CPU, all cores but one with a GPU)
  bool progress = true;
};

std::vector<ConfigOption> pretrain_options(PretrainConfig& config);
void validate_pretrain_config(const PretrainConfig& config);

// Trains and writes config.out after every epoch (atomically); the summary says whether Ctrl-C
// or SIGTERM stopped it (mcdl/run/stop_request.h).
RunSummary run_pretraining(const PretrainConfig& config);

}  // namespace mcdl
