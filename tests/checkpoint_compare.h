// Two checkpoints hold the same tensors, bit for bit (resumed runs against uninterrupted ones).
#pragma once
#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include "io/safetensors.h"

namespace mcdl::testing {

inline void check_same_tensors(const std::string& path_a, const std::string& path_b) {
  const SafetensorsFile a = load_safetensors(path_a), b = load_safetensors(path_b);
  REQUIRE(a.tensors.size() == b.tensors.size());
  for (const auto& [name, t] : a.tensors) {
    INFO(name);
    REQUIRE(b.tensors.count(name) == 1);
    const Tensor& u = b.tensors.at(name);
    REQUIRE(t.dtype() == u.dtype());
    REQUIRE(t.shape() == u.shape());
    CHECK(std::memcmp(t.raw_data(), u.raw_data(), t.nbytes()) == 0);
  }
}

}  // namespace mcdl::testing
