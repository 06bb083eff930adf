// ChainDb's promise to readers (chain_db.hpp) while the skeleton of a sync moves into the chain
// (db/skeleton.cpp, docs/sync.md): reader threads read header ranges near and across the head and
// the fork point, canonical hashes, headers by hash, the head and the skeleton, while one writer
// builds a skeleton and links it (the chain grows from 4095 to 8191), freezes, reorganises the tip
// onto a side chain that forks at block 8000, and back onto mainnet. Every header served is byte
// for byte a mainnet header or a side-chain header of its number, every range is a contiguous chain
// (numbers consecutive, each parent hash the hash of the header before), and a range is the chain
// as it stood at one moment: the old chain, or a prefix of the new one, which ends at a head the
// writer set. scripts/sanitize.sh runs this under ThreadSanitizer.
//
// Interleaving is forced as in db/chain_db_concurrency_test.cpp (the harness of db/test_fixture.hpp):
// after every skeleton write, after every batch of a link and inside the freeze, the writer waits
// until every reader has completed a whole iteration that started after that point. Right before each link the writer
// lets the readers start new iterations without waiting, so that they read while the first batch (for a reorg, the one
// that overwrites canonical entries) is written, and now and then a reader holds its read lock a little longer
// (SlowingObserver), so that a writer that wrote before taking the lock would leave other readers
// a wide window onto entries that disagree with the head.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "core/block_header.hpp"
#include "core/chain_config.hpp"
#include "core/hex.hpp"
#include "db/chain_db.hpp"
#include "db/test_fixture.hpp"
#include "tests/side_chain.hpp"

namespace headerd::db {
namespace {

using headerd::testing::SideChain;
using testing::kAbove;
using testing::kChain;
using testing::kFreezeBatch;
using testing::kMaxCount;
using testing::kReaders;

constexpr uint64_t kStored = 4096;                 // blocks [0, 4096) are appended before the threads start
constexpr uint64_t kTop = kChain - 1;              // the trusted head of every skeleton
constexpr uint64_t kFork = 8000;                   // the side chain's first block
constexpr uint64_t kFirstKeep = 1000;              // the freeze before the threads: blocks [0, 3096)
constexpr uint64_t kLaterKeep = 1000;              // the freeze after the first link: blocks [0, 7192)
constexpr uint64_t kExtendBatch = 512;             // skeleton_extend of 8190..4096: 8 batches
constexpr uint64_t kReorgExtendBatch = 64;         // skeleton_extend of 8190..8000: 3 batches
constexpr uint64_t kLinkBatch = 97;                // the first link sets heads 4095 + 97k, then 8191
constexpr uint64_t kDip = kFork + kLinkBatch - 1;  // the head after a reorg's first link batch
constexpr uint64_t kSlowEvery = 3;                 // one store read in kSlowEvery holds the read lock kSlowRead longer
constexpr std::chrono::microseconds kSlowRead{300};

// What the writer is doing; each writer stop (epoch) belongs to one.
enum Phase : size_t {
    kStart,      // before the writer's first step: 0..4095 stored, 0..3095 frozen
    kBuild,      // skeleton_begin at mainnet 8191, skeleton_extend down to 4096
    kLink,       // skeleton_link: the head grows to 8191 in batches
    kFreeze,     // freeze to 8191 - kLaterKeep
    kSideBuild,  // a skeleton of the side chain, 8191 down to 8000
    kSideLink,   // the reorg onto it: 192 blocks replaced
    kBackBuild,  // a skeleton of mainnet, 8191 down to 8000
    kBackLink,   // the reorg back
    kPhases
};
constexpr std::array<const char*, kPhases> kPhaseNames{"start",      "build",     "link",       "freeze",
                                                       "side build", "side link", "back build", "back link"};
// The writer stops (waits for the readers) each phase has: a skeleton_begin and 8 or 3 extends; one
// stop per link batch; one per freeze batch and one after the freeze.
constexpr std::array<uint64_t, kPhases> kStops{0, 9, 43, 29, 4, 2, 4, 2};

enum Which : size_t { kReal, kSide };
constexpr std::array<const char*, 2> kWhichNames{"mainnet", "side-chain"};

// Mainnet blocks 0..8191 with what append() needs (testing::mainnet()), and the side chain
// 8000..8191. The side chain has mainnet's difficulties and timestamps, so a side-chain head has the
// total difficulty and timestamp of mainnet's block.
struct Fixture {
    const std::vector<NewHeader>& real = testing::mainnet();
    SideChain side{kFork, kTop};

