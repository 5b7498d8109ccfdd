#include <doctest/doctest.h>

#include <cmath>

#include "engine/settings.h"
#include "engine/tensor.h"

using namespace mcdl;

TEST_CASE("storage: freed host blocks are reused, counted apart from live bytes, and poisoned on reuse") {
  release_cached_storage();
  const int64_t live = storage_live_bytes(Device::cpu());
  const void* first_address;
  {
    Tensor a = full({1000}, 3.0, DType::f32);
    first_address = a.raw_data();
    CHECK(storage_live_bytes(Device::cpu()) == live + 4000);
  }
  CHECK(storage_live_bytes(Device::cpu()) == live);
  CHECK(storage_cached_bytes(Device::cpu()) >= 4000);
  Tensor b = empty({990}, DType::f32);  // same size class: the cached block comes back
  CHECK(b.raw_data() == first_address);
  CHECK(storage_cached_bytes(Device::cpu()) == 0);
  b = Tensor();

  Tensor c;
  {
    const ScopedEngineSettings poison(&EngineSettings::poison_new_storage, true);
    c = empty({1000}, DType::f32);
  }
  CHECK(c.raw_data() == first_address);
  CHECK(std::isnan(c.data<float>()[0]));  // the old 3.0s are not visible through a reused block
  c = Tensor();
  release_cached_storage();
  CHECK(storage_cached_bytes(Device::cpu()) == 0);
}
