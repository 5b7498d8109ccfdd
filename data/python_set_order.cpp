#include "data/python_set_order.h"

#include "engine/error.h"

namespace mcdl {
namespace {

constexpr int64_t kEmpty = -1;
constexpr size_t kLinearProbes = 9;  // LINEAR_PROBES
constexpr int kPerturbShift = 5;     // PERTURB_SHIFT
constexpr size_t kMinSize = 8;       // PySet_MINSIZE

// A CPython set holding distinct non-negative ints, grown by insertion only (no dummies, so
// set_add_entry and set_insert_clean probe the same way).
class IntSet {
 public:
  IntSet() : table_(kMinSize, kEmpty) {}

  void add(int64_t key) {
    insert_into(table_, key);
    ++used_;
    if (static_cast<size_t>(used_) * 5 >= mask() * 3) resize(used_ > 50000 ? used_ * 2 : used_ * 4);
  }

  // set_merge into an empty set: one resize up front, then the other table copied slot for
  // slot when the sizes agree, else re-inserted in the other's table order.
  static IntSet copy_of(const IntSet& other) {
    IntSet result;
    if (other.used_ * 5 >= static_cast<int64_t>(result.mask()) * 3) result.resize(other.used_ * 2);
    if (result.table_.size() == other.table_.size()) {
      result.table_ = other.table_;
    } else {
      for (int64_t key : other.table_)
        if (key != kEmpty) insert_into(result.table_, key);
    }
    result.used_ = other.used_;
    return result;
  }

  const std::vector<int64_t>& table() const { return table_; }  // iteration order, kEmpty = free
  int64_t size() const { return used_; }

 private:
  size_t mask() const { return table_.size() - 1; }

  static void insert_into(std::vector<int64_t>& table, int64_t key) {
    const size_t mask = table.size() - 1;
    auto perturb = static_cast<size_t>(key);
    size_t i = perturb & mask;
    for (;;) {
      const size_t probes = i + kLinearProbes <= mask ? kLinearProbes : 0;
      for (size_t j = 0; j <= probes; ++j) {
        if (table[i + j] == kEmpty) {
          table[i + j] = key;
          return;
        }
      }
      perturb >>= kPerturbShift;
      i = (i * 5 + 1 + perturb) & mask;
    }
  }

  void resize(int64_t min_used) {
    size_t new_size = kMinSize;
    while (new_size <= static_cast<size_t>(min_used)) new_size <<= 1;
    std::vector<int64_t> old = std::move(table_);
    table_.assign(new_size, kEmpty);
    for (int64_t key : old)
      if (key != kEmpty) insert_into(table_, key);
  }

  std::vector<int64_t> table_;
  int64_t used_ = 0;
};

}  // namespace

std::vector<int64_t> python_set_difference_order(int64_t n, const std::vector<int64_t>& removed) {
  check(n >= 0, "python_set_difference_order: negative n ", n);
  std::vector<bool> is_removed(static_cast<size_t>(n), false);
  for (int64_t value : removed) {
    check(value >= 0 && value < n, "python_set_difference_order: removed value ", value, " outside [0, ", n, ")");
    check(!is_removed[static_cast<size_t>(value)], "python_set_difference_order: removed value ", value, " repeats");
    is_removed[static_cast<size_t>(value)] = true;
  }
  IntSet all;
  for (int64_t i = 0; i < n; ++i) all.add(i);

  std::vector<int64_t> order;
  order.reserve(static_cast<size_t>(n) - removed.size());
  if ((all.size() >> 2) > static_cast<int64_t>(removed.size())) {
    // set_copy_and_difference: discarding leaves dummies, so the copy's order survives.
    const IntSet copy = IntSet::copy_of(all);
    for (int64_t key : copy.table())
      if (key != kEmpty && !is_removed[static_cast<size_t>(key)]) order.push_back(key);
    return order;
  }
  IntSet result;
  for (int64_t key : all.table())
    if (key != kEmpty && !is_removed[static_cast<size_t>(key)]) result.add(key);
  for (int64_t key : result.table())
    if (key != kEmpty) order.push_back(key);
  return order;
}

}  // namespace mcdl