    bool exists(Which w, uint64_t n) const { return n < kChain && (w == kReal || n >= kFork); }
    // REQUIRES: exists(w, n).
    const Hash32& hash(Which w, uint64_t n) const { return w == kReal ? real[n].hash : side.hash(n); }
    ByteView rlp(Which w, uint64_t n) const { return w == kReal ? real[n].rlp : side.rlp(n); }
    SkeletonHeader header(Which w, uint64_t n) const { return SkeletonHeader{rlp(w, n), hash(w, n), n}; }

    // Which chain's block n `rlp` is, byte for byte; nullopt for neither.
    std::optional<Which> identify(uint64_t n, ByteView bytes) const {
        for (Which w : {kReal, kSide}) {
            if (exists(w, n) && std::ranges::equal(bytes, rlp(w, n))) return w;
        }
        return std::nullopt;
    }
    std::optional<Which> identify_hash(uint64_t n, const Hash32& h) const {
        for (Which w : {kReal, kSide}) {
            if (exists(w, n) && h == hash(w, n)) return w;
        }
        return std::nullopt;
    }
};

const Fixture& fixture() {
    static const Fixture f;
    return f;
}

// Whether the writer ever makes block n of chain w the head: mainnet's 4095, the first link's
// batch ends 4095 + 97k and 8191, and on either chain a reorg's first batch end and 8191.
bool possible_head(Which w, uint64_t n) {
    if (n == kDip || n == kTop) return true;
    return w == kReal && n >= kStored - 1 && (n - (kStored - 1)) % kLinkBatch == 0;
}

// The head during a call lies in [lowest_head(before), highest_head(after)], given the heads read
// before and after it. Until the first link is done the head only grows; after it, it is kTop or,
// while a reorg is half linked, kDip, which is below every head of the first link's last batch.
uint64_t lowest_head(uint64_t before) { return std::min(before, kDip); }
uint64_t highest_head(uint64_t after) { return after < kDip ? after : kTop; }

// Counts the headers each store served, and makes every reader hold its read lock a while now and
// then, as a reader on a busy machine does: a writer that waits for readers waits longer, and a
// moment in which stored entries and the head disagree (written, head not yet moved) would be long
// enough for other readers to walk into.
struct SlowingObserver final : ReadObserver {
    std::array<std::atomic<uint64_t>, kStoreCount> headers{};
    void on_read(Store store, uint64_t n, std::chrono::steady_clock::duration) noexcept override {
        headers[static_cast<size_t>(store)].fetch_add(n, std::memory_order_relaxed);
        thread_local uint64_t reads = 0;
        if (++reads % kSlowEvery == 0) std::this_thread::sleep_for(kSlowRead);
    }
};

struct Counts {
    uint64_t iterations{0};
    uint64_t ranges{0};         // header_range calls checked
    uint64_t range_headers{0};  // headers they returned, each compared byte for byte and linked
    uint64_t side_headers{0};   // of which side-chain headers
    uint64_t short_ranges{0};   // ascending ranges that ended at the head of the moment, below 8191
    uint64_t across_fork{0};    // ranges holding blocks 7999 and 8000
    uint64_t by_number{0};      // canonical_hash found
    uint64_t by_hash{0};        // header_by_hash found
    uint64_t absent{0};         // lookups and ranges that found nothing, checked to be allowed
    uint64_t skeletons{0};      // skeleton() found and checked
    uint64_t heads{0};          // head() checked
    uint64_t dips{0};           // of which heads at kDip (a reorg half linked)

