// End-to-end benchmark of a training step on one device: DINO ViT-B/16, or another named backbone
// (--model: DINOv2's ViT-B/14 with or without registers), random weights (speed does not depend on
// their values), with the SimGCD head, blocks 0..10 frozen, as SimGCD trains.
// Workloads:
//   forward  the backbone's CLS features of a batch (evaluation, no graph);
//   simgcd   a SimGCD step: two views of the batch, forward, SimGCD's losses, backward, SGD;
//   mcdl     the simgcd step plus MCDL's: the memory banks, the buckets, L_sup, L_semi with the
//            MixMatch forward and L_self on a third (strong) view.
// Compute only: the views are made once on the device, as tools/bench_torch_step.py does for
// PyTorch. Prints "workload<TAB>precision<TAB>ms per step<TAB>images per second" (images: the
// batch's samples, whatever number of views each has) for `make bench` / `make bench-gpu`.
// --cuda-graphs frozen replays the frozen blocks' forward as CUDA graphs (layers/frozen_graphs.h).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "engine/autograd.h"
#include "engine/device.h"
#include "engine/ops.h"
#include "engine/optim/sgd.h"
#include "engine/random.h"
#include "engine/settings.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cuda/runtime.h"
#include "layers/frozen_graphs.h"
#include "layers/simgcd_model.h"
#include "layers/vit_config.h"
#include "mcdl/method/mcdl_step.h"
#include "mcdl/method/memory_bank.h"
#include "mcdl/method/simgcd_loss.h"
#include "mcdl/run/train_config.h"

using namespace mcdl;

namespace {

struct Settings {
  std::string device = "auto", model = "vit_base_patch16", precision = "fp32", workloads = "forward,simgcd,mcdl",
              cuda_graphs = "off";
  int64_t batch = 128, iterations = 10, warmup = 3, classes = 200;
};

const char* const usage =
    "usage: bench_step [--device auto|cpu|cuda] [--model NAME] [--precision fp32|tf32|bf16] [--batch N]\n"
    "                  [--iterations N] [--warmup N] [--workloads forward,simgcd,mcdl] [--cuda-graphs off|frozen]\n";

Settings parse(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    check(i + 1 < argc, arg, " needs a value\n", usage);
    const std::string value = argv[++i];
    if (arg == "--device") s.device = value;
    else if (arg == "--model") s.model = value;
    else if (arg == "--precision") s.precision = value;
    else if (arg == "--workloads") s.workloads = value;
    else if (arg == "--cuda-graphs") s.cuda_graphs = value;
    else if (arg == "--batch") s.batch = std::stoll(value);
    else if (arg == "--iterations") s.iterations = std::stoll(value);
    else if (arg == "--warmup") s.warmup = std::stoll(value);
    else fail("unknown option '", arg, "'\n", usage);
  }
  check(s.batch >= 2 && s.iterations >= 1 && s.warmup >= 0, "--batch must be at least 2, --iterations at least 1");
  return s;
}

