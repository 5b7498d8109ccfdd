// MCDL's memory banks and credibility buckets: hand-checked updates (a sample drawn twice in a
// batch, a ring that wraps, more draws than the ring holds), mode and count with ties, mean
// predictions, checkpoint state, buckets at their thresholds, and CPU/CUDA parity of every kernel.
#include <doctest/doctest.h>

#include <cstring>

#include <functional>
#include <map>
#include <string>

#include "engine/ops.h"
#include "mcdl/method/credibility.h"
#include "mcdl/method/memory_bank.h"
#include "tests/cuda/parity.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {

Tensor indices(const std::vector<int64_t>& values, Device device = Device::cpu()) {
  return from_vector<int64_t>(values, {static_cast<int64_t>(values.size())}, device);
}

// Rows of 3 probabilities whose argmax is the given class (the class gets 0.6, the rest 0.2).
Tensor rows_for(const std::vector<int>& classes, Device device = Device::cpu()) {
  std::vector<float> values;
  for (int c : classes)
    for (int k = 0; k < 3; ++k) values.push_back(k == c ? 0.6f : 0.2f);
  return from_vector<float>(values, {static_cast<int64_t>(classes.size()), 3}, device);
}

// A one-process bank's checkpoint state: its rows are all of them.
std::map<std::string, Tensor> whole_state(const MemoryBank& bank) {
  std::map<std::string, Tensor> whole;
  for (const auto& [name, rows] : bank.state()) {
    REQUIRE(rows.blocks == std::vector<std::pair<int64_t, int64_t>>{{0, bank.num_samples()}});
    whole[name] = rows.own;
  }
  return whole;
}

std::vector<int64_t> modes(const MemoryBank& bank, const std::vector<int64_t>& samples) {
  return bank.consistency(indices(samples, bank.device())).mode.to_vector<int64_t>();
}
std::vector<int64_t> counts(const MemoryBank& bank, const std::vector<int64_t>& samples) {
  return bank.consistency(indices(samples, bank.device())).count.to_vector<int64_t>();
}

}  // namespace

