#include "engine/socket_channel.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <system_error>
#include <utility>
#include <vector>

#include "engine/error.h"

namespace mcdl {
namespace {

constexpr uint8_t kMagic[8] = {'m', 'c', 'd', 'l', 's', 'i', 'd', 'e'};
constexpr int kConnectSeconds = 20;  // a rank's attempt to reach rank 0
constexpr int kAcceptSeconds = 30;   // rank 0's wait for every rank's hello
constexpr int kHelloSeconds = 5;     // how long one connection may take to say hello
constexpr size_t kOfferBytes = 32;   // magic, port (u32), listening (u32), token
constexpr size_t kChunk = size_t(1) << 30;  // bytes per send or recv call

void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t get_u32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}
void put_u64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

std::string system_message(int error) { return std::system_category().message(error); }

// An owned socket descriptor.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(Socket&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Socket& operator=(Socket&& other) noexcept {
    if (this != &other) {
      if (fd_ >= 0) ::close(fd_);
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// Sends every byte; false (errno set) when the connection failed.
bool send_all(int fd, const void* data, size_t bytes) {
  const auto* next = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t sent = ::send(fd, next, std::min(bytes, kChunk), MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    next += sent;
    bytes -= static_cast<size_t>(sent);
  }
  return true;
}

// Reads exactly `bytes`; returns how many arrived before the peer closed (errno 0) or the
// connection failed (errno set): `bytes` on success.
size_t receive_all(int fd, void* data, size_t bytes) {
  auto* next = static_cast<char*>(data);
  size_t received = 0;
  while (received < bytes) {
    const ssize_t got = ::recv(fd, next + received, std::min(bytes - received, kChunk), 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return received;
    }
    if (got == 0) {
      errno = 0;
      return received;
    }
    received += static_cast<size_t>(got);
  }
  return received;
}

void set_receive_timeout(int fd, int seconds) {
  timeval limit{};
  limit.tv_sec = seconds;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
}

// Small messages (a barrier's byte) leave at once.
void set_no_delay(int fd) {
  const int on = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

int milliseconds_until(std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return static_cast<int>(std::max<int64_t>(0, left.count()));
}

// poll() for `events` on one descriptor until the deadline: true when they came.
bool wait_for(int fd, short events, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    pollfd entry{fd, events, 0};
    const int ready = ::poll(&entry, 1, milliseconds_until(deadline));
    if (ready < 0 && errno == EINTR) continue;
    return ready > 0;
  }
}

class AddressList {
 public:
  // The addresses of host:port, or an empty list with *why set.
  AddressList(const std::string& host, uint16_t port, std::string* why) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    const int status = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &list_);
    if (status != 0) {
      *why = "cannot resolve " + host + ": " + ::gai_strerror(status);
      list_ = nullptr;
    }
  }
  ~AddressList() {
    if (list_) ::freeaddrinfo(list_);
  }
  AddressList(const AddressList&) = delete;
  AddressList& operator=(const AddressList&) = delete;
  const addrinfo* first() const { return list_; }

 private:
  addrinfo* list_ = nullptr;
};

// Rank 0's listening socket on `host` at a port the system picks, or an invalid one with *why set.
Socket listen_on(const std::string& host, uint16_t* port, std::string* why) {
  const AddressList addresses(host, 0, why);
  for (const addrinfo* a = addresses.first(); a; a = a->ai_next) {
    Socket listener(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!listener.valid() || ::bind(listener.fd(), a->ai_addr, a->ai_addrlen) != 0 ||
        ::listen(listener.fd(), SOMAXCONN) != 0) {
      *why = "cannot listen on " + host + ": " + system_message(errno);
      continue;
    }
    sockaddr_storage bound{};
    socklen_t length = sizeof bound;
    if (::getsockname(listener.fd(), reinterpret_cast<sockaddr*>(&bound), &length) != 0) {
      *why = "cannot read the port bound on " + host + ": " + system_message(errno);
      continue;
    }
    *port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6*>(&bound)->sin6_port
                                               : reinterpret_cast<const sockaddr_in*>(&bound)->sin_port);
    return listener;
  }
  return Socket();
}