    void add(const Counts& o) {
        iterations += o.iterations;
        ranges += o.ranges;
        range_headers += o.range_headers;
        side_headers += o.side_headers;
        short_ranges += o.short_ranges;
        across_fork += o.across_fork;
        by_number += o.by_number;
        by_hash += o.by_hash;
        absent += o.absent;
        skeletons += o.skeletons;
        heads += o.heads;
        dips += o.dips;
    }
};

class SkeletonReader final : public testing::ReaderThread {
  public:
    SkeletonReader(const ChainDb& db, size_t index) : ReaderThread(db, 0x5ce1e700 + index) {}

    // Counts by the epoch each iteration started in.
    const std::vector<Counts>& by_epoch() const { return by_epoch_; }
    // Whether this reader saw block n of chain w as the head.
    bool saw_head(Which w, uint64_t n) const { return std::ranges::find(heads_seen_[w], n) != heads_seen_[w].end(); }

  private:
    struct Snapshot {
        uint64_t head{0};
        uint64_t ancient{0};
    };

    void enter_epoch(uint64_t e) override {
        if (by_epoch_.size() <= e) by_epoch_.resize(e + 1);
        counts_ = &by_epoch_[e];
    }

    // head() and ancient_items(), checked: the head is a block of one of the chains, one the writer
    // sets as head, with the right total difficulty and timestamp; the freezer never shrinks and never
    // runs past the head.
    bool snapshot(Snapshot& s) {
        const Fixture& fx = fixture();
        const std::optional<Head> h = db_.head();
        const uint64_t a = db_.ancient_items();
        if (!h) return fail("head() is empty on a database that has a chain");
        const std::optional<Which> w = fx.identify_hash(h->number, h->hash);
        if (!w) return fail(fmt::format("head {} {} is in neither chain", h->number, to_hex0x(h->hash)));
        if (!possible_head(*w, h->number)) {
            return fail(
                fmt::format("head is {} block {}, which the writer never makes the head", kWhichNames[*w], h->number));
        }
        const NewHeader& ref = fx.real[h->number];
        if (h->total_difficulty != ref.total_difficulty || h->timestamp != ref.timestamp) {
            return fail(fmt::format("head {} has a wrong total difficulty or timestamp", h->number));
        }
        if (a < last_ancient_) return fail(fmt::format("ancient_items went back: {} -> {}", last_ancient_, a));
        // The head is read first: the freezer may have grown since, but never past the newest head.
        const std::optional<Head> h2 = db_.head();
        if (!h2 || a > h2->number + 1) return fail(fmt::format("ancient_items {} beyond the head", a));
        last_ancient_ = a;
        stored_[*w] = std::max(stored_[*w], h->number + 1);
        if (!saw_head(*w, h->number)) heads_seen_[*w].push_back(h->number);
        s = Snapshot{h->number, a};
        ++counts_->heads;
        if (h->number == kDip) ++counts_->dips;
        return true;
    }