TEST_CASE("memory bank: updates in batch order, mode and count with ties, mean predictions") {
  for (Device device : {Device::cpu(), Device::cuda()}) {
    CAPTURE(device.str());
    MemoryBank bank(3, 3, 4, device);
    CHECK(modes(bank, {0, 1, 2}) == std::vector<int64_t>{-1, -1, -1});
    CHECK(counts(bank, {0, 1, 2}) == std::vector<int64_t>{0, 0, 0});

    // Sample 0 drawn twice: class 0 then class 2, the later one the more recent.
    const Tensor first = from_vector<float>({0.7f, 0.2f, 0.1f, 0.1f, 0.8f, 0.1f, 0.2f, 0.3f, 0.5f}, {3, 3}, device);
    bank.update(indices({0, 1, 0}, device), first);
    CHECK(whole_state(bank).at("position").to_vector<int64_t>() == std::vector<int64_t>{2, 1, 0});
    CHECK(whole_state(bank).at("filled").to_vector<int64_t>() == std::vector<int64_t>{2, 1, 0});
    CHECK(whole_state(bank).at("classes").to_vector<int32_t>() == std::vector<int32_t>{0, 2, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0});
    // Sample 0: one 0 and one 2, the 2 more recent, so the tie goes to 2.
    CHECK(modes(bank, {0, 1, 2}) == std::vector<int64_t>{2, 1, -1});
    CHECK(counts(bank, {0, 1, 2}) == std::vector<int64_t>{1, 1, 0});
    const std::vector<float> mean = bank.mean_probs(indices({0, 2, 0}, device)).to_vector<float>();
    const std::vector<float> expected = {0.45f, 0.25f, 0.3f, 0, 0, 0, 0.45f, 0.25f, 0.3f};
    for (size_t i = 0; i < expected.size(); ++i) CHECK(mean[i] == doctest::Approx(expected[i]).epsilon(1e-6));

    // Three more for sample 0 (classes 1, 0, 0): slots 2, 3, then 0 again (the ring wraps).
    bank.update(indices({0, 0, 0}, device), rows_for({1, 0, 0}, device));
    CHECK(whole_state(bank).at("position").to_vector<int64_t>()[0] == 1);
    CHECK(whole_state(bank).at("filled").to_vector<int64_t>()[0] == 4);
    CHECK(whole_state(bank).at("classes").to_vector<int32_t>()[0] == 0);  // slot 0 now holds the latest
    // Held (oldest first): 2, 1, 0, 0.
    CHECK(modes(bank, {0}) == std::vector<int64_t>{0});
    CHECK(counts(bank, {0}) == std::vector<int64_t>{2});
    const std::vector<float> full_mean = bank.mean_probs(indices({0}, device)).to_vector<float>();
    CHECK(full_mean[0] == doctest::Approx((0.2 + 0.2 + 0.6 + 0.6) / 4).epsilon(1e-6));
    CHECK(full_mean[2] == doctest::Approx((0.5 + 0.2 + 0.2 + 0.2) / 4).epsilon(1e-6));

    // Sample 1: 1, 0, 0, 1 (oldest first): a 2-2 tie that the more recent 1 wins; one more 0
    // pushes the oldest 1 out: 0, 0, 1, 0 gives 0 three times.
    bank.update(indices({1, 1, 1}, device), rows_for({0, 0, 1}, device));
    CHECK(modes(bank, {1}) == std::vector<int64_t>{1});
    CHECK(counts(bank, {1}) == std::vector<int64_t>{2});
    bank.update(indices({1}, device), rows_for({0}, device));
    CHECK(modes(bank, {1}) == std::vector<int64_t>{0});
    CHECK(counts(bank, {1}) == std::vector<int64_t>{3});

    // Sample 2 drawn six times in one batch (classes 0 1 2 0 1 2): the ring keeps the last four
    // (2 0 1 2), written in order, so slots 0..3 hold 1 2 2 0 and the next write goes to slot 2.
    bank.update(indices({2, 2, 2, 2, 2, 2}, device), rows_for({0, 1, 2, 0, 1, 2}, device));
    const std::vector<int32_t> classes = whole_state(bank).at("classes").to_vector<int32_t>();
    CHECK(std::vector<int32_t>(classes.begin() + 8, classes.end()) == std::vector<int32_t>{1, 2, 2, 0});
    CHECK(whole_state(bank).at("position").to_vector<int64_t>()[2] == 2);
    CHECK(modes(bank, {2, 2}) == std::vector<int64_t>{2, 2});
    CHECK(counts(bank, {2}) == std::vector<int64_t>{2});

    // f64 probabilities are stored as f32; an empty batch changes nothing.
    bank.update(indices({}, device), zeros({0, 3}, DType::f64, device));
    bank.update(indices({1}, device), rows_for({2}, device).to(DType::f64));
    CHECK(whole_state(bank).at("probs").to_vector<float>()[(1 * 4 + 1) * 3 + 2] == 0.6f);
  }
}

TEST_CASE("memory bank: state round-trips through load_state, which validates it") {
  MemoryBank bank(4, 3, 4);
  bank.update(indices({0, 3, 3, 1, 0, 0, 0, 0}), rows_for({1, 2, 0, 2, 1, 1, 0, 2}));
  MemoryBank copy(4, 3, 4, Device::cuda());
  copy.load_state(whole_state(bank));
  for (const auto& [name, t] : whole_state(bank)) {
    CAPTURE(name);
    CHECK(whole_state(copy).at(name).device().is_cuda());
    CHECK(whole_state(copy).at(name).to_vector<double>() == t.to_vector<double>());
  }
  CHECK(modes(copy, {0, 1, 2, 3}) == modes(bank, {0, 1, 2, 3}));
  // The loaded state is a copy: updating the source leaves the copy alone.
  bank.update(indices({2}), rows_for({1}));
  CHECK(whole_state(copy).at("filled").to_vector<int64_t>()[2] == 0);

  const auto with = [&](const std::string& name, const Tensor& value) {
    std::map<std::string, Tensor> state = whole_state(bank);
    state[name] = value;
    return state;
  };
  MemoryBank target(4, 3, 4);
  CHECK_THROWS_WITH(target.load_state({}), doctest::Contains("MemoryBank.load_state: expected exactly"));
  std::map<std::string, Tensor> renamed = whole_state(bank);
  renamed["ring"] = renamed.at("classes");
  renamed.erase("classes");
  CHECK_THROWS_WITH(target.load_state(renamed), doctest::Contains("missing tensor 'classes'"));
  CHECK_THROWS_WITH(target.load_state(with("probs", zeros({4, 4, 2}))),
                    doctest::Contains("'probs' must be f32[4, 4, 3], got f32[4, 4, 2]"));
  CHECK_THROWS_WITH(target.load_state(with("filled", zeros({4}, DType::i32))),
                    doctest::Contains("'filled' must be i64[4]"));
  CHECK_THROWS_WITH(target.load_state(with("position", from_vector<int64_t>({0, 1, 1, 4}, {4}))),
                    doctest::Contains("sample 3 has position 4 and filled"));
  CHECK_THROWS_WITH(
      target.load_state(with("position", from_vector<int64_t>({1, 1, 0, 2}, {4}))),
      doctest::Contains("sample 2 has a ring that is not full (filled 1) whose position 0 is not its fill"));
  std::vector<int32_t> bad_classes = whole_state(bank).at("classes").to_vector<int32_t>();
  bad_classes[1] = 3;
  CHECK_THROWS_WITH(target.load_state(with("classes", from_vector<int32_t>(bad_classes, {4, 4}))),
                    doctest::Contains("sample 0 slot 1 holds class 3, outside [0, 3)"));
  CHECK(whole_state(target).at("filled").to_vector<int64_t>() == std::vector<int64_t>{0, 0, 0, 0});  // unchanged
}

