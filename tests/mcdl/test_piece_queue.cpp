// The queue between the training thread and the checkpoint's writer thread
// (mcdl/run/piece_queue.h): pieces in order, at most `capacity` waiting, and once closed no waits.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "mcdl/run/piece_queue.h"

using namespace mcdl;

namespace {

std::string text(const std::vector<char>& piece) { return {piece.begin(), piece.end()}; }

}  // namespace

TEST_CASE("piece queue: pieces come out in order; empty ones are not kept") {
  PieceQueue queue(3);
  CHECK(queue.has_room());
  queue.push("ab", 2);
  queue.push("", 0);
  queue.push("cde", 3);
  CHECK(text(queue.pop()) == "ab");
  CHECK(text(queue.pop()) == "cde");
}

TEST_CASE("piece queue: a push waits while `capacity` pieces wait, until one is taken") {
  PieceQueue queue(2);
  queue.push("a", 1);
  queue.push("b", 1);
  CHECK_FALSE(queue.has_room());
  std::atomic<bool> pushed = false;
  std::thread third([&] {
    queue.push("c", 1);
    pushed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK_FALSE(pushed);
  CHECK(text(queue.pop()) == "a");
  third.join();
  CHECK(pushed);
  CHECK(text(queue.pop()) == "b");
  CHECK(text(queue.pop()) == "c");
}

TEST_CASE("piece queue: closed, a waiting pop throws and a waiting push returns, its piece dropped") {
  SUBCASE("a pop waiting for a piece") {
    PieceQueue queue(1);
    std::thread closer([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      queue.close();
    });
    CHECK_THROWS_WITH(queue.pop(), doctest::Contains("the run ended before they were all sent"));
    closer.join();
  }
  SUBCASE("a push waiting for room") {
    PieceQueue queue(1);
    queue.push("a", 1);
    std::thread closer([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      queue.close();
    });
    queue.push("b", 1);  // returns once closed
    closer.join();
    CHECK(queue.has_room());  // a push would not wait
    queue.push("c", 1);  // dropped
    CHECK_THROWS(queue.pop());
  }
}
