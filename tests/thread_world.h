// The ranks of a world as threads of the test process: for unit tests of code that every rank of a
// multi-process run executes (the real transport, MPI, is tested through mcdl_train under mpirun).
// Each rank's collective calls meet the others' at a barrier, as MPI's do. Each rank has a side
// channel, a second world of the same threads (as MPI's has under full thread support), unless
// the world is made without one.
#pragma once
#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/collective.h"

namespace mcdl::testing {

class ThreadWorld {
 public:
  explicit ThreadWorld(int size, bool side_channel = true)
      : size_(size),
        meeting_(size),
        posted_(static_cast<size_t>(size)),
        side_(side_channel ? std::make_unique<ThreadWorld>(size, false) : nullptr) {}

  // fn(rank's collective) on `size` threads at once; rethrows the first rank's exception. A rank
  // that throws leaves the others waiting, so fn must not throw before a collective call.
  void run(const std::function<void(Collective&)>& fn) {
    std::vector<std::thread> threads;
    std::exception_ptr error;
    std::mutex error_mutex;
    for (int r = 0; r < size_; ++r)
      threads.emplace_back([&, r] {
        Rank rank(*this, r);
        try {
          fn(rank);
        } catch (...) {
          const std::lock_guard lock(error_mutex);
          if (!error) error = std::current_exception();
        }
      });
    for (auto& t : threads) t.join();
    if (error) std::rethrow_exception(error);
  }

 private:
  struct Posted {
    const void* data = nullptr;
    size_t bytes = 0;
  };
  class Rank final : public Collective {
   public:
    Rank(ThreadWorld& world, int rank)
        : world_(world), rank_(rank), side_(world.side_ ? std::make_unique<Rank>(*world.side_, rank) : nullptr) {}
    int rank() const override { return rank_; }
    int size() const override { return world_.size_; }
    std::string transport() const override { return "threads"; }
    void all_gather(const void* send, size_t send_bytes, void* receive, const std::vector<size_t>& counts) override {
      world_.posted_[static_cast<size_t>(rank_)] = {send, send_bytes};
      world_.meeting_.arrive_and_wait();
      size_t offset = 0;
      for (size_t r = 0; r < counts.size(); ++r) {
        if (world_.posted_[r].bytes != counts[r]) {  // the other ranks wait: end the test binary
          std::fprintf(stderr, "ThreadWorld.all_gather: rank %zu sent %zu bytes, rank %d expected %zu\n", r,
                       world_.posted_[r].bytes, rank_, counts[r]);
          std::abort();
        }
        if (counts[r] > 0) std::memcpy(static_cast<char*>(receive) + offset, world_.posted_[r].data, counts[r]);
        offset += counts[r];
      }
      world_.meeting_.arrive_and_wait();  // the senders' buffers stay valid until every rank copied
    }
    void gather(const void* send, size_t send_bytes, void* receive, const std::vector<size_t>& counts,
                int root) override {
      if (rank_ == root) return all_gather(send, send_bytes, receive, counts);
      world_.posted_[static_cast<size_t>(rank_)] = {send, send_bytes};
      world_.meeting_.arrive_and_wait();
      world_.meeting_.arrive_and_wait();
    }
    void broadcast(void* data, size_t bytes, int root) override {
      if (rank_ == root) world_.posted_[static_cast<size_t>(root)] = {data, bytes};
      world_.meeting_.arrive_and_wait();
      if (rank_ != root) std::memcpy(data, world_.posted_[static_cast<size_t>(root)].data, bytes);
      world_.meeting_.arrive_and_wait();
    }
    void barrier() override { world_.meeting_.arrive_and_wait(); }
    [[noreturn]] void abort(int) override { std::abort(); }
    Collective* side_channel() override { return side_.get(); }

   private:
    ThreadWorld& world_;
    int rank_;
    std::unique_ptr<Rank> side_;
  };

  int size_;
  std::barrier<> meeting_;
  std::vector<Posted> posted_;
  std::unique_ptr<ThreadWorld> side_;
};

}  // namespace mcdl::testing