// A connection to host:port within kConnectSeconds, or an invalid socket with *why set.
Socket connect_to(const std::string& host, uint16_t port, std::string* why) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kConnectSeconds);
  const AddressList addresses(host, port, why);
  for (const addrinfo* a = addresses.first(); a; a = a->ai_next) {
    Socket connection(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol));
    if (!connection.valid()) {
      *why = std::string("cannot open a socket: ") + system_message(errno);
      continue;
    }
    if (::connect(connection.fd(), a->ai_addr, a->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        *why = "cannot connect to " + host + ":" + std::to_string(port) + ": " + system_message(errno);
        continue;
      }
      if (!wait_for(connection.fd(), POLLOUT, deadline)) {
        *why = "no answer from " + host + ":" + std::to_string(port) + " within " + std::to_string(kConnectSeconds) + " s";
        continue;
      }
      int error = 0;
      socklen_t length = sizeof error;
      ::getsockopt(connection.fd(), SOL_SOCKET, SO_ERROR, &error, &length);
      if (error != 0) {
        *why = "cannot connect to " + host + ":" + std::to_string(port) + ": " + system_message(error);
        continue;
      }
    }
    ::fcntl(connection.fd(), F_SETFL, ::fcntl(connection.fd(), F_GETFL) & ~O_NONBLOCK);
    set_no_delay(connection.fd());
    return connection;
  }
  return Socket();
}

SideChannelToken random_token() {
  std::random_device source;
  SideChannelToken token{};
  for (size_t i = 0; i < token.size(); i += 4) put_u32(token.data() + i, source());
  return token;
}

// The star: rank 0 holds a connection to every other rank (peers_[r]); the others one to rank 0
// (peers_[0]). Every transfer is a frame: its length (u64, little-endian), then the bytes.
class SocketChannel final : public Collective {
 public:
  SocketChannel(int rank, int size, std::vector<Socket> peers) : rank_(rank), size_(size), peers_(std::move(peers)) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string transport() const override { return "TCP side channel"; }

  void all_gather(const void* send, size_t send_bytes, void* receive, const std::vector<size_t>& counts) override {
    gather(send, send_bytes, receive, counts, 0);
    const size_t total = total_of(counts);
    if (rank_ == 0) {
      for (int r = 1; r < size_; ++r) send_frame(r, receive, total);
    } else {
      receive_frame(0, receive, total);
    }
  }

  void gather(const void* send, size_t send_bytes, void* receive, const std::vector<size_t>& counts,
              int root) override {
    check(counts.size() == static_cast<size_t>(size_) && counts[static_cast<size_t>(rank_)] == send_bytes &&
              root >= 0 && root < size_,
          "side channel gather on rank ", rank_, ": the counts or the root do not match the ", size_, " processes");
    const size_t total = total_of(counts);
    if (rank_ != 0) {
      send_frame(0, send, send_bytes);
      if (rank_ == root) receive_frame(0, receive, total);
      return;
    }
    std::vector<char> staged(root == 0 ? 0 : total);
    char* whole = root == 0 ? static_cast<char*>(receive) : staged.data();
    if (send_bytes > 0) std::memcpy(whole, send, send_bytes);
    size_t offset = send_bytes;
    for (int r = 1; r < size_; ++r) {
      receive_frame(r, whole + offset, counts[static_cast<size_t>(r)]);
      offset += counts[static_cast<size_t>(r)];
    }
    if (root != 0) send_frame(root, whole, total);
  }

  void broadcast(void* data, size_t bytes, int root) override {
    check(root >= 0 && root < size_, "side channel broadcast: root ", root, " is not one of the ", size_, " processes");
    if (root != 0) {
      if (rank_ == root) send_frame(0, data, bytes);
      if (rank_ == 0) receive_frame(root, data, bytes);
    }
    if (rank_ == 0) {
      for (int r = 1; r < size_; ++r)
        if (r != root) send_frame(r, data, bytes);
    } else if (rank_ != root) {
      receive_frame(0, data, bytes);
    }
  }

