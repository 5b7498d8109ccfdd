// A side channel (Collective::side_channel, engine/collective.h) over TCP, for a world whose own
// transport has none: the NCCL world, whose collectives are kernels queued on the training's
// stream, and an MPI without full thread support. Rank 0 listens; each other rank connects to it once, when the world starts. Gathers,
// broadcasts and barriers go through rank 0 (a star) in host memory only, so a checkpoint's rows
// can stream to rank 0 from a thread while training's collectives go on in the world.
//
// The wire: rank 0 offers its port and a random token through the world itself; a rank's first
// message is a 32-byte hello (magic, token, rank, world size), which rank 0 checks, so a stranger
// that connects to the port is turned away; then each transfer is an 8-byte length and the bytes,
// the length checked against the count the receiver expects.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "engine/collective.h"

namespace mcdl {

// Made by every rank of `world` at once (it uses the world's broadcast and all-gather). `host` is
// rank 0's address as the other ranks reach it, the same string on every rank. Returns null on
// every rank alike when the channel cannot be set up (rank 0 cannot listen there, a rank cannot
// connect within 20 s); then *why_not, on rank 0, says what failed. A one-process world gets a
// channel that needs no socket.
std::unique_ptr<Collective> socket_side_channel(Collective& world, const std::string& host,
                                                std::string* why_not = nullptr);

// socket_side_channel, or null after rank 0 printed why, saying that each checkpoint then gathers
// the memory banks whole on rank 0.
std::unique_ptr<Collective> socket_side_channel_or_note(Collective& world, const std::string& host);

// The hello a rank sends first, and rank 0's check of one (exposed for the tests and the fuzzer).
using SideChannelToken = std::array<uint8_t, 16>;
constexpr size_t kSideChannelHelloBytes = 32;
std::array<uint8_t, kSideChannelHelloBytes> side_channel_hello(const SideChannelToken& token, int rank, int size);
// The rank a hello comes from; throws (mcdl::Error, saying what is wrong) unless it is exactly
// kSideChannelHelloBytes long, carries the magic and `token`, names a world of `size` ranks and a
// rank in [1, size).
int side_channel_hello_rank(std::span<const uint8_t> hello, const SideChannelToken& token, int size);

}  // namespace mcdl
