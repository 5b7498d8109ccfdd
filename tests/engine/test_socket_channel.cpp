// The side channel over TCP (engine/socket_channel.h): ranks as threads of this process, each
// connected to rank 0 on the loopback, bootstrapped through a world of threads without one.
#include <doctest/doctest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/all_gather.h"
#include "engine/socket_channel.h"
#include "tests/thread_world.h"

using namespace mcdl;
using mcdl::testing::ThreadWorld;

namespace {

// Rank r's bytes for a collective: `count` bytes 'a' + r + salt.
std::string bytes_of(int r, size_t count, int salt = 0) { return std::string(count, static_cast<char>('a' + r + salt)); }

// A world that forwards everything to another, and hands each broadcast's bytes to `on_broadcast`
// once they have arrived: how a test sees rank 0's offer (its port) before the rank connects.
class WatchedWorld final : public Collective {
 public:
  WatchedWorld(Collective& inner, std::function<void(const void*, size_t)> on_broadcast)
      : inner_(inner), on_broadcast_(std::move(on_broadcast)) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string transport() const override { return inner_.transport(); }
  void all_gather(const void* send, size_t bytes, void* receive, const std::vector<size_t>& counts) override {
    inner_.all_gather(send, bytes, receive, counts);
  }
  void gather(const void* send, size_t bytes, void* receive, const std::vector<size_t>& counts, int root) override {
    inner_.gather(send, bytes, receive, counts, root);
  }
  void broadcast(void* data, size_t bytes, int root) override {
    inner_.broadcast(data, bytes, root);
    on_broadcast_(data, bytes);
  }
  void barrier() override { inner_.barrier(); }
  [[noreturn]] void abort(int code) override { std::_Exit(code); }

 private:
  Collective& inner_;
  std::function<void(const void*, size_t)> on_broadcast_;
};

// Connects to 127.0.0.1:port and sends `message`; the connection closes when this returns.
void knock(uint16_t port, const std::vector<uint8_t>& message) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  if (!message.empty()) CHECK(::send(fd, message.data(), message.size(), MSG_NOSIGNAL) == ssize_t(message.size()));
  ::close(fd);
}

}  // namespace

TEST_CASE("socket side channel: gather, all-gather, broadcast and barrier give every rank the bytes MPI would") {
  for (int size : {1, 2, 3, 5}) {
    CAPTURE(size);
    std::vector<size_t> counts;  // uneven, one rank with none
    for (int r = 0; r < size; ++r) counts.push_back(r == 1 ? 0 : static_cast<size_t>(r + 2));
    std::string expected;
    for (int r = 0; r < size; ++r) expected += bytes_of(r, counts[static_cast<size_t>(r)]);
    // Larger than the sockets' buffers, so sends block until rank 0 reads them.
    const size_t big = size_t(3) << 20;
    ThreadWorld(size, false).run([&](Collective& world) {
      std::string why_not;
      const std::unique_ptr<Collective> channel = socket_side_channel(world, "127.0.0.1", &why_not);
      REQUIRE_MESSAGE(channel, why_not);
      CHECK(channel->rank() == world.rank());
      CHECK(channel->size() == size);
      CHECK(channel->transport() == "TCP side channel");
      CHECK(channel->side_channel() == nullptr);
      const int r = world.rank();
      const std::string mine = bytes_of(r, counts[static_cast<size_t>(r)]);

      std::string all(expected.size(), '?');
      channel->all_gather(mine.data(), mine.size(), all.data(), counts);
      CHECK(all == expected);
      for (int root : {0, size - 1}) {
        std::string at_root(expected.size(), '?');
        channel->gather(mine.data(), mine.size(), r == root ? at_root.data() : nullptr, counts, root);
        if (r == root) CHECK(at_root == expected);
        std::string word = r == root ? "from the root" : ".............";
        channel->broadcast(word.data(), word.size(), root);
        CHECK(word == "from the root");
      }
      channel->barrier();

      const std::string large = bytes_of(r, big, 1);
      std::string everything(big * static_cast<size_t>(size), '?');
      channel->all_gather(large.data(), large.size(), everything.data(), std::vector<size_t>(size_t(size), big));
      for (int q = 0; q < size; ++q)
        CHECK(everything.compare(big * static_cast<size_t>(q), big, bytes_of(q, big, 1)) == 0);
    });
  }
}

TEST_CASE("socket side channel: a checkpoint's rows stream to rank 0 in pieces, as on MPI's side channel") {
  const int size = 3;
  const std::vector<std::pair<int64_t, int64_t>> blocks = {{0, 4}, {4, 4}, {4, 11}};
  std::vector<float> whole(11 * 3);
  for (size_t i = 0; i < whole.size(); ++i) whole[i] = static_cast<float>(i) * 0.5f;
  std::vector<float> received;
  ThreadWorld(size, false).run([&](Collective& world) {
    const std::unique_ptr<Collective> channel = socket_side_channel(world, "localhost");
    REQUIRE(channel);
    const auto [begin, end] = blocks[static_cast<size_t>(world.rank())];
    Tensor own = empty({end - begin, 3}, DType::f32, Device::cpu());
    std::memcpy(own.raw_data(), whole.data() + begin * 3, static_cast<size_t>(end - begin) * 3 * sizeof(float));
    gather_blocks(*channel, own, blocks, 0, [&](const void* data, size_t bytes) {
      CHECK(bytes <= 2 * 3 * sizeof(float));  // pieces of two rows
      const auto* values = static_cast<const float*>(data);
      received.insert(received.end(), values, values + bytes / sizeof(float));
    }, 2 * 3 * sizeof(float));
  });
  CHECK(received == whole);
}

