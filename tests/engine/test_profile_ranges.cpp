// Profiler ranges (engine/profile.h), read back from the emulator's range log
// (kernels/emu/profile_ranges.h): each CUDA kernel call through the backend seam runs inside a
// range named after the kernel, a scratch-size query opens none, and ProfileRange opens one on a
// CUDA device only.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "engine/ops.h"
#include "engine/profile.h"
#include "kernels/emu/profile_ranges.h"

using namespace mcdl;
using Names = std::vector<std::string>;

TEST_CASE("profile ranges: a CUDA op's kernel runs in a range named after it; the same op on the CPU opens none") {
  const Tensor host = from_vector<float>({-1.0f, 0.5f, 2.0f, 3.0f, -0.25f, 1.5f}, {2, 3});
  const Tensor x = host.to(Device::cuda());
  {
    const emu::RangeRecording recording;
    const Tensor y = gelu(x);
    CHECK(recording.names() == Names{"gelu_forward"});
    CHECK(recording.open() == 0);
  }
  {
    const emu::RangeRecording recording;
    const Tensor y = sum(x, 1);  // sizes its scratch first: host arithmetic, no range
    const Tensor back = y.to(Device::cpu());
    // The read-back waits for the device: the emulated runtime marks that wait.
    CHECK(recording.names() == Names{"sum_axis", "copy_device_to_host", "host_wait"});
    CHECK(recording.open() == 0);
  }
  {
    const emu::RangeRecording recording;
    const Tensor y = sum(gelu(host), 1);
    CHECK(recording.names().empty());
  }
}

TEST_CASE("ProfileRange: a range on a CUDA device, nested, closed on leaving its scope; nothing on the CPU") {
  const emu::RangeRecording recording;
  {
    const ProfileRange outer(Device::cuda(), "outer");
    const ProfileRange on_cpu(Device::cpu(), "on_cpu");
    CHECK(recording.open() == 1);
    CHECK(profiled(Device::cuda(), "inner", [&] { return recording.open(); }) == 2);
    CHECK(profiled(Device::cpu(), "inner_on_cpu", [] { return 7; }) == 7);
  }
  CHECK(recording.names() == Names{"outer", "inner"});
  CHECK(recording.open() == 0);
}