TEST_CASE("memory bank: argument errors") {
  CHECK_THROWS_WITH(MemoryBank(4, 0, 4), doctest::Contains("MemoryBank: expected num_samples >= 0, num_classes > 0"));
  for (Device device : {Device::cpu(), Device::cuda()}) {
    CAPTURE(device.str());
    MemoryBank bank(4, 3, 4, device);
    CHECK_THROWS_WITH(
        bank.update(indices({1, 4}, device), rows_for({0, 1}, device)),
        doctest::Contains("MemoryBank.update: sample index 4 at position 1 is out of range for a bank of 4"));
    CHECK_THROWS_WITH(bank.consistency(indices({-1}, device)),
                      doctest::Contains("MemoryBank.consistency: sample index -1 at position 0"));
    CHECK_THROWS_WITH(bank.mean_probs(indices({0}, device).to(DType::i32)),
                      doctest::Contains("MemoryBank.mean_probs: sample_index must be i64 [n] on"));
    CHECK_THROWS_WITH(bank.update(indices({1, 2}, device), rows_for({0}, device)),
                      doctest::Contains("MemoryBank.update: probs must be [2, 3]"));
    CHECK_THROWS_WITH(bank.update(indices({1}, device), rows_for({0}, device).to(DType::i64)),
                      doctest::Contains("MemoryBank.update: expected an f32 or f64 tensor"));
    CHECK(whole_state(bank).at("filled").to_vector<int64_t>() == std::vector<int64_t>{0, 0, 0, 0});
  }
  MemoryBank on_device(4, 3, 4, Device::cuda());
  CHECK_THROWS_WITH(on_device.update(indices({1}), rows_for({0})), doctest::Contains("on cuda:0, got i64[1] cpu"));
}

TEST_CASE("memory bank: positions made on the host (HostIndex) give the results of checked index tensors") {
  for (Device device : {Device::cpu(), Device::cuda()}) {
    CAPTURE(device.str());
    MemoryBank by_tensor(4, 3, 2, device), by_rows(4, 3, 2, device);
    by_tensor.update(indices({0, 3, 0}, device), rows_for({1, 2, 1}, device));
    by_rows.update(HostIndex({0, 3, 0}, device), rows_for({1, 2, 1}, device));
    for (const auto& [name, t] : whole_state(by_tensor)) {
      CAPTURE(name);
      const Tensor a = t.to(Device::cpu()), b = whole_state(by_rows).at(name).to(Device::cpu());
      REQUIRE(a.nbytes() == b.nbytes());
      CHECK(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0);
    }
    const HostIndex all({0, 1, 2, 3}, device);
    CHECK(by_rows.consistency(all).mode.to_vector<int64_t>() ==
          by_tensor.consistency(indices({0, 1, 2, 3}, device)).mode.to_vector<int64_t>());
    CHECK(by_rows.mean_probs(all).to_vector<float>() == by_tensor.mean_probs(indices({0, 1, 2, 3}, device)).to_vector<float>());

    CHECK_THROWS_WITH(by_rows.update(HostIndex({1, 4}, device), rows_for({0, 1}, device)),
                      doctest::Contains("MemoryBank.update: sample index 4 at position 1 is out of range for a bank of 4"));
    CHECK_THROWS_WITH(by_rows.consistency(HostIndex({-1}, device)),
                      doctest::Contains("MemoryBank.consistency: sample index -1 at position 0"));
  }
  MemoryBank on_device(4, 3, 4, Device::cuda());
  CHECK_THROWS_WITH(on_device.mean_probs(HostIndex({1}, Device::cpu())),
                    doctest::Contains("MemoryBank.mean_probs: sample_index must be on cuda:0"));
}