  void barrier() override {
    const char mine = 1;
    std::vector<char> all(static_cast<size_t>(size_));
    all_gather(&mine, 1, all.data(), std::vector<size_t>(all.size(), 1));
  }

  [[noreturn]] void abort(int code) override {
    std::fflush(stderr);
    std::_Exit(code);
  }

 private:
  static size_t total_of(const std::vector<size_t>& counts) {
    size_t total = 0;
    for (size_t c : counts) total += c;
    return total;
  }

  [[noreturn]] void connection_lost(int peer, const char* doing, int error) const {
    fail("side channel of rank ", rank_, ": ", doing, " rank ", peer, " failed (",
         error != 0 ? system_message(error) : std::string("it closed the connection"),
         "); that process has probably ended: see its messages");
  }

  void send_frame(int peer, const void* data, size_t bytes) {
    uint8_t header[8];
    put_u64(header, bytes);
    const int fd = peers_[static_cast<size_t>(peer)].fd();
    if (!send_all(fd, header, sizeof header) || (bytes > 0 && !send_all(fd, data, bytes)))
      connection_lost(peer, "sending to", errno);
  }

  void receive_frame(int peer, void* data, size_t expected) {
    uint8_t header[8];
    const int fd = peers_[static_cast<size_t>(peer)].fd();
    if (receive_all(fd, header, sizeof header) != sizeof header) connection_lost(peer, "receiving from", errno);
    const uint64_t length = get_u64(header);
    check(length == expected, "side channel: rank ", peer, " sent ", length, " bytes where rank ", rank_,
          " expected ", expected, ": the processes are not making the same calls (are they all the same program?)");
    if (expected > 0 && receive_all(fd, data, expected) != expected) connection_lost(peer, "receiving from", errno);
  }

  int rank_, size_;
  std::vector<Socket> peers_;
};

// Rank 0: accepts until every other rank has said hello or the time is up; peers[r] for each.
// A connection whose hello is wrong (a stranger, a port scan) is closed and the wait goes on.
int accept_ranks(const Socket& listener, const SideChannelToken& token, int size, std::vector<Socket>& peers) {
  int missing = size - 1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kAcceptSeconds);
  while (missing > 0 && wait_for(listener.fd(), POLLIN, deadline)) {
    Socket connection(::accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!connection.valid()) continue;
    set_receive_timeout(connection.fd(), kHelloSeconds);
    std::array<uint8_t, kSideChannelHelloBytes> hello{};
    if (receive_all(connection.fd(), hello.data(), hello.size()) != hello.size()) continue;
    int rank = 0;
    try {
      rank = side_channel_hello_rank(hello, token, size);
    } catch (const Error&) {
      continue;
    }
    if (peers[static_cast<size_t>(rank)].valid()) continue;  // that rank is already here
    set_receive_timeout(connection.fd(), 0);
    set_no_delay(connection.fd());
    peers[static_cast<size_t>(rank)] = std::move(connection);
    --missing;
  }
  return missing;
}

}  // namespace

std::array<uint8_t, kSideChannelHelloBytes> side_channel_hello(const SideChannelToken& token, int rank, int size) {
  std::array<uint8_t, kSideChannelHelloBytes> hello{};
  std::memcpy(hello.data(), kMagic, sizeof kMagic);
  std::memcpy(hello.data() + 8, token.data(), token.size());
  put_u32(hello.data() + 24, static_cast<uint32_t>(rank));
  put_u32(hello.data() + 28, static_cast<uint32_t>(size));
  return hello;
}

