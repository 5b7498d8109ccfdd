// The commit_group / wait_group bookkeeping of the asynchronous instructions the emulator defers
// (cp.async in kernels/cuda/async_copy.h, wgmma.mma_async in wgmma.h): items queued in issue
// order, closed into groups by commit(), and landed, oldest first, by wait(pending), which leaves
// the newest `pending` committed groups (and anything not committed yet) queued.
#pragma once
#include <cstddef>
#include <utility>
#include <vector>

namespace mcdl::emu::detail {

template <class Item>
class CommitGroups {
 public:
  void push(Item item) { items_.push_back(std::move(item)); }
  void commit() { group_ends_.push_back(items_.size()); }

  // Calls land(item) on every item of the committed groups but the newest `pending`, then drops them.
  template <class Land>
  void wait(size_t pending, Land land) {
    if (group_ends_.size() <= pending) return;
    const size_t groups = group_ends_.size() - pending, done = group_ends_[groups - 1];
    for (size_t i = 0; i < done; ++i) land(items_[i]);
    items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(done));
    group_ends_.erase(group_ends_.begin(), group_ends_.begin() + static_cast<std::ptrdiff_t>(groups));
    for (size_t& end : group_ends_) end -= done;
  }

 private:
  std::vector<Item> items_;         // in issue order, landed ones removed
  std::vector<size_t> group_ends_;  // per committed group, the end of its items in items_
};

}  // namespace mcdl::emu::detail
