#include "layers/frozen_graphs.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "engine/storage.h"

namespace mcdl {
namespace {
std::atomic<int64_t> all_recordings{0}, all_replays{0}, all_refusals{0};
}  // namespace

int64_t FrozenGraphs::process_recordings() { return all_recordings.load(); }
int64_t FrozenGraphs::process_replays() { return all_replays.load(); }
int64_t FrozenGraphs::process_refusals() { return all_refusals.load(); }

std::string FrozenGraphs::process_summary() {
  std::string line = "CUDA graphs of the frozen blocks: " + std::to_string(all_recordings.load()) + " recorded, " +
                     std::to_string(all_replays.load()) + " replayed";
  if (const int64_t refused = all_refusals.load(); refused > 0)
    line += ", " + std::to_string(refused) + (refused == 1 ? " recording" : " recordings") + " refused";
  return line;
}

bool FrozenGraphs::ParameterState::operator==(const ParameterState& other) const {
  const std::shared_ptr<Storage> mine = storage.lock();
  return mine && mine == other.storage.lock() && offset == other.offset && writes == other.writes;
}

bool FrozenGraphs::Key::operator==(const Key& other) const {
  return shape == other.shape && dtype == other.dtype &&
         std::memcmp(&settings, &other.settings, sizeof settings) == 0 && parameters == other.parameters;
}

FrozenGraphs::Entry& FrozenGraphs::entry_for(Key key) {
  for (Entry& entry : entries_)
    if (entry.key == key) return entry;
  // Make room: drop the least recently used shape without a graph, else the least recently used.
  auto older = [](const Entry& a, const Entry& b) { return a.last_use < b.last_use; };
  if (entries_.size() >= max_candidates) {
    auto victim = entries_.end();
    for (auto e = entries_.begin(); e != entries_.end(); ++e)
      if (!e->graph && (victim == entries_.end() || older(*e, *victim))) victim = e;
    if (victim == entries_.end()) victim = std::min_element(entries_.begin(), entries_.end(), older);
    entries_.erase(victim);
  }
  entries_.push_back(Entry{std::move(key), 0, 0, nullptr});
  return entries_.back();
}

Tensor FrozenGraphs::run(const Tensor& input, const std::vector<Tensor>& parameters,
                         const CapturedFunction::Function& f) {
  if (failed_ || !input.device().is_cuda() || engine_settings().cuda_graphs != CudaGraphs::frozen) return f(input);
  Key key{input.shape(), input.dtype(), engine_settings(), {}};
  key.parameters.reserve(parameters.size());
  for (const Tensor& p : parameters)
    key.parameters.push_back(ParameterState{p.storage(), p.storage_offset(), p.storage()->writes()});
  Entry& entry = entry_for(std::move(key));
  entry.last_use = ++clock_;
  if (entry.graph) {
    ++replays_;
    ++all_replays;
    return (*entry.graph)(input);
  }
  if (++entry.calls < 2) return f(input);  // the first call runs eagerly: its caches are made
  Tensor result = f(input);                // the output's shape, and the caches of this very key
  // Keep at most max_graphs: the least recently used graph goes first.
  std::vector<Entry*> with_graph;
  for (Entry& e : entries_)
    if (e.graph) with_graph.push_back(&e);
  if (with_graph.size() >= max_graphs)
    (*std::min_element(with_graph.begin(), with_graph.end(),
                       [](const Entry* a, const Entry* b) { return a->last_use < b->last_use; }))
        ->graph.reset();
  try {
    entry.graph = std::make_unique<CapturedFunction>(f, input, result);
    ++recordings_;
    ++all_recordings;
  } catch (const std::runtime_error& error) {  // cuda::CaptureError, or a library refusing the capture
    failed_ = true;
    ++all_refusals;
    std::fprintf(stderr, "note: the frozen blocks run without CUDA graphs: %s\n", error.what());
  }
  return result;
}

}  // namespace mcdl
