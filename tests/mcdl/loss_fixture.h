// The PyTorch loss fixtures of tests/fixtures/losses (written by tools/make_loss_fixtures.py).
#pragma once
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/ops/shape.h"
#include "io/safetensors.h"

namespace mcdl::testing {

struct LossFixture {
  SafetensorsFile file;

  explicit LossFixture(const std::string& name) {
    namespace fs = std::filesystem;  // __FILE__ is relative to the repository root, where tests run
    file = load_safetensors((fs::path(__FILE__).parent_path().parent_path() / "fixtures" / "losses" / name).string());
  }
  Tensor operator[](const std::string& name) const {
    const auto it = file.tensors.find(name);
    REQUIRE_MESSAGE(it != file.tensors.end(), "no tensor '" << name << "' in the fixture");
    return it->second;
  }
  // A leaf copy that requires grad, on `device`.
  Tensor leaf(const std::string& name, Device device = Device::cpu()) const {
    return (*this)[name].to(device).clone().set_requires_grad(true);
  }
  std::vector<int64_t> ints(const std::string& name) const { return (*this)[name].to_vector<int64_t>(); }
  std::vector<uint8_t> flags(const std::string& name) const { return (*this)[name].to_vector<uint8_t>(); }
  double number(const std::string& name) const { return (*this)[name].to_vector<double>()[0]; }
};

// A 0-dim loss as the fixtures store it: [1].
inline Tensor as_row(const Tensor& scalar) { return reshape(scalar, {1}); }

// |got − expected| ≤ atol + rtol·|expected| element-wise (NaN never passes), same shape.
inline void check_matches_fixture(const std::string& what, const Tensor& expected, const Tensor& got, double atol,
                                  double rtol) {
  REQUIRE_MESSAGE(expected.shape() == got.shape(), what << ": shape " << got.str() << " vs " << expected.str());
  const std::vector<double> e = expected.to_vector<double>(), g = got.to_vector<double>();
  int reported = 0;
  for (size_t i = 0; i < e.size() && reported < 5; ++i)
    if (!(std::fabs(e[i] - g[i]) <= atol + rtol * std::fabs(e[i]))) {
      ++reported;
      FAIL_CHECK(what << "[" << i << "]: PyTorch " << e[i] << " vs engine " << g[i]);
    }
}

}  // namespace mcdl::testing
