#include "engine/nccl_transport.h"

#include <cstdint>
#include <exception>
#include <numeric>
#include <vector>

#include "kernels/cuda/nccl.h"

namespace mcdl {
namespace {

class NcclTransport final : public DeviceTransport {
 public:
  NcclTransport(std::shared_ptr<cuda::NcclCommunicator> communicator, std::string name)
      : name_(std::move(name)), communicator_(std::move(communicator)) {}
  std::string name() const override { return name_; }
  void all_gather(const void* send, size_t send_bytes, void* receive, const std::vector<size_t>& counts) override {
    communicator_->all_gather(send, send_bytes, receive, counts);
  }
  void broadcast(void* data, size_t bytes, int root) override { communicator_->broadcast(data, bytes, root); }

 private:
  std::string name_;
  std::shared_ptr<cuda::NcclCommunicator> communicator_;
};

// Every rank's text (empty where it has nothing to say), in rank order.
std::vector<std::string> gather_texts(Collective& world, const std::string& mine) {
  const auto n = static_cast<size_t>(world.size());
  std::vector<uint64_t> lengths(n);
  const uint64_t length = mine.size();
  world.all_gather(&length, sizeof length, lengths.data(), std::vector<size_t>(n, sizeof length));
  std::vector<size_t> counts(lengths.begin(), lengths.end());
  std::string all(std::accumulate(counts.begin(), counts.end(), size_t{0}), '\0');
  world.all_gather(mine.data(), mine.size(), all.data(), counts);
  std::vector<std::string> texts;
  size_t offset = 0;
  for (size_t c : counts) {
    texts.push_back(all.substr(offset, c));
    offset += c;
  }
  return texts;
}

// The failures that every rank reported, as one text ("" when none did).
std::string agreed_failure(Collective& world, const std::string& mine) {
  const std::vector<std::string> texts = gather_texts(world, mine);
  std::string why;
  for (size_t r = 0; r < texts.size(); ++r)
    if (!texts[r].empty())
      why += (why.empty() ? "" : "\n") + std::string("rank ") + std::to_string(r) + " of " +
             std::to_string(world.size()) + ": " + texts[r];
  return why;
}

}  // namespace

std::unique_ptr<DeviceTransport> nccl_transport_over(std::shared_ptr<cuda::NcclCommunicator> communicator,
                                                     std::string name) {
  return std::make_unique<NcclTransport>(std::move(communicator), std::move(name));
}

std::unique_ptr<DeviceTransport> make_nccl_transport(Collective& world, std::string& why) {
  std::string name, failure;
  try {
    name = cuda::nccl_description();
  } catch (const std::exception& e) {
    failure = e.what();
  }
  why = agreed_failure(world, failure);
  if (!why.empty()) return nullptr;
  // Rank 0 makes the id; a failure there is every rank's to know, not a wait at the broadcast.
  cuda::NcclId id;
  failure.clear();
  if (world.rank() == 0) try {
      id = cuda::nccl_unique_id();
    } catch (const std::exception& e) {
      failure = e.what();
    }
  why = agreed_failure(world, failure);
  if (!why.empty()) return nullptr;
  world.broadcast(id.bytes, sizeof id.bytes, 0);
  return nccl_transport_over(std::make_shared<cuda::NcclCommunicator>(id, world.rank(), world.size()), name);
}

}  // namespace mcdl
