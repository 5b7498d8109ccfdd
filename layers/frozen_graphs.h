// The frozen blocks' forward as CUDA graphs (EngineSettings::cuda_graphs = frozen): a model's
// frozen prefix is the same kernels on the same weights at every call of a shape, so after a
// shape's first (eager) run its second call records it (engine/captured_function.h) and later
// calls replay the recording: one launch instead of a few hundred, the same bits.
//
// A recording is used only while everything it was made with holds: the input's shape and dtype,
// the engine settings, and each frozen parameter's storage and write count (a load or an
// initialisation writes them, and the bf16 copies made from them change address). The graphs of
// the last few shapes are kept (each holds its intermediates' memory); where recording fails (an
// operation that reads results back, say), the forward runs eagerly from then on, with one note on
// stderr.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/captured_function.h"
#include "engine/settings.h"
#include "engine/tensor.h"

namespace mcdl {

class FrozenGraphs {
 public:
  // The graphs kept at most, and the shapes whose calls are counted until they have one.
  static constexpr size_t max_graphs = 4;
  static constexpr size_t max_candidates = 16;

  // f(input) on `parameters` (the frozen ones f reads), replayed, recorded or eager as above.
  Tensor run(const Tensor& input, const std::vector<Tensor>& parameters, const CapturedFunction::Function& f);

  // How often run() recorded a graph and replayed one: this object's, and the process's (all
  // models together), for tests and logs.
  int64_t recordings() const { return recordings_; }
  int64_t replays() const { return replays_; }
  static int64_t process_recordings();
  static int64_t process_replays();
  static int64_t process_refusals();  // recordings that failed (each model then runs eagerly)
  // The process's counts in one line for a tool's console, e.g. "CUDA graphs of the frozen
  // blocks: 3 recorded, 118 replayed" (", 1 recording refused" added where one failed).
  static std::string process_summary();

 private:
  // A parameter as a recording read it. The storage is held weakly and compared as an object, not
  // an address: a new storage at a freed one's address is another parameter.
  struct ParameterState {
    std::weak_ptr<Storage> storage;
    int64_t offset;
    uint64_t writes;
    bool operator==(const ParameterState& other) const;
  };
  struct Key {
    Shape shape;
    DType dtype;
    EngineSettings settings;
    std::vector<ParameterState> parameters;
    bool operator==(const Key& other) const;
  };
  struct Entry {
    Key key;
    int64_t calls = 0;
    uint64_t last_use = 0;
    std::unique_ptr<CapturedFunction> graph;
  };

  Entry& entry_for(Key key);

  std::vector<Entry> entries_;
  uint64_t clock_ = 0;
  bool failed_ = false;
  int64_t recordings_ = 0, replays_ = 0;
};

}  // namespace mcdl
