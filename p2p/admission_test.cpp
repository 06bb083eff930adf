// PeerAdmission: the pending-handshake cap and its slot-free callback, the peer cap, duplicate and
// self node ids, and the counts under many threads at once.

#include "p2p/admission.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_util.hpp"

namespace headerd::p2p {
namespace {

using namespace std::chrono_literals;
using Verdict = PeerAdmission::Verdict;

NodeId node(uint32_t n) {
    NodeId id{};
    for (size_t i = 0; i < 4; ++i) id[i] = static_cast<uint8_t>(n >> (8 * i));
    id[63] = 0x5a;
    return id;
}

const NodeId kSelf = node(0xffff'ffff);

TEST(PeerAdmission, PendingHandshakesAreCapped) {
    PeerAdmission a(10, 3, kSelf);
    EXPECT_EQ(a.max_pending(), 3u);
    EXPECT_TRUE(a.try_begin_handshake());
    EXPECT_TRUE(a.try_begin_handshake());
    EXPECT_TRUE(a.try_begin_handshake());
    EXPECT_EQ(a.pending(), 3u);
    EXPECT_FALSE(a.try_begin_handshake());
    EXPECT_FALSE(a.try_begin_handshake());
    EXPECT_EQ(a.pending(), 3u) << "a refused attempt must not count";
    a.end_handshake();
    EXPECT_EQ(a.pending(), 2u);
    EXPECT_TRUE(a.try_begin_handshake());
    EXPECT_FALSE(a.try_begin_handshake());
    for (int i = 0; i < 3; ++i) a.end_handshake();
    EXPECT_EQ(a.pending(), 0u);
    // Handshakes are not peers.
    EXPECT_EQ(a.peers(), 0u);
}

TEST(PeerAdmission, ZeroPendingMeansOne) {
    PeerAdmission a(10, 0, kSelf);
    EXPECT_EQ(a.max_pending(), 1u);
    EXPECT_TRUE(a.try_begin_handshake());
    EXPECT_FALSE(a.try_begin_handshake());
}

// The acceptor sleeps after a refusal; the callback is its wake-up call: exactly one per refusal
// episode (however many refusals), on the next end_handshake, and never without a refusal.
TEST(PeerAdmission, SlotFreeCallbackFiresOnceAfterARefusal) {
    PeerAdmission a(10, 2, kSelf);
    int calls = 0;
    a.on_slot_free([&] { ++calls; });
    ASSERT_TRUE(a.try_begin_handshake());
    ASSERT_TRUE(a.try_begin_handshake());
    a.end_handshake();
    EXPECT_EQ(calls, 0) << "a slot freed with nobody refused";
    ASSERT_TRUE(a.try_begin_handshake());
    EXPECT_FALSE(a.try_begin_handshake());
    EXPECT_FALSE(a.try_begin_handshake());
    EXPECT_FALSE(a.try_begin_handshake());
    EXPECT_EQ(calls, 0);
    a.end_handshake();
    EXPECT_EQ(calls, 1);
    a.end_handshake();
    EXPECT_EQ(calls, 1) << "one wake-up per refusal episode";
    // A second episode gets its own call.
    ASSERT_TRUE(a.try_begin_handshake());
    ASSERT_TRUE(a.try_begin_handshake());
    EXPECT_FALSE(a.try_begin_handshake());
    a.end_handshake();
    EXPECT_EQ(calls, 2);
    a.end_handshake();
    EXPECT_EQ(calls, 2);
}

TEST(PeerAdmission, PeersAreCappedAndSlotsReused) {
    PeerAdmission a(2, 8, kSelf);
    EXPECT_EQ(a.max_peers(), 2u);
    EXPECT_EQ(a.admit(node(1)), Verdict::kAdmitted);
    EXPECT_EQ(a.admit(node(2)), Verdict::kAdmitted);
    EXPECT_EQ(a.peers(), 2u);
    EXPECT_EQ(a.admit(node(3)), Verdict::kFull);
    EXPECT_EQ(a.peers(), 2u);
    a.release(node(1));
    EXPECT_EQ(a.peers(), 1u);
    EXPECT_EQ(a.admit(node(3)), Verdict::kAdmitted);
    EXPECT_EQ(a.admit(node(1)), Verdict::kFull);
    a.release(node(2));
    a.release(node(3));
    EXPECT_EQ(a.peers(), 0u);
    // Releasing an id that is not a peer changes nothing.
    a.release(node(9));
    EXPECT_EQ(a.peers(), 0u);
    EXPECT_EQ(a.admit(node(1)), Verdict::kAdmitted);
    EXPECT_EQ(a.peers(), 1u);
}

TEST(PeerAdmission, DuplicateAndSelfAreRefusedAndNotCounted) {
    PeerAdmission a(2, 8, kSelf);
    EXPECT_EQ(a.admit(kSelf), Verdict::kSelf);
    EXPECT_EQ(a.peers(), 0u);
    EXPECT_EQ(a.admit(node(1)), Verdict::kAdmitted);
    EXPECT_EQ(a.admit(node(1)), Verdict::kDuplicate);
    EXPECT_EQ(a.peers(), 1u);
    EXPECT_EQ(a.admit(node(2)), Verdict::kAdmitted);
    // Full, yet the more specific verdicts win: the same node again is a duplicate, ourselves is self.
    EXPECT_EQ(a.admit(node(1)), Verdict::kDuplicate);
    EXPECT_EQ(a.admit(kSelf), Verdict::kSelf);
    EXPECT_EQ(a.admit(node(3)), Verdict::kFull);
    // A refused duplicate does not release the original: after one release the id is free.
    a.release(node(1));
    EXPECT_EQ(a.peers(), 1u);
    EXPECT_EQ(a.admit(node(1)), Verdict::kAdmitted);
    EXPECT_EQ(a.peers(), 2u);
}

// Many threads handshaking and joining at once: the caps hold at every moment, a node id is never
// admitted twice at once, the counts end at zero, and every refusal is followed by a wake-up (an
// acceptor waiting for it never sleeps forever).
TEST(PeerAdmission, CountsHoldUnderConcurrentThreads) {
    testing::HangGuard guard("CountsHoldUnderConcurrentThreads", 60s);
    constexpr size_t kMaxPeers = 5;
    constexpr size_t kMaxPending = 3;
    constexpr int kThreads = 8;
    constexpr int kRounds = 4000;
    PeerAdmission a(kMaxPeers, kMaxPending, kSelf);

    // An acceptor like Server's: at the cap it sleeps until the slot-free callback.
    // Each call starts a new generation; a refused thread waits for the generation to move on.
    std::mutex mutex;
    std::condition_variable cv;
    uint64_t generation = 0;
    a.on_slot_free([&] {
        std::lock_guard lock(mutex);
        ++generation;
        cv.notify_all();
    });

    std::atomic<int> in_handshake{0};
    std::atomic<int> most_in_handshake{0};
    std::atomic<int> joined{0};
    std::atomic<int> most_joined{0};
    std::atomic<int> admitted{0};
    std::atomic<int> refused_full{0};
    std::atomic<int> lost_wakeups{0};
    std::vector<std::atomic<int>> holders(16);  // node ids 0..15, shared by all threads
    std::atomic<int> double_admissions{0};
    auto note_max = [](std::atomic<int>& most, int now) {
        int m = most.load();
        while (now > m && !most.compare_exchange_weak(m, now)) {
        }
    };

    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            for (int r = 0; r < kRounds; ++r) {
                bool began = false;
                {
                    std::unique_lock lock(mutex);
                    const uint64_t seen = generation;
                    began = a.try_begin_handshake();
                    if (!began) {
                        // Held while trying, so a callback cannot slip in between the refusal and
                        // the wait. One second without a wake-up is a lost one.
                        if (!cv.wait_for(lock, 1s, [&] { return generation != seen; })) ++lost_wakeups;
                    }
                }
                if (!began) continue;
                note_max(most_in_handshake, ++in_handshake);
                std::this_thread::yield();
                --in_handshake;
                a.end_handshake();

                const uint32_t id = static_cast<uint32_t>((t * 7 + r) % 16);
                const Verdict v = a.admit(node(id));
                if (v == Verdict::kFull) ++refused_full;
                if (v != Verdict::kAdmitted) continue;
                ++admitted;
                if (holders[id].fetch_add(1) != 0) ++double_admissions;
                note_max(most_joined, ++joined);
                std::this_thread::yield();
                --joined;
                holders[id].fetch_sub(1);
                a.release(node(id));
            }
        });
    }
    for (auto& th : threads) th.join();

    EXPECT_EQ(a.pending(), 0u);
    EXPECT_EQ(a.peers(), 0u);
    EXPECT_LE(most_in_handshake.load(), static_cast<int>(kMaxPending));
    EXPECT_LE(most_joined.load(), static_cast<int>(kMaxPeers));
    EXPECT_EQ(double_admissions.load(), 0) << "one node id admitted twice at once";
    EXPECT_EQ(lost_wakeups.load(), 0) << "a refused acceptor was never told a slot freed";
    EXPECT_GT(admitted.load(), 0);
    // Afterwards the caps are whole again.
    for (size_t i = 0; i < kMaxPending; ++i) EXPECT_TRUE(a.try_begin_handshake());
    EXPECT_FALSE(a.try_begin_handshake());
    for (uint32_t i = 0; i < kMaxPeers; ++i) EXPECT_EQ(a.admit(node(100 + i)), Verdict::kAdmitted);
    EXPECT_EQ(a.admit(node(200)), Verdict::kFull);
    EXPECT_EQ(a.peers(), kMaxPeers);
}

}  // namespace
}  // namespace headerd::p2p
