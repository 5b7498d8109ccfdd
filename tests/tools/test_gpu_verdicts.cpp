// tools/gpu_verdicts.sh, the written rules of docs/performance.md as a script that reads one
// tools/gpu_check.sh call's stage logs: each rule's verdict on logs made here in the formats the
// stages print (bench_gpu, bench_step through step_graphs, the epoch and fidelity stages, doctest,
// demo-jobs), and each way a rule keeps the default.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>

#include "tests/tool_binary.h"

namespace fs = std::filesystem;

namespace {

fs::path repo_root() { return fs::absolute(fs::path(__FILE__)).parent_path().parent_path().parent_path(); }

// The logs of a call in which every rule's conditions hold: the suite passed; cudnn is the fastest
// attention; the block is faster with tanh and its photos keep cosine 0.9996; graphs make SimGCD
// 3.1% and MCDL 2.6% faster (best of two rounds), the forward 0.4% slower, the epoch's training
// shorter, and they replayed in both; four demo runs at once take a third of the time with the
// same table.
std::map<std::string, std::string> favourable_logs() {
  std::map<std::string, std::string> logs;
  logs["test"] = "[doctest] test cases: 130 | 130 passed | 0 failed | 0 skipped\n[doctest] Status: SUCCESS!\n";
  logs["test-wgmma"] = "[doctest] test cases: 3 | 3 passed | 0 failed | 127 skipped\n[doctest] Status: SUCCESS!\n";
  logs["bench"] =
      "qkv 768->2304                bf16                   0.151 ms    590.0 TFLOP/s\n"
      "cuDNN                        cuDNN 9.14.0\n"
      "attention [unfused]          bf16                   0.563 ms     27.0 TFLOP/s\n"
      "attention [flash]            bf16                   0.210 ms     73.0 TFLOP/s\n"
      "attention [fused]            bf16                   0.333 ms     46.0 TFLOP/s\n"
      "attention [cudnn]            bf16                   0.070 ms    219.0 TFLOP/s\n"
      "attention [wgmma]            bf16                   0.150 ms    102.0 TFLOP/s\n"
      "whole block [flash]          bf16                   0.950 ms    300.0 TFLOP/s\n"
      "whole block [fused]          bf16                   1.081 ms    290.0 TFLOP/s\n"
      "whole block [cudnn]          bf16                   0.800 ms    350.0 TFLOP/s\n"
      "whole block [tanh GELU, fused] bf16                   0.990 ms    310.0 TFLOP/s\n"
      "whole block [cudnn GELU, fused] bf16                   1.010 ms    305.0 TFLOP/s\n";
  logs["fidelity"] =
      "bf16: CLS cosine to fp32 over 7 photos: min 0.999880, mean 0.999910\n"
      "bf16-tanh-gelu: CLS cosine to fp32 over 7 photos: min 0.999600, mean 0.999800\n"
      "bf16-cudnn-gelu: CLS cosine to fp32 over 7 photos: min 0.999900, mean 0.999950\n";
  std::string steps = "round 1, graphs off: bench_step: vit_base_patch16 + SimGCD head, batch 128\n";
  const char* rounds[][3] = {{"13.000", "30.000", "60.000"}, {"12.900", "29.100", "58.500"},
                             {"12.800", "29.900", "60.100"}, {"12.850", "29.000", "59.000"}};
  for (int r = 0; r < 4; ++r) {
    const std::string prefix = "round " + std::to_string(r / 2 + 1) + ", graphs " + (r % 2 ? "frozen" : "off") + ": ";
    steps += prefix + "forward\tbf16\t" + rounds[r][0] + "\t1.0\n" + prefix + "simgcd\tbf16\t" + rounds[r][1] +
             "\t1.0\n" + prefix + "mcdl\tbf16\t" + rounds[r][2] + "\t1.0\n";
  }
  logs["step-graphs"] = steps + "round 1, graphs frozen: bench_step: CUDA graphs of the frozen blocks: 2 recorded, 31 replayed\n" +
                        "round 2, graphs frozen: bench_step: CUDA graphs of the frozen blocks: 2 recorded, 31 replayed\n";
  logs["epoch-bf16"] =
      "train_seconds per epoch (bf16): 2.900 2.440 \neval_seconds per epoch (bf16): 1.700 1.650 \n";
  logs["epoch-bf16-graphs"] =
      "train_seconds per epoch (bf16, CUDA graphs frozen): 2.800 2.400 \n"
      "eval_seconds per epoch (bf16, CUDA graphs frozen): 0.500 0.400 \n"
      "CUDA graphs of the frozen blocks: 4 recorded, 180 replayed\n";
  logs["demo-jobs"] =
      "DEMO_JOBS=1, CUDA graphs off: 120 s for 4 SimGCD runs\nDEMO_JOBS=4, CUDA graphs off: 40 s for 4 SimGCD runs\n"
      "table with 4: the same\n";
  logs["step"] =
      "workload   precision  engine img/s  PyTorch img/s  ratio  compiled img/s  ratio\n"
      "forward    fp32             1195.0         1210.0   0.99               -      -\n"
      "simgcd     bf16             5600.0         3038.0   1.84          3326.0   1.68\n";
  // The engine alone with the other attentions (tools/gpu_check.sh's step_attention), its images/s
  // the last column; the ratios are taken against the step stages' PyTorch eager column.
  logs["step-attention"] =
      "attention flash, vit_base_patch16: bench_step: vit_base_patch16 + SimGCD head, batch 128\n"
      "attention flash, vit_base_patch16: simgcd\tbf16\t25.000\t5120.0\n"
      "attention flash, vit_base_patch16: mcdl\tbf16\t50.000\t2560.0\n"
      "attention wgmma, vit_base_patch16: simgcd\tbf16\t22.000\t5818.2\n"
      "attention cudnn, vit_base_patch16: simgcd\tbf16\t20.000\t6400.0\n"
      "attention cudnn, vit_base_patch14_dinov2: simgcd\tbf16\t30.000\t4266.7\n"
      "attention cudnn+tanh-gelu, vit_base_patch16: simgcd\tbf16\t19.000\t6736.8\n";
  logs["step-dinov2"] =
      "workload   precision  engine img/s  PyTorch img/s  ratio  compiled img/s  ratio\n"
      "simgcd     bf16             3000.0         1700.0   1.76               -      -\n";
  return logs;
}

struct Verdicts {
  int exit_code;
  std::string out, err;
};

Verdicts run_verdicts(const std::map<std::string, std::string>& logs, const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("mcdl_gpu_verdicts_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& [stage, text] : logs) std::ofstream(dir / (stage + ".log")) << text;
  const fs::path out = dir / "out.txt", err = dir / "err.txt";
  const std::string script = (repo_root() / "tools" / "gpu_verdicts.sh").string();
  const mcdl::testing::CommandOutcome outcome =
      mcdl::testing::run_command("{ '" + script + "' '" + dir.string() + "' > '" + out.string() + "'; }", err);
  std::stringstream text;
  text << std::ifstream(out).rdbuf();
  fs::remove_all(dir);
  return {outcome.status, text.str(), outcome.err};
}

}  // namespace

TEST_CASE("gpu verdicts: every rule's conditions met gives each new default, and the targets met or not") {
  const Verdicts v = run_verdicts(favourable_logs(), "favourable");
  CHECK(v.exit_code == 0);
  CHECK(v.out.find("verdict attention: cudnn (fused 0.333 ms, flash 0.210 ms, cudnn 0.070 ms, wgmma 0.150 ms)") !=
        std::string::npos);
  CHECK(v.out.find("verdict bf16 GELU: tanh (block with erf 1.081 ms, cudnn 1.010 ms (photos' min cosine 0.999900), "
                   "tanh 0.990 ms (photos' min cosine 0.999600); fused attention)") != std::string::npos);
  CHECK(v.out.find("verdict CUDA graphs: frozen (steps with graphs: forward -0.4%, mcdl +2.6%, simgcd +3.1%; "
                   "train_seconds 5.200 s against 5.340 s)") != std::string::npos);
  CHECK(v.out.find("verdict demo jobs on a GPU: 4 (4 runs one at a time 120 s, four at once 40 s") !=
        std::string::npos);
  CHECK(v.out.find("bf16 SimGCD step / PyTorch eager: 1.84 (target >= 1.8: met)") != std::string::npos);
  CHECK(v.out.find("bf16 SimGCD step / torch.compile: 1.68 (target >= 1.5: met)") != std::string::npos);
  CHECK(v.out.find("fp32 ViT-B/16 forward / PyTorch: 0.99 (target >= 1.0: not met)") != std::string::npos);
  CHECK(v.out.find("bf16 SimGCD + MCDL step / PyTorch eager: not measured") != std::string::npos);
  CHECK(v.out.find("DINOv2 ViT-B/14 bf16 SimGCD step / PyTorch eager (bound: ViT-B/16's ratio): 1.76 (target >= "
                   "1.84: not met)") != std::string::npos);
  CHECK(v.out.find("bf16 SimGCD step / PyTorch eager, flash attention: 1.69 (target >= 1.8: not met)") !=
        std::string::npos);
  CHECK(v.out.find("bf16 SimGCD step / PyTorch eager, cudnn attention: 2.11 (target >= 1.8: met)") !=
        std::string::npos);
  CHECK(v.out.find("bf16 SimGCD + MCDL step / PyTorch eager, flash attention: not measured") != std::string::npos);
  CHECK(v.out.find("bf16 SimGCD step / PyTorch eager, wgmma attention: 1.92 (target >= 1.8: met)") !=
        std::string::npos);
  CHECK(v.out.find("DINOv2 ViT-B/14 bf16 SimGCD step / PyTorch eager, wgmma attention (bound: ViT-B/16's ratio): "
                   "not measured") != std::string::npos);
  CHECK(v.out.find("bf16 SimGCD step / PyTorch eager, cudnn attention and tanh GELU: 2.22 (target >= 1.8: met)") !=
        std::string::npos);
  CHECK(v.out.find("bf16 SimGCD step / PyTorch eager, cudnn attention and cudnn GELU: not measured") !=
        std::string::npos);
  CHECK(v.out.find("DINOv2 ViT-B/14 bf16 SimGCD step / PyTorch eager, cudnn attention and") == std::string::npos);
  CHECK(v.out.find("DINOv2 ViT-B/14 bf16 SimGCD step / PyTorch eager, cudnn attention (bound: ViT-B/16's ratio): "
                   "2.51 (target >= 2.11: met)") != std::string::npos);
  CHECK(v.out.find("DINOv2 ViT-B/14 bf16 SimGCD step / PyTorch eager, flash attention (bound: ViT-B/16's ratio): "
                   "not measured") != std::string::npos);
  CHECK(v.out.find("(best algorithm): 219.0 (target >= 200: met)") != std::string::npos);
  CHECK(v.out.find("epoch-bf16: last epoch's eval seconds: 1.650 (target <= 0.5: not met)") != std::string::npos);
  CHECK(v.out.find("epoch-bf16-graphs: last epoch's train + eval seconds: 2.80 (target <= 2.5: not met)") !=
        std::string::npos);
  CHECK(v.out.find("bf16 CLS cosine to fp32 (min over the photos): 0.999880 (target >= 0.9995: met)") !=
        std::string::npos);
}

TEST_CASE("gpu verdicts: a GPU suite that failed (its wgmma cases included) or did not run keeps every default") {
  auto logs = favourable_logs();
  logs["test"] = "[doctest] test cases: 130 | 129 passed | 1 failed | 0 skipped\n[doctest] Status: FAILURE!\n";
  Verdicts v = run_verdicts(logs, "suite-failed");
  CHECK(v.out.find("GPU suite: the GPU suite failed") != std::string::npos);
  CHECK(v.out.find("verdict attention: fused, unchanged (the GPU suite failed; fastest cudnn") != std::string::npos);
  CHECK(v.out.find("verdict bf16 GELU: erf, unchanged") != std::string::npos);
  CHECK(v.out.find("verdict CUDA graphs: off, unchanged") != std::string::npos);
  // The wgmma cases run in a process of their own: their failure fails the suite too.
  logs = favourable_logs();
  logs["test-wgmma"] = "[doctest] test cases: 3 | 2 passed | 1 failed | 127 skipped\n[doctest] Status: FAILURE!\n";
  v = run_verdicts(logs, "wgmma-failed");
  CHECK(v.out.find("GPU suite: the GPU suite failed (its wgmma cases, run on their own)") != std::string::npos);
  CHECK(v.out.find("verdict attention: fused, unchanged (the GPU suite failed (its wgmma cases") != std::string::npos);
  logs.erase("test-wgmma");  // a call from before the split: the whole suite in one log
  v = run_verdicts(logs, "wgmma-in-suite");
  CHECK(v.out.find("GPU suite: the GPU suite passed") != std::string::npos);
  logs.erase("test");
  v = run_verdicts(logs, "suite-missing");
  CHECK(v.out.find("GPU suite: the GPU suite did not run") != std::string::npos);
  CHECK(v.out.find("verdict CUDA graphs: off, unchanged") != std::string::npos);
}

TEST_CASE("gpu verdicts: each condition of the CUDA graph rule keeps graphs off when it fails") {
  SUBCASE("MCDL's step less than 2% faster") {
    auto logs = favourable_logs();
    // Round 1 frozen 58.5 → 59.0, round 2 frozen 59.0 → 59.5: the better is 59.0 against off's 60.0.
    std::string& steps = logs["step-graphs"];
    for (const auto& [from, to] : {std::pair<std::string, std::string>{"mcdl\tbf16\t59.000", "mcdl\tbf16\t59.500"},
                                   std::pair<std::string, std::string>{"mcdl\tbf16\t58.500", "mcdl\tbf16\t59.000"}})
      steps.replace(steps.find(from), from.size(), to);
    const Verdicts v = run_verdicts(logs, "mcdl-slow");
    CHECK(v.out.find("verdict CUDA graphs: off, unchanged (steps with graphs: forward -0.4%, mcdl +1.7%") !=
          std::string::npos);
  }
  SUBCASE("the forward more than 1% slower") {
    auto logs = favourable_logs();
    std::string& steps = logs["step-graphs"];
    for (const std::string from : {"graphs frozen: forward\tbf16\t12.900", "graphs frozen: forward\tbf16\t12.850"})
      steps.replace(steps.find(from), from.size(), "graphs frozen: forward\tbf16\t13.000");
    const Verdicts v = run_verdicts(logs, "forward-slow");
    CHECK(v.out.find("verdict CUDA graphs: off, unchanged (steps with graphs: forward -1.5%") != std::string::npos);
  }
  SUBCASE("the epoch's training longer with graphs") {
    auto logs = favourable_logs();
    logs["epoch-bf16-graphs"] = "train_seconds per epoch (bf16, CUDA graphs frozen): 2.950 2.400 \n";
    const Verdicts v = run_verdicts(logs, "epoch-slow");
    CHECK(v.out.find("verdict CUDA graphs: off, unchanged (") != std::string::npos);
    CHECK(v.out.find("train_seconds 5.350 s against 5.340 s") != std::string::npos);
  }
  SUBCASE("graphs that never replayed, or a recording refused") {
    for (const char* line : {"CUDA graphs of the frozen blocks: 0 recorded, 0 replayed, 1 recording refused\n",
                             "CUDA graphs of the frozen blocks: 3 recorded, 0 replayed\n", ""}) {
      auto logs = favourable_logs();
      logs["epoch-bf16-graphs"] = "train_seconds per epoch (bf16, CUDA graphs frozen): 2.800 2.400 \n" + std::string(line);
      const Verdicts v = run_verdicts(logs, "not-replayed");
      INFO(line);
      CHECK(v.out.find("verdict CUDA graphs: off, unchanged (") != std::string::npos);
      CHECK(v.out.find("the graphs did not replay in epoch-bf16-graphs.log") != std::string::npos);
    }
  }
  SUBCASE("a missing epoch row") {
    auto logs = favourable_logs();
    logs.erase("epoch-bf16-graphs");
    const Verdicts v = run_verdicts(logs, "epoch-missing");
    CHECK(v.out.find("verdict CUDA graphs: undecided (needs the step and epoch stages)") != std::string::npos);
  }
}

TEST_CASE("gpu verdicts: the GELU gate, the attention without cuDNN, and the demo's runs at a time") {
  auto logs = favourable_logs();
  logs["fidelity"] =
      "bf16-tanh-gelu: CLS cosine to fp32 over 7 photos: min 0.999400, mean 0.999800\n"
      "bf16-cudnn-gelu: CLS cosine to fp32 over 7 photos: min 0.999900, mean 0.999950\n";
  std::string& bench = logs["bench"];
  const std::string cudnn = "attention [cudnn]            bf16                   0.070 ms    219.0 TFLOP/s\n";
  bench.replace(bench.find(cudnn), cudnn.size(), "attention [cudnn]            unavailable: no engine\n");
  logs["demo-jobs"] =
      "DEMO_JOBS=1, CUDA graphs off: 100 s for 4 SimGCD runs\nDEMO_JOBS=4, CUDA graphs off: 40 s for 4 SimGCD runs\n"
      "table with 4: DIFFERENT\n";
  const Verdicts v = run_verdicts(logs, "gates");
  // tanh is faster but fails the photos' gate: cudnn, the next fastest, beats erf.
  CHECK(v.out.find("verdict bf16 GELU: cudnn (block with erf 1.081 ms, cudnn 1.010 ms (photos' min cosine "
                   "0.999900), tanh 0.990 ms (photos' min cosine 0.999400); fused attention)") != std::string::npos);
  CHECK(v.out.find("verdict attention: wgmma (fused 0.333 ms, flash 0.210 ms, cudnn unavailable, wgmma 0.150 ms)") !=
        std::string::npos);
  CHECK(v.out.find("(best algorithm): 102.0 (target >= 200: not met)") != std::string::npos);
  CHECK(v.out.find("verdict demo jobs on a GPU: 1, unchanged (4 runs one at a time 100 s, four at once 40 s, tables "
                   "not shown the same)") != std::string::npos);
  // Without cuDNN's GELU, tanh failing its gate leaves erf; a candidate timed without its photos'
  // row leaves the rule undecided.
  const std::string cudnn_gelu = "whole block [cudnn GELU, fused] bf16                   1.010 ms    305.0 TFLOP/s\n";
  bench.replace(bench.find(cudnn_gelu), cudnn_gelu.size(), "whole block [cudnn GELU, fused] unavailable: no plan\n");
  const Verdicts no_cudnn = run_verdicts(logs, "gelu-no-cudnn");
  CHECK(no_cudnn.out.find("verdict bf16 GELU: erf, unchanged (block with erf 1.081 ms, cudnn unavailable (photos' min "
                          "cosine 0.999900), tanh 0.990 ms (photos' min cosine 0.999400)") != std::string::npos);
  logs["fidelity"] = "bf16-cudnn-gelu: CLS cosine to fp32 over 7 photos: min 0.999900, mean 0.999950\n";
  const Verdicts no_photos = run_verdicts(logs, "gelu-no-photos");
  CHECK(no_photos.out.find("verdict bf16 GELU: undecided (a row is missing: block with erf 1.081 ms") !=
        std::string::npos);
}

TEST_CASE("gpu verdicts: no logs at all leave every rule undecided; no folder is one clear error") {
  Verdicts v = run_verdicts({}, "empty");
  CHECK(v.exit_code == 0);
  CHECK(v.out.find("verdict attention: undecided (no bench stage)") != std::string::npos);
  CHECK(v.out.find("verdict bf16 GELU: undecided") != std::string::npos);
  CHECK(v.out.find("verdict demo jobs on a GPU: undecided (no demo-jobs stage)") != std::string::npos);
  CHECK(v.out.find("bf16 SimGCD step / PyTorch eager: not measured") != std::string::npos);
  CHECK(v.out.find("DINOv2 ViT-B/14 bf16 SimGCD step / PyTorch eager (bound: ViT-B/16's ratio): not measured") !=
        std::string::npos);

  const fs::path err = fs::temp_directory_path() / ("mcdl_gpu_verdicts_err_" + std::to_string(::getpid()));
  const std::string script = (repo_root() / "tools" / "gpu_verdicts.sh").string();
  const mcdl::testing::CommandOutcome missing = mcdl::testing::run_command("'" + script + "' /nonexistent/logs", err);
  CHECK(missing.status == 2);
  CHECK(missing.err.find("expected the folder of one gpu_check.sh call's stage logs, got '/nonexistent/logs'") !=
        std::string::npos);
  fs::remove(err);
}