    // One header_range call, checked: block from, from +- 1, ..., each byte-equal to a block of that
    // number of either chain and each the parent of the next; as many as the head allowed at some
    // moment of the call; and, when it ended below the top, ending at a head the writer set.
    bool check_range(uint64_t from, uint64_t count, Order order) {
        const Fixture& fx = fixture();
        Snapshot before;
        if (!snapshot(before)) return false;
        auto r = db_.header_range(from, count, order, out_);
        Snapshot after;
        if (!snapshot(after)) return false;
        const bool asc = order == Order::kAscending;
        const std::string what = fmt::format("header_range({}, {}, {})", from, count, asc ? "asc" : "desc");
        if (!r) return fail(what + ": " + r.error().message);
        auto full = [&](uint64_t head) -> uint64_t {
            if (from > head) return 0;
            return asc ? std::min(count, head + 1 - from) : std::min(count, from + 1);
        };
        const uint64_t least = full(lowest_head(before.head));
        const uint64_t most = full(highest_head(after.head));
        const uint64_t n = out_.size();
        if (n < least || n > most) {
            return fail(fmt::format("{}: {} headers, expected {} to {} (heads {} and {} around it)", what, n, least,
                                    most, before.head, after.head));
        }
        if (!asc && n != 0 && n != full(kTop)) {
            return fail(fmt::format("{}: {} headers, a descending range is cut short", what, n));
        }
        std::optional<Which> top;  // the chain of the highest block in the range
        for (uint64_t i = 0; i < n; ++i) {
            const uint64_t number = asc ? from + i : from - i;
            const std::optional<Which> w = fx.identify(number, out_.item(i));
            if (!w) return fail(fmt::format("{}: item {} is not block {} of either chain", what, i, number));
            if (*w == kSide) ++counts_->side_headers;
            if (i == (asc ? n - 1 : 0)) top = w;
            if (i == 0) continue;
            // The lower block of the pair must be the parent of the higher one.
            const ByteView child = out_.item(asc ? i : i - 1);
            const ByteView parent = out_.item(asc ? i - 1 : i);
            auto peek = peek_header(child);
            if (!peek) return fail(fmt::format("{}: item {} does not decode", what, asc ? i : i - 1));
            if (peek->parent_hash != header_hash(parent)) {
                return fail(fmt::format("{}: block {} does not link to block {} before it: chains mixed", what,
                                        asc ? number : number + 1, asc ? number - 1 : number));
            }
        }
        if (asc && n > 0 && n < count) {
            // The head stopped it: the range is the chain up to the head of that moment.
            const uint64_t last = from + n - 1;
            if (!possible_head(*top, last)) {
                return fail(fmt::format("{}: ends at {} block {}, which the writer never makes the head", what,
                                        kWhichNames[*top], last));
            }
            if (last < kTop) ++counts_->short_ranges;
        }
        if (n == 0) ++counts_->absent;
        const uint64_t lo = n == 0 ? 0 : (asc ? from : from - (n - 1));
        const uint64_t hi = n == 0 ? 0 : (asc ? from + (n - 1) : from);
        if (n > 0 && lo < kFork && hi >= kFork) ++counts_->across_fork;
        ++counts_->ranges;
        counts_->range_headers += n;
        return true;
    }

    // canonical_hash: a hash of block `number` of either chain; absent only above the head of some
    // moment of the call.
    bool check_number(uint64_t number) {
        Snapshot before;
        if (!snapshot(before)) return false;
        auto r = db_.canonical_hash(number);
        if (!r) return fail(fmt::format("canonical_hash({}): {}", number, r.error().message));
        if (!*r) {
            if (number <= lowest_head(before.head)) {
                return fail(fmt::format("canonical_hash({}) absent, head {}", number, before.head));
            }
            ++counts_->absent;
            return true;
        }
        if (!fixture().identify_hash(number, **r)) {
            return fail(fmt::format("canonical_hash({}) = {} is in neither chain", number, to_hex0x(**r)));
        }
        ++counts_->by_number;
        return true;
    }

    // header_by_hash and number_by_hash of block `number` of chain w. A header once linked stays
    // stored (replaced headers become side-chain headers), so it may be absent only while this reader
    // has not yet seen that chain's head at or above it; it may be found earlier (written, not yet
    // the head).
    bool check_hash(Which w, uint64_t number) {
        const Fixture& fx = fixture();
        Snapshot before;
        if (!snapshot(before)) return false;
        const Hash32& hash = fx.hash(w, number);
        const std::string what = fmt::format("{} block {}", kWhichNames[w], number);
        auto found = db_.header_by_hash(hash, bytes_);
        if (!found) return fail(fmt::format("header_by_hash({}): {}", what, found.error().message));
        auto num = db_.number_by_hash(hash);
        if (!num) return fail(fmt::format("number_by_hash({}): {}", what, num.error().message));
        if (*num && **num != number) return fail(fmt::format("number_by_hash({}) = {}", what, **num));
        if (*found && !*num) return fail(fmt::format("{}: header found by hash, then its number not", what));
        if (!*found) {
            if (number < stored_[w]) {
                return fail(fmt::format("{} not found by hash (number {}), its chain's head was {}", what,
                                        num->has_value(), stored_[w] - 1));
            }
            ++counts_->absent;
            return true;
        }
        if (!std::ranges::equal(bytes_, fx.rlp(w, number))) {
            return fail(fmt::format("header_by_hash({}) differs", what));
        }
        ++counts_->by_hash;
        return true;
    }