TEST_CASE("credibility: buckets at their thresholds, counts and rows") {
  struct Case {
    int64_t mode_w, count_w, mode_s, count_s, mu;
    Bucket bucket;
  };
  const Case cases[] = {
      {1, 13, 1, 5, 16, Bucket::high},  {1, 12, 1, 5, 16, Bucket::low},     // count_w must exceed 12
      {1, 13, 1, 4, 16, Bucket::low},   {1, 13, 2, 5, 16, Bucket::medium},  // count_s must exceed 4
      {3, 16, 3, 16, 16, Bucket::high}, {2, 16, 0, 16, 16, Bucket::medium}, {-1, 0, -1, 0, 16, Bucket::low},
      {5, 4, 5, 2, 5, Bucket::high},    {5, 3, 5, 2, 5, Bucket::low},  // μ = 5: 3.75 and 1.25
      {5, 4, 5, 1, 5, Bucket::low},     {5, 4, 0, 2, 5, Bucket::medium},
  };
  for (const Case& c : cases) {
    CAPTURE(c.mode_w);
    CAPTURE(c.count_w);
    CAPTURE(c.mode_s);
    CAPTURE(c.count_s);
    CAPTURE(c.mu);
    for (Device device : {Device::cpu(), Device::cuda()}) {
      const Consistency weak{indices({c.mode_w}, device), indices({c.count_w}, device)};
      const Consistency strong{indices({c.mode_s}, device), indices({c.count_s}, device)};
      const Tensor buckets = credibility_buckets(weak, strong, c.mu);
      CHECK(buckets.device() == device);
      CHECK(buckets.to_vector<uint8_t>() == std::vector<uint8_t>{static_cast<uint8_t>(c.bucket)});
    }
  }
  // bucket_samples on banks (μ = 1: one consistent entry in each bank suffices): sample 0 agrees
  // (high), 1 disagrees (medium), 2 has no entry (low), 3 agrees (high).
  for (Device device : {Device::cpu(), Device::cuda()}) {
    MemoryBank weak_bank(4, 3, 1, device), strong_bank(4, 3, 1, device);
    const HostIndex seen({0, 1, 3}, device);
    weak_bank.update(seen, from_vector<float>({0.1f, 0.2f, 0.7f, 0.6f, 0.3f, 0.1f, 0.2f, 0.5f, 0.3f}, {3, 3}, device));
    strong_bank.update(seen, from_vector<float>({0.2f, 0.1f, 0.7f, 0.3f, 0.6f, 0.1f, 0.1f, 0.8f, 0.1f}, {3, 3}, device));
    const SampleBuckets b = bucket_samples(weak_bank, strong_bank, HostIndex({0, 1, 2, 3}, device), 1);
    CHECK(b.high == std::vector<int64_t>{0, 3});
    CHECK(b.medium == std::vector<int64_t>{1});
    CHECK(b.low == std::vector<int64_t>{2});
    CHECK(b.weak_mode == std::vector<int64_t>{2, 0, -1, 1});
    const BucketCounts n = b.counts();
    CHECK(n.high == 2);
    CHECK(n.medium == 1);
    CHECK(n.low == 1);
  }
  const Consistency one{indices({1}), indices({13})}, two{indices({1, 1}), indices({5, 5})};
  CHECK_THROWS_WITH(credibility_buckets(one, two, 16),
                    doctest::Contains("credibility_buckets: strong mode and count must be i64 [1]"));
  CHECK_THROWS_WITH(credibility_buckets(one, one, 0), doctest::Contains("mu must be positive"));
}