// Median wall time of one call of `step` (after `warmup` calls), the device drained after each.
double median_ms(const Settings& s, Device device, const std::function<void()>& step) {
  auto drain = [&] {
    if (device.is_cuda()) cuda::synchronize();
  };
  for (int64_t i = 0; i < s.warmup; ++i) step();
  drain();
  std::vector<double> times;
  for (int64_t i = 0; i < s.iterations; ++i) {
    const auto start = std::chrono::steady_clock::now();
    step();
    drain();
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

Tensor random_images(int64_t count, int64_t size, uint64_t seed, Device device) {
  RandomStream stream(seed, stream_id("bench_step"));
  return rand_uniform({count, 3, size, size}, DType::f32, stream, -2, 2).to(device);
}

// SimGCD's batch: the first half labelled (classes cycling over the old half), the rest unlabelled,
// each unlabelled sample with its own memory-bank slot.
struct BenchBatch {
  std::vector<int64_t> labels, bank_index;
  std::vector<uint8_t> labelled;
};
BenchBatch bench_batch(int64_t batch, int64_t classes) {
  BenchBatch b;
  for (int64_t i = 0; i < batch; ++i) {
    const bool is_labelled = i < batch / 2;
    b.labelled.push_back(is_labelled);
    b.labels.push_back(is_labelled ? i % (classes / 2) : -1);
    b.bank_index.push_back(is_labelled ? -1 : i - batch / 2);
  }
  return b;
}

void report(const char* workload, const Settings& s, double ms) {
  std::printf("%s\t%s\t%.3f\t%.1f\n", workload, s.precision.c_str(), ms, 1000.0 * static_cast<double>(s.batch) / ms);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Settings s = parse(argc, argv);
    const Device device = select_device(s.device);
    const ScopedEngineSettings precision(&EngineSettings::matmul_precision,
                                         select_matmul_precision(s.precision, device));
    const ScopedEngineSettings graphs(&EngineSettings::cuda_graphs, parse_cuda_graphs(s.cuda_graphs));
    std::fprintf(stderr, "bench_step: %s + SimGCD head, batch %lld, %s, %s, CUDA graphs %s\n", s.model.c_str(),
                 static_cast<long long>(s.batch),
                 device.is_cuda() ? cuda::device_description().c_str() : ("CPU, OpenBLAS " + cpu::openblas_core()).c_str(),
                 s.precision.c_str(), s.cuda_graphs.c_str());

    ModelConfig config;
    config.backbone = parse_model_config(s.model).backbone;
    config.head.num_classes = s.classes;
    SimGCDModel model(config);
    model.initialize(1);
    model.set_grad_from_block(11);
    model.to(device);
    Sgd optimizer({ParamGroup{"all", model.trainable_parameters(), 0.1, 5e-5}}, SgdOptions{0.9});

    const int64_t size = config.backbone.img_size;
    const Tensor weak1 = random_images(s.batch, size, 1, device), weak2 = random_images(s.batch, size, 2, device);
    const Tensor strong = random_images(s.batch, size, 3, device), both = concat({weak1, weak2}, 0);
    const BenchBatch batch = bench_batch(s.batch, s.classes);
    SimGCDLossConfig loss_config;
    TrainConfig train_config;
    train_config.mu = 4;  // full rings after 4 steps, so the warm-up reaches the buckets' steady state
    const McdlSettings mcdl_config = mcdl_settings(resolve_defaults(train_config));
    McdlStep mcdl_step(mcdl_config);
    MemoryBank bank_weak(s.batch, s.classes, mcdl_config.mu, device), bank_strong(s.batch, s.classes, mcdl_config.mu, device);
    int64_t iteration = 0;

    auto step = [&](bool mcdl) {
      const HeadOutput out = model.forward(both);
      Tensor total = simgcd_loss(out.logits, out.projection, batch.labels, batch.labelled, 100, loss_config).total;
      if (mcdl) {
        const McdlBatch step_batch{out.logits,     out.projection, weak1, strong, batch.labels,
                                   batch.labelled, batch.bank_index, 100, iteration};
        const auto logits = [&model](const Tensor& images) { return model.forward(images).logits; };
        const McdlTerms extra = mcdl_step.run(logits, step_batch, bank_weak, bank_strong, true);
        total = total + extra.sup + (extra.semi + extra.self) * mcdl_config.lambda;
      }
      ++iteration;
      optimizer.zero_grad();
      total.backward();
      optimizer.step();
    };

    std::stringstream list(s.workloads);
    std::string workload;
    while (std::getline(list, workload, ',')) {
      if (workload == "forward") {
        report("forward", s, median_ms(s, device, [&] {
                 NoGradGuard no_grad;
                 Tensor features = model.backbone.forward(weak1);
               }));
      } else if (workload == "simgcd" || workload == "mcdl") {
        const bool mcdl = workload == "mcdl";
        Settings warmed = s;
        if (mcdl) warmed.warmup = std::max<int64_t>(s.warmup, mcdl_config.mu);
        report(workload.c_str(), s, median_ms(warmed, device, [&] { step(mcdl); }));
      } else {
        fail("unknown workload '", workload, "': expected forward, simgcd or mcdl");
      }
    }
    // Whether the graphs ran: a recording refused leaves the steps eager (tools/gpu_verdicts.sh reads it).
    if (device.is_cuda() && engine_settings().cuda_graphs == CudaGraphs::frozen)
      std::fprintf(stderr, "bench_step: %s\n", FrozenGraphs::process_summary().c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