    // skeleton(): absent, or a skeleton of one of the chains from its block 8191 down to a tail whose
    // parent hash it names.
    bool check_skeleton() {
        const Fixture& fx = fixture();
        const std::optional<Skeleton> s = db_.skeleton();
        if (!s) return true;
        const std::optional<Which> w = s->head == kTop ? fx.identify_hash(kTop, s->head_hash) : std::nullopt;
        if (!w) return fail(fmt::format("skeleton head {} {}", s->head, to_hex0x(s->head_hash)));
        if (s->tail > s->head || s->tail < (*w == kReal ? kStored : kFork)) {
            return fail(fmt::format("{} skeleton tail {}", kWhichNames[*w], s->tail));
        }
        const uint64_t below = s->tail - 1;
        if (s->tail_parent != fx.hash(fx.exists(*w, below) ? *w : kReal, below)) {
            return fail(
                fmt::format("{} skeleton tail {}: tail_parent is not block {}", kWhichNames[*w], s->tail, below));
        }
        ++counts_->skeletons;
        return true;
    }

    bool check_unknown_hash(uint64_t number) {
        Hash32 h = fixture().real[number].hash;
        h[31] ^= 0x5a;
        auto found = db_.header_by_hash(h, bytes_);
        if (!found) return fail(found.error().message);
        if (*found || !bytes_.empty()) return fail(fmt::format("a made-up hash near block {} was found", number));
        return true;
    }

    // Reads around the head as it is now, across the fork point and the freezer boundary, and
    // anywhere.
    bool iterate() override {
        Snapshot s;
        if (!snapshot(s)) return false;
        auto near = [&](uint64_t centre, uint64_t below, uint64_t above) {
            return centre - std::min(centre, below) + uniform(0, below + above);
        };
        const uint64_t near_head = near(s.head, 200, 60);
        if (!check_range(near_head, uniform(1, kMaxCount), any_order())) return false;
        if (!check_range(near(kFork, 150, 150), uniform(1, kMaxCount), any_order())) return false;
        if (!check_range(s.head, uniform(1, kMaxCount), Order::kDescending)) return false;
        if (!check_range(near(s.head, 16, 0), uniform(1, 64), Order::kAscending)) return false;
        if (!check_range(near(s.ancient, 100, 100), uniform(1, kMaxCount), any_order())) return false;
        if (!check_range(uniform(0, kChain + kAbove), uniform(1, kMaxCount), any_order())) return false;
        if (!check_number(near_head)) return false;
        if (!check_number(near(kDip, 100, 100))) return false;
        if (!check_number(uniform(0, kChain + kAbove))) return false;
        if (!check_hash(kReal, std::min(kTop, near_head))) return false;
        if (!check_hash(kReal, uniform(kFork, kTop))) return false;
        if (!check_hash(kSide, uniform(kFork, kTop))) return false;
        if (!check_hash(kReal, uniform(0, kTop))) return false;
        if (!check_skeleton()) return false;
        if (!check_unknown_hash(uniform(0, kTop))) return false;
        ++counts_->iterations;
        return true;
    }