TEST_CASE("socket side channel: strangers at rank 0's port are turned away, and the ranks still meet") {
  const int size = 3;
  ThreadWorld(size, false).run([&](Collective& world) {
    // Rank 1, once it knows the port and before it connects itself, lets in three strangers: one
    // silent, one that is not a side channel, one with a wrong token claiming to be rank 1.
    WatchedWorld watched(world, [&](const void* data, size_t bytes) {
      if (world.rank() != 1 || bytes != 32) return;
      const auto* offer = static_cast<const uint8_t*>(data);  // the port: a little-endian u32 at byte 8
      const auto port = static_cast<uint16_t>(offer[8] | offer[9] << 8);
      knock(port, {});
      knock(port, std::vector<uint8_t>(40, 'x'));
      SideChannelToken wrong{};
      wrong.fill(7);
      const auto hello = side_channel_hello(wrong, 1, size);
      knock(port, std::vector<uint8_t>(hello.begin(), hello.end()));
    });
    std::string why_not;
    const std::unique_ptr<Collective> channel = socket_side_channel(watched, "127.0.0.1", &why_not);
    REQUIRE_MESSAGE(channel, why_not);
    const char mine = static_cast<char>('a' + world.rank());
    std::string all(size_t(size), '?');
    channel->all_gather(&mine, 1, all.data(), std::vector<size_t>(size_t(size), 1));
    CHECK(all == "abc");
  });
}

TEST_CASE("socket side channel: where rank 0 cannot listen, no rank gets one, and rank 0 says why") {
  std::mutex mutex;
  std::vector<std::string> reasons(2);
  ThreadWorld(2, false).run([&](Collective& world) {
    std::string why_not;
    // 192.0.2.1 (TEST-NET-1, documentation only) is no address of this machine.
    const std::unique_ptr<Collective> channel = socket_side_channel(world, "192.0.2.1", &why_not);
    CHECK(channel == nullptr);
    const std::lock_guard lock(mutex);
    reasons[static_cast<size_t>(world.rank())] = why_not;
  });
  CHECK(reasons[0].find("rank 0 cannot listen on 192.0.2.1") != std::string::npos);
  CHECK(reasons[1].empty());
}

TEST_CASE("socket side channel: a rank that went away, or that sends the wrong count, ends rank 0's call with a message") {
  ThreadWorld(2, false).run([&](Collective& world) {
    std::unique_ptr<Collective> channel = socket_side_channel(world, "127.0.0.1");
    REQUIRE(channel);
    const std::vector<size_t> expected = {4, 4};
    std::string all(8, '?');
    if (world.rank() == 1) {
      const std::string three = "bbb";
      channel->gather(three.data(), three.size(), nullptr, {4, 3}, 0);
    } else {
      CHECK_THROWS_WITH(channel->gather("aaaa", 4, all.data(), expected, 0),
                        doctest::Contains("rank 1 sent 3 bytes where rank 0 expected 4"));
    }
    world.barrier();
    if (world.rank() == 1) {
      channel.reset();  // the process "ends"
    } else {
      world.barrier();  // after rank 1 closed
      CHECK_THROWS_WITH(channel->gather("aaaa", 4, all.data(), expected, 0),
                        doctest::Contains("that process has probably ended"));
    }
    if (world.rank() == 1) world.barrier();
  });
}

TEST_CASE("socket side channel: rank 0 takes a hello only with the magic, the token, the world's size and another rank") {
  SideChannelToken token{};
  for (size_t i = 0; i < token.size(); ++i) token[i] = static_cast<uint8_t>(3 * i + 1);
  const auto hello = side_channel_hello(token, 2, 4);
  CHECK(side_channel_hello_rank(hello, token, 4) == 2);
  auto changed = [&](size_t at, uint8_t value) {
    auto copy = hello;
    copy[at] = value;
    return copy;
  };
  CHECK_THROWS_WITH(side_channel_hello_rank(std::span(hello).first(31), token, 4), doctest::Contains("31 bytes"));
  CHECK_THROWS_WITH(side_channel_hello_rank(changed(0, 'M'), token, 4), doctest::Contains("not an mcdl side channel"));
  CHECK_THROWS_WITH(side_channel_hello_rank(changed(8 + 15, 0), token, 4), doctest::Contains("wrong token"));
  CHECK_THROWS_WITH(side_channel_hello_rank(hello, token, 5), doctest::Contains("a world of 4 processes"));
  CHECK_THROWS_WITH(side_channel_hello_rank(side_channel_hello(token, 0, 4), token, 4),
                    doctest::Contains("rank 0 is not one of 1..3"));
  CHECK_THROWS_WITH(side_channel_hello_rank(side_channel_hello(token, 4, 4), token, 4),
                    doctest::Contains("rank 4 is not one of 1..3"));
}