int side_channel_hello_rank(std::span<const uint8_t> hello, const SideChannelToken& token, int size) {
  check(hello.size() == kSideChannelHelloBytes, "side channel hello: ", hello.size(), " bytes, expected ",
        kSideChannelHelloBytes);
  check(std::memcmp(hello.data(), kMagic, sizeof kMagic) == 0, "side channel hello: not an mcdl side channel");
  check(std::memcmp(hello.data() + 8, token.data(), token.size()) == 0,
        "side channel hello: wrong token (not a rank of this run)");
  const uint32_t rank = get_u32(hello.data() + 24), claimed_size = get_u32(hello.data() + 28);
  check(claimed_size == static_cast<uint32_t>(size), "side channel hello: a world of ", claimed_size,
        " processes, this one has ", size);
  check(rank >= 1 && rank < static_cast<uint32_t>(size), "side channel hello: rank ", rank, " is not one of 1..",
        size - 1);
  return static_cast<int>(rank);
}

std::unique_ptr<Collective> socket_side_channel(Collective& world, const std::string& host, std::string* why_not) {
  const int rank = world.rank(), size = world.size();
  std::vector<Socket> peers(static_cast<size_t>(size));
  if (size == 1) return std::make_unique<SocketChannel>(rank, size, std::move(peers));

  // Rank 0 listens and offers its port and a token to the others, through the world.
  std::string why;
  Socket listener;
  std::array<uint8_t, kOfferBytes> offer{};
  SideChannelToken token{};
  if (rank == 0) {
    uint16_t port = 0;
    listener = listen_on(host, &port, &why);
    token = random_token();
    std::memcpy(offer.data(), kMagic, sizeof kMagic);
    put_u32(offer.data() + 8, port);
    put_u32(offer.data() + 12, listener.valid() ? 1 : 0);
    std::memcpy(offer.data() + 16, token.data(), token.size());
  }
  world.broadcast(offer.data(), offer.size(), 0);
  if (get_u32(offer.data() + 12) == 0) {
    if (why_not && rank == 0) *why_not = "rank 0 " + why;
    return nullptr;
  }
  const auto port = static_cast<uint16_t>(get_u32(offer.data() + 8));
  std::memcpy(token.data(), offer.data() + 16, token.size());

  // Each other rank connects and says hello; rank 0 takes them in any order.
  bool ready = true;
  if (rank == 0) {
    const int missing = accept_ranks(listener, token, size, peers);
    ready = missing == 0;
    if (!ready) {
      why = std::to_string(missing) + " of the other " + std::to_string(size - 1) + " processes did not reach rank 0 at " +
            host + ":" + std::to_string(port) + " within " + std::to_string(kAcceptSeconds) + " s (";
      for (int r = 1; r < size; ++r)
        if (!peers[static_cast<size_t>(r)].valid()) why += "rank " + std::to_string(r) + (r + 1 < size ? ", " : "");
      why += ")";
    }
  } else {
    Socket connection = connect_to(host, port, &why);
    const auto hello = side_channel_hello(token, rank, size);
    ready = connection.valid() && send_all(connection.fd(), hello.data(), hello.size());
    peers[0] = std::move(connection);
  }

  // Every rank learns whether all did, so all keep the channel or none does.
  const char mine = ready ? 1 : 0;
  std::vector<char> all(static_cast<size_t>(size));
  world.all_gather(&mine, 1, all.data(), std::vector<size_t>(all.size(), 1));
  if (std::find(all.begin(), all.end(), 0) != all.end()) {
    if (why_not && rank == 0) *why_not = why.empty() ? "another process could not say hello to rank 0" : why;
    return nullptr;
  }
  return std::make_unique<SocketChannel>(rank, size, std::move(peers));
}

std::unique_ptr<Collective> socket_side_channel_or_note(Collective& world, const std::string& host) {
  std::string why_not;
  std::unique_ptr<Collective> channel = socket_side_channel(world, host, &why_not);
  if (!channel && world.rank() == 0)
    std::fprintf(stderr, "note: no side channel for checkpoints (%s): each checkpoint gathers the memory banks whole "
                 "on rank 0\n", why_not.c_str());
  return channel;
}

}  // namespace mcdl