    ItemBuffer out_;
    Bytes bytes_;
    uint64_t last_ancient_{0};
    // Per chain: one above the highest head of it this reader has seen (blocks below are stored).
    std::array<uint64_t, 2> stored_{0, 0};
    std::array<std::vector<uint64_t>, 2> heads_seen_;
    std::vector<Counts> by_epoch_;
    Counts* counts_{nullptr};
};

class SkeletonConcurrency : public testing::DatadirTest {
  protected:
    SkeletonConcurrency() : DatadirTest("skeleton-concurrency", 256 << 10) {}
};

TEST_F(SkeletonConcurrency, ReadersSeeOneWholeChainWhileTheWriterLinksAndReorganises) {
    const Fixture& fx = fixture();
    ASSERT_EQ(fx.real.size(), kChain);
    for (uint64_t n : {uint64_t{0}, kFork, kTop}) {
        ASSERT_EQ(header_hash(fx.real[n].rlp), fx.real[n].hash)
            << "tests/data hashes do not match the headers at " << n;
    }
    ASSERT_NE(fx.side.hash(kFork), fx.real[kFork].hash);
    ASSERT_EQ(peek_header(fx.side.rlp(kFork))->parent_hash, fx.real[kFork - 1].hash);

    ASSERT_TRUE(db_->set_config(mainnet_config()));
    ASSERT_TRUE(db_->append({fx.real.data(), kStored}));
    FreezeOptions first_freeze;
    first_freeze.keep = kFirstKeep;
    auto frozen = db_->freeze(first_freeze);
    ASSERT_TRUE(frozen) << frozen.error().message;
    ASSERT_EQ(*frozen, kStored - kFirstKeep);

    SlowingObserver observer;
    db_->set_read_observer(&observer);

    testing::Readers<SkeletonReader> pool(*db_);
    const auto& readers = pool.readers;
    testing::WriterStops& harness = pool.harness;

    // The phase of each epoch, written by the writer only and read after it is joined.
    std::vector<Phase> phase_of_epoch{kStart};
    std::array<uint64_t, kPhases> stops{};  // the epochs the writer waited for, by phase
    Phase phase = kStart;
    // Starts a new epoch: every reader may do kPerEpoch more iterations.
    auto release_readers = [&] {
        phase_of_epoch.push_back(phase);
        return harness.release();
    };
    // Makes every reader complete one whole iteration that starts after this call.
    auto let_readers_in = [&] {
        const uint64_t e = release_readers();
        ++stops[phase];
        harness.wait(e);
    };

    // A skeleton of chain w from kTop down to `bottom`, extend batch by batch.
    auto build = [&](Which w, uint64_t bottom, uint64_t batch) -> std::string {
        if (auto r = db_->skeleton_begin(fx.header(w, kTop)); !r) return "skeleton_begin: " + r.error().message;
        let_readers_in();
        for (uint64_t hi = kTop; hi > bottom;) {
            const uint64_t first = hi - 1;
            const uint64_t last = first + 1 - std::min(batch, first - bottom + 1);
            std::vector<SkeletonHeader> headers;
            for (uint64_t n = first; n >= last && n <= first; --n) headers.push_back(fx.header(w, n));
            if (auto r = db_->skeleton_extend(headers); !r) {
                return fmt::format("skeleton_extend {}..{}: {}", first, last, r.error().message);
            }
            let_readers_in();
            hi = last;
        }
        return "";
    };
    // Links the skeleton of chain w, expecting `replaced` blocks replaced and `batches` batches.
    auto link = [&](Which w, uint64_t replaced, uint64_t batches) -> std::string {
        auto point = db_->skeleton_link_point();
        if (!point) return "skeleton_link_point: " + point.error().message;
        if (!point->linked || point->replaced != replaced) {
            return fmt::format("skeleton_link_point: linked {}, replaced {}", point->linked, point->replaced);
        }
        uint64_t progress = 0;
        LinkOptions lo;
        lo.batch = kLinkBatch;
        lo.on_progress = [&](uint64_t, uint64_t) {
            ++progress;
            let_readers_in();
        };
        // Readers start fresh iterations while the first batch is written.
        release_readers();
        auto head = db_->skeleton_link(lo);
        if (!head) return "skeleton_link: " + head.error().message;
        if (head->number != kTop || head->hash != fx.hash(w, kTop) ||
            head->total_difficulty != fx.real[kTop].total_difficulty) {
            return fmt::format("skeleton_link: head {} {}", head->number, to_hex0x(head->hash));
        }
        if (progress != batches) return fmt::format("skeleton_link: {} batches, expected {}", progress, batches);
        if (db_->skeleton()) return "skeleton_link left a skeleton";
        return "";
    };

    std::string writer_failure;
    auto write = [&]() -> std::string {
        phase = kBuild;
        if (auto f = build(kReal, kStored, kExtendBatch); !f.empty()) return f;
        phase = kLink;
        if (auto f = link(kReal, 0, (kChain - kStored + kLinkBatch - 1) / kLinkBatch); !f.empty()) return f;
        phase = kFreeze;
        FreezeOptions fo;
        fo.keep = kLaterKeep;
        fo.batch = kFreezeBatch;
        fo.on_step = [&](FreezeStep s, uint64_t) {
            if (s == FreezeStep::kDeleted) let_readers_in();
            return true;
        };
        auto f = db_->freeze(fo);
        if (!f || *f != kChain - kLaterKeep) {
            return f ? fmt::format("freeze: {} frozen", *f) : "freeze: " + f.error().message;
        }
        let_readers_in();
        const uint64_t reorg_batches = (kChain - kFork + kLinkBatch - 1) / kLinkBatch;
        phase = kSideBuild;
        if (auto e = build(kSide, kFork, kReorgExtendBatch); !e.empty()) return e;
        phase = kSideLink;
        if (auto e = link(kSide, kChain - kFork, reorg_batches); !e.empty()) return e;
        phase = kBackBuild;
        if (auto e = build(kReal, kFork, kReorgExtendBatch); !e.empty()) return e;
        phase = kBackLink;
        if (auto e = link(kReal, kChain - kFork, reorg_batches); !e.empty()) return e;
        return "";
    };

    const double seconds = harness.run([&] { writer_failure = write(); });

    ASSERT_EQ(writer_failure, "");
    for (size_t p = 0; p < kPhases; ++p) EXPECT_EQ(stops[p], kStops[p]) << kPhaseNames[p];

    std::array<Counts, kPhases> by_phase{};
    Counts total;
    for (size_t i = 0; i < kReaders; ++i) {
        const SkeletonReader& r = *readers[i];
        EXPECT_EQ(r.failure(), "") << "reader " << i;
        std::array<Counts, kPhases> mine{};
        for (size_t e = 0; e < r.by_epoch().size(); ++e) mine[phase_of_epoch.at(e)].add(r.by_epoch()[e]);
        for (size_t p = 0; p < kPhases; ++p) {
            // One whole iteration per writer stop at least, each started after the stop (the epochs
            // the writer starts before a link without waiting guarantee none).
            EXPECT_GE(mine[p].iterations, stops[p]) << "reader " << i << ", " << kPhaseNames[p];
            by_phase[p].add(mine[p]);
            total.add(mine[p]);
        }
        // The writer stopped after each reorg's first batch and after each link: every reader saw
        // both chains half and wholly linked.
        for (Which w : {kReal, kSide}) {
            EXPECT_TRUE(r.saw_head(w, kDip)) << "reader " << i << " never saw " << kWhichNames[w] << " head " << kDip;
            EXPECT_TRUE(r.saw_head(w, kTop)) << "reader " << i << " never saw " << kWhichNames[w] << " head " << kTop;
        }
        EXPECT_TRUE(r.saw_head(kReal, kStored - 1)) << "reader " << i;
    }
    // Enough of every kind of read in every phase that the test cannot pass by reading nothing (about
    // half of what a run does; "start" is the few iterations before the writer's first step).
    for (size_t p = kBuild; p < kPhases; ++p) {
        const Counts& c = by_phase[p];
        EXPECT_GE(c.ranges, 6 * c.iterations) << kPhaseNames[p];
        EXPECT_GE(c.range_headers, 100 * c.iterations) << kPhaseNames[p];
        EXPECT_GE(c.by_number, c.iterations / 2) << kPhaseNames[p];
        EXPECT_GE(c.by_hash, c.iterations / 2) << kPhaseNames[p];
        EXPECT_GE(c.heads, c.ranges) << kPhaseNames[p];
    }
    // Iterations of a build phase start while its skeleton is stored: each of them saw it.
    for (size_t p : {kBuild, kSideBuild, kBackBuild}) EXPECT_GE(by_phase[p].skeletons, by_phase[p].iterations);
    EXPECT_GE(by_phase[kLink].short_ranges, by_phase[kLink].iterations / 2);
    EXPECT_GT(by_phase[kSideLink].side_headers, 0u);
    EXPECT_GT(by_phase[kBackBuild].side_headers, 0u);  // the side chain is canonical then
    EXPECT_GE(by_phase[kSideLink].dips, kReaders);
    EXPECT_GE(by_phase[kBackLink].dips, kReaders);
    uint64_t across_fork = 0;
    uint64_t late_iterations = 0;
    for (size_t p = kFreeze; p < kPhases; ++p) {
        across_fork += by_phase[p].across_fork;
        late_iterations += by_phase[p].iterations;
    }
    EXPECT_GE(across_fork, late_iterations / 8);  // from the freeze on, the chain reaches past the fork
    EXPECT_GT(total.absent, 0u);

    std::printf("%.1f s, %zu epochs, %llu reader iterations\n", seconds, phase_of_epoch.size() - 1,
                static_cast<unsigned long long>(total.iterations));
    for (size_t p = 0; p < kPhases; ++p) {
        const Counts& c = by_phase[p];
        std::printf(
            "  %-10s %3llu stops, %4llu iterations: %5llu ranges (%7llu headers, %6llu side-chain, %4llu ending at "
            "the head, %4llu across the fork), %4llu by number, %4llu by hash, %4llu absent, %4llu skeletons, %5llu "
            "heads (%llu mid-reorg)\n",
            kPhaseNames[p], static_cast<unsigned long long>(stops[p]), static_cast<unsigned long long>(c.iterations),
            static_cast<unsigned long long>(c.ranges), static_cast<unsigned long long>(c.range_headers),
            static_cast<unsigned long long>(c.side_headers), static_cast<unsigned long long>(c.short_ranges),
            static_cast<unsigned long long>(c.across_fork), static_cast<unsigned long long>(c.by_number),
            static_cast<unsigned long long>(c.by_hash), static_cast<unsigned long long>(c.absent),
            static_cast<unsigned long long>(c.skeletons), static_cast<unsigned long long>(c.heads),
            static_cast<unsigned long long>(c.dips));
    }

    EXPECT_GT(observer.headers[static_cast<size_t>(Store::kAncient)].load(), 0u);
    EXPECT_GT(observer.headers[static_cast<size_t>(Store::kLevelDb)].load(), 0u);

    // After the threads: mainnet 0..8191, and again after reopening.
    db_->set_read_observer(nullptr);
    for (int pass = 0; pass < 2; ++pass) {
        const std::optional<Head> head = db_->head();
        ASSERT_TRUE(head);
        EXPECT_EQ(head->number, kTop);
        EXPECT_EQ(head->hash, fx.real[kTop].hash);
        EXPECT_EQ(head->total_difficulty, fx.real[kTop].total_difficulty);
        EXPECT_EQ(db_->ancient_items(), kChain - kLaterKeep);
        EXPECT_FALSE(db_->skeleton());
        ItemBuffer out;
        ASSERT_TRUE(db_->header_range(0, kChain, Order::kAscending, out));
        ASSERT_EQ(out.size(), kChain);
        for (uint64_t n = 0; n < kChain; ++n) ASSERT_TRUE(std::ranges::equal(out.item(n), fx.real[n].rlp)) << n;
        for (uint64_t n = kFork; n < kChain; ++n) {
            auto c = db_->canonical_hash(n);
            ASSERT_TRUE(c && *c);
            ASSERT_EQ(**c, fx.real[n].hash) << n;
        }
        ASSERT_NO_FATAL_FAILURE(reopen());
    }
}

}  // namespace
}  // namespace headerd::db