namespace {

// Random rows of samples (each sample drawn repeatedly; sample 3 more than mu times in the
// first batch) and probability rows (softmax of random values, f32).
struct BankScript {
  int64_t samples, classes, mu;
  std::vector<Tensor> inputs;  // index, probs, index, probs, ...
};

BankScript bank_script(int64_t samples, int64_t classes, int64_t mu, int64_t rows, uint64_t seed) {
  BankScript script{samples, classes, mu, {}};
  for (int batch = 0; batch < 3; ++batch) {
    const std::vector<double> draws =
        random_tensor({rows}, seed + 2 * batch, 0, static_cast<double>(samples)).to_vector<double>();
    std::vector<int64_t> index;
    for (double d : draws) index.push_back(static_cast<int64_t>(d));
    if (batch == 0)
      for (int64_t r = 0; r < mu + 3 && r < rows; ++r) index[static_cast<size_t>(r * (rows / (mu + 3)))] = 3;
    script.inputs.push_back(indices(index));
    script.inputs.push_back(softmax(random_tensor({rows, classes}, seed + 2 * batch + 1, -3, 3)).to(DType::f32));
  }
  return script;
}

// A bank on the inputs' device after the script's updates.
MemoryBank run_script(const BankScript& script, const std::vector<Tensor>& x) {
  MemoryBank bank(script.samples, script.classes, script.mu, x[0].device());
  for (size_t i = 0; i + 1 < x.size(); i += 2) bank.update(x[i], x[i + 1]);
  return bank;
}

}  // namespace

TEST_CASE("memory bank and credibility: the CUDA kernels match the CPU") {
  // Integer results and copies: exact. Means: the same double sums in the same order, exact too.
  for (const auto& [samples, classes, mu, rows] :
       {std::tuple<int64_t, int64_t, int64_t, int64_t>{20, 7, 4, 37}, {50, 101, 16, 130}}) {
    CAPTURE(classes);
    const BankScript script = bank_script(samples, classes, mu, rows, 100 + static_cast<uint64_t>(classes));
    const Tensor all = arange(samples);
    std::vector<Tensor> inputs = script.inputs;
    inputs.push_back(all);
    const auto state_of = [&](const std::string& name) {
      return [&script, name](const std::vector<Tensor>& x) { return whole_state(run_script(script, x)).at(name); };
    };
    for (const char* name : {"classes", "probs", "position", "filled"})
      check_cuda_forward_parity(std::string("bank ") + name, state_of(name), inputs);
    check_cuda_forward_parity(
        "bank mode", [&](auto& x) { return run_script(script, x).consistency(x.back()).mode; }, inputs);
    check_cuda_forward_parity(
        "bank count", [&](auto& x) { return run_script(script, x).consistency(x.back()).count; }, inputs);
    check_cuda_forward_parity(
        "bank mean", [&](auto& x) { return run_script(script, x).mean_probs(x.back()); }, inputs);
    // Buckets from two banks: the script as weak bank, its batches reversed as strong bank.
    check_cuda_forward_parity(
        "buckets",
        [&](auto& x) {
          const MemoryBank weak = run_script(script, x);
          MemoryBank strong(script.samples, script.classes, script.mu, x[0].device());
          for (size_t i = x.size() - 1; i >= 2; i -= 2) strong.update(x[i - 2], x[i - 1]);
          return credibility_buckets(weak.consistency(x.back()), strong.consistency(x.back()), mu);
        },
        inputs);
  }
}

TEST_CASE("memory bank: the CPU reference writes rows one after the other") {
  // More rows for one sample than the ring holds: only the last mu survive, in order, on both
  // devices (the CUDA kernel skips the overwritten rows instead of writing them in turn).
  for (Device device : {Device::cpu(), Device::cuda()}) {
    MemoryBank bank(2, 3, 3, device);
    bank.update(indices({1, 1, 1, 1, 1, 1, 1}, device), rows_for({0, 1, 2, 2, 1, 0, 0}, device));
    // Rows 4..6 (1, 0, 0) in slots 1, 2, 0 (row 4 goes to slot (0 + 4) % 3 = 1).
    const std::vector<int32_t> classes = whole_state(bank).at("classes").to_vector<int32_t>();
    CHECK(std::vector<int32_t>(classes.begin() + 3, classes.end()) == std::vector<int32_t>{0, 1, 0});
    CHECK(whole_state(bank).at("position").to_vector<int64_t>() == std::vector<int64_t>{0, 1});
    CHECK(whole_state(bank).at("filled").to_vector<int64_t>() == std::vector<int64_t>{0, 3});
    CHECK(modes(bank, {1}) == std::vector<int64_t>{0});
  }
}
