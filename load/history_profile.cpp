#include "load/history_profile.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <unordered_map>

namespace headerd::load {

namespace {

using namespace std::chrono_literals;

// How a client sizes its body and receipt requests.
enum class SizeRule {
    kFixed,        // always the profile's size (Besu's batch of 128 headers, reth's 200)
    kGethMsgrate,  // the session's capacity estimate, at most the profile's size (geth's BodyCapacity)
    kNethermind,   // NethermindSizer
};

// One client's way of asking for history; docs/load.md names the source of each field.
struct Shape {
    std::string_view header_step;
    uint64_t header_amount{0};
    bool header_ascending{false};       // Nethermind asks each header batch ascending
    bool receipts{true};                // asks receipt lists at all (reth executes blocks instead)
    bool skip_empty_bodies{false};      // geth, reth: a header without transactions, uncles or withdrawals
    bool skip_empty_receipts{false};    // geth, Besu: a header whose receipts root is the empty trie's
    bool dedup_receipt_roots{false};    // Besu: one block per distinct receipts root
    bool descending{false};             // Nethermind: each request from the highest block down
    bool receipts_after_bodies{false};  // Besu: a batch's receipts after its bodies
    SizeRule size_rule{SizeRule::kFixed};
    uint64_t body_size{128};
    uint64_t receipt_size{128};
    uint64_t body_initial{4};  // Nethermind's sizers
    uint64_t receipt_initial{8};
    uint32_t per_kind{1};  // requests of one message in flight
};

const Shape* shape_of(std::string_view name) {
    // geth: skeleton.go (requestHeaders = 512), downloader.go (MaxBlockFetch = 128,
    // MaxReceiptFetch = 256), peer.go (BodyCapacity, ReceiptCapacity), queue.go (Schedule skips
    // EmptyBody and EmptyReceipts headers; reserveHeaders pops the lowest block first),
    // fetchers_concurrent.go (one request of each kind per peer).
    static constexpr Shape kGeth{"skeleton", 512, false, true, true, true, false, false, false, SizeRule::kGethMsgrate,
                                 128,        256, 0,     0,    1};
    // Nethermind: HeadersSyncFeed (192, ascending), BodiesSyncFeed and ReceiptsSyncFeed over
    // SyncStatusList (every block, from the pivot down), NodeStatsLight's sizers (bodies 4..128,
    // receipts 8..128), AllocationContexts (one request per peer and context).
    static constexpr Shape kNethermind{"fast headers",        192, true, true, false, false, false, true, false,
                                       SizeRule::kNethermind, 128, 128,  4,    8,     1};
    // Besu: DownloadBackwardHeadersStep (192, reverse), SnapSyncChainDownloadPipelineFactory
    // (forward batches of 128 headers: bodies, then receipts), GetSyncBlockBodiesFromPeerTask (every
    // header), DownloadSyncReceiptsStep (no empty receipts root, one block per root), EthPeer
    // (MAX_OUTSTANDING_REQUESTS = 5).
    static constexpr Shape kBesu{"backward headers", 192, false, true, false, true, true, false, true,
                                 SizeRule::kFixed,   128, 128,   0,    0,     5};
    // reth: reverse_headers.rs (1000, reverse), BodiesConfig (downloader_request_limit = 200),
    // bodies/request.rs (empty headers are not asked), no receipts over the wire.
    static constexpr Shape kReth{"reverse headers", 1000, false, false, true, false, false, false, false,
                                 SizeRule::kFixed,  200,  0,     0,     0,    1};
    if (name == "geth-history") return &kGeth;
    if (name == "nethermind-history") return &kNethermind;
    if (name == "besu-history") return &kBesu;
    if (name == "reth-history") return &kReth;
    return nullptr;
}

constexpr size_t kBodies = 0;
constexpr size_t kReceipts = 1;
constexpr int kMaxTries = 3;  // a block asked this often without a good reply is given up

class HistoryWalk final : public Walk {
  public:
    explicit HistoryWalk(const Shape& shape) : shape_(shape) {
        sizers_[kBodies].size = shape.body_initial;
        sizers_[kBodies].max = shape.body_size;
        sizers_[kReceipts].size = shape.receipt_initial;
        sizers_[kReceipts].max = shape.receipt_size;
    }

    std::optional<Planned> next(const ChainView& chain, std::mt19937_64& /*rng*/) override {
        if (!window_) return header_request(chain);
        prefer_ = 1 - prefer_;
        for (size_t k : {prefer_, 1 - prefer_}) {
            if (auto p = history_request(k, chain)) return p;
        }
        return std::nullopt;
    }

    void done(const Planned& p, RequestOutcome outcome, const ReplyFacts* /*facts*/) override {
        if (p.generation != generation_ || p.history) return;
        header_asked_ = false;
        // A window without a block to ask (an empty reply, or nothing but empty blocks): the next.
        if (outcome == RequestOutcome::kGood && !window_) {
            cursor_ = planned_low_ > 0 ? std::optional<uint64_t>(planned_low_ - 1) : std::nullopt;
        }
    }

    void headers(const Planned& p, std::span<const ByteView> headers) override {
        if (p.generation != generation_ || p.history || window_) return;
        std::vector<std::shared_ptr<const HistoryBlock>> blocks;
        for (ByteView h : headers) {
            if (auto b = make_history_block(h)) blocks.push_back(*b);
        }
        if (blocks.empty()) return;
        std::sort(blocks.begin(), blocks.end(), [](const auto& a, const auto& b) { return a->number < b->number; });
        for (auto& q : queues_) q.clear();
        for (auto& i : index_) i.clear();
        std::set<Hash32> roots;
        for (const auto& b : blocks) {
            if (!(shape_.skip_empty_bodies && b->empty_body())) queues_[kBodies].push_back(entry(b));
            if (!shape_.receipts || (shape_.skip_empty_receipts && b->empty_receipts())) continue;
            if (shape_.dedup_receipt_roots && !roots.insert(b->header.receipts_root).second) continue;
            queues_[kReceipts].push_back(entry(b));
        }
        for (size_t k : {kBodies, kReceipts}) {
            if (shape_.descending) std::reverse(queues_[k].begin(), queues_[k].end());
            for (size_t i = 0; i < queues_[k].size(); ++i) index_[k][queues_[k][i].block->number] = i;
        }
        cursor_ = blocks.front()->number > 0 ? std::optional<uint64_t>(blocks.front()->number - 1) : std::nullopt;
        window_ = !queues_[kBodies].empty() || !queues_[kReceipts].empty();
    }

    void done_history(const Planned& p, RequestOutcome outcome, const HistoryFacts* facts) override {
        const HistoryAsk& ask = *p.history;
        const size_t k = ask.bodies() ? kBodies : kReceipts;
        if (in_flight_[k] > 0) --in_flight_[k];
        if (p.generation != generation_ || !window_) return;
        const bool good = outcome == RequestOutcome::kGood;
        const bool failed = outcome == RequestOutcome::kInvalid || outcome == RequestOutcome::kTimeout;
        if (good || failed) {
            sizers_[k].update(failed, ask.blocks.size(), good ? facts->items : 0, good ? facts->bytes : 0,
                              good ? facts->rtt : Clock::duration::zero());
        }
        for (size_t i = 0; i < ask.blocks.size(); ++i) {
            auto it = index_[k].find(ask.blocks[i]->number);
            if (it == index_[k].end()) continue;
            Entry& e = queues_[k][it->second];
            if (good && i < facts->complete) {
                e.state = State::kDone;
                e.held.clear();
                e.held_count = 0;
            } else if (good && facts->last_incomplete && i == facts->complete) {
                e.state = State::kPending;
                e.held = facts->partial;
                e.held_count = facts->partial_count;
            } else if (good) {
                // Not in the reply: an empty one says the server lacks them (geth marks them so and
                // asks that peer no more); after a short one the rest is asked again.
                e.state = facts->items == 0 ? State::kGivenUp : State::kPending;
            } else if (failed) {
                e.state = ++e.tries >= kMaxTries ? State::kGivenUp : State::kPending;
            } else {
                e.state = State::kPending;
            }
        }
        const auto finished = [](const Entry& e) { return e.state == State::kDone || e.state == State::kGivenUp; };
        if (std::all_of(queues_[kBodies].begin(), queues_[kBodies].end(), finished) &&
            std::all_of(queues_[kReceipts].begin(), queues_[kReceipts].end(), finished)) {
            window_ = false;
        }
    }

  private:
    enum class State { kPending, kAsked, kDone, kGivenUp };
    struct Entry {
        std::shared_ptr<const HistoryBlock> block;
        State state{State::kPending};
        int tries{0};
        Bytes held;  // eth/70: this block's receipts so far, when a reply cut its list
        uint64_t held_count{0};
    };
    static Entry entry(std::shared_ptr<const HistoryBlock> block) {
        Entry e;
        e.block = std::move(block);
        return e;
    }

    std::optional<Planned> header_request(const ChainView& chain) {
        if (header_asked_) return std::nullopt;
        // The blocks a client of this server asks for: eth/69+ only what the server announced; none
        // below the reference chain; never the genesis (geth's skeleton and Nethermind's feeds stop above it).
        uint64_t lower = std::max<uint64_t>({1, chain.lowest, chain.earliest.value_or(0)});
        lower = std::min(lower, chain.head);
        if (!cursor_ || *cursor_ < lower || *cursor_ > chain.head) cursor_ = chain.head;
        const uint64_t top = *cursor_;
        const uint64_t amount = std::min<uint64_t>(shape_.header_amount, top - lower + 1);
        planned_low_ = top - amount + 1;
        header_asked_ = true;
        Planned p;
        p.request.origin = eth::HashOrNumber::of(shape_.header_ascending ? planned_low_ : top);
        p.request.amount = amount;
        p.request.reverse = !shape_.header_ascending;
        p.step = shape_.header_step;
        p.generation = ++generation_;
        return p;
    }

    uint64_t size_for(size_t k, const ChainView& chain) const {
        const uint64_t most = k == kBodies ? shape_.body_size : shape_.receipt_size;
        switch (shape_.size_rule) {
            case SizeRule::kGethMsgrate:
                return std::min(most, k == kBodies ? chain.body_capacity : chain.receipt_capacity);
            case SizeRule::kNethermind:
                return sizers_[k].size;
            case SizeRule::kFixed:
                break;
        }
        return most;
    }

    bool eligible(size_t k, const Entry& e) const {
        if (e.state != State::kPending) return false;
        if (k != kReceipts || !shape_.receipts_after_bodies) return true;
        auto it = index_[kBodies].find(e.block->number);
        if (it == index_[kBodies].end()) return true;
        const State body = queues_[kBodies][it->second].state;
        return body == State::kDone || body == State::kGivenUp;
    }

    std::optional<Planned> history_request(size_t k, const ChainView& chain) {
        if (queues_[k].empty() || in_flight_[k] >= shape_.per_kind) return std::nullopt;
        const uint64_t size = std::max<uint64_t>(1, size_for(k, chain));
        auto ask = std::make_shared<HistoryAsk>();
        ask->request = k == kBodies ? eth::MessageId::kGetBlockBodies : eth::MessageId::kGetReceipts;
        std::vector<size_t> picked;
        // A list a reply cut goes first, asked from its first missing receipt (eth/70).
        for (size_t i = 0; i < queues_[k].size(); ++i) {
            if (queues_[k][i].held_count > 0 && eligible(k, queues_[k][i])) {
                picked.push_back(i);
                ask->first_receipt_index = queues_[k][i].held_count;
                ask->held = queues_[k][i].held;
                break;
            }
        }
        for (size_t i = 0; i < queues_[k].size() && picked.size() < size; ++i) {
            const Entry& e = queues_[k][i];
            if (e.held_count == 0 && eligible(k, e)) picked.push_back(i);
        }
        if (picked.empty()) return std::nullopt;
        for (size_t i : picked) {
            Entry& e = queues_[k][i];
            e.state = State::kAsked;
            ask->blocks.push_back(e.block);
            ask->hashes.push_back(e.block->hash);
        }
        ++in_flight_[k];
        Planned p;
        p.history = std::move(ask);
        p.step = k == kBodies ? "bodies" : "receipts";
        p.generation = generation_;
        return p;
    }

    Shape shape_;
    std::vector<Entry> queues_[2];                   // bodies, receipts: in the order asked
    std::unordered_map<uint64_t, size_t> index_[2];  // block number -> queue position
    NethermindSizer sizers_[2];
    uint32_t in_flight_[2]{0, 0};
    size_t prefer_{0};
    bool window_{false};
    bool header_asked_{false};
    std::optional<uint64_t> cursor_;  // the top of the next window
    uint64_t planned_low_{0};
    uint64_t generation_{0};  // one per window
};

// ---- judges ------------------------------------------------------------------------------------

std::optional<VerdictEvent> drop_peer(std::string reason) { return VerdictEvent{true, std::move(reason)}; }
std::optional<VerdictEvent> penalise(std::string reason) { return VerdictEvent{false, std::move(reason)}; }

bool empty_reply(RequestOutcome o, const HistoryFacts* f) {
    return o == RequestOutcome::kGood && f->items == 0 && f->asked > 0;
}

// A history judge whose header phase is judged as another profile's (geth-skeleton, nethermind).
class HeaderPhaseAs : public Judge {
  public:
    explicit HeaderPhaseAs(const char* profile) : headers_(make_judge(*find_profile(profile))) {}
    std::optional<VerdictEvent> judge(const Planned& p, RequestOutcome o, const ReplyFacts* f,
                                      Clock::time_point now) override {
        return headers_->judge(p, o, f, now);
    }

  private:
    std::unique_ptr<Judge> headers_;
};

// geth: the header phase as geth-skeleton; a body or receipt list that does not match its header
// (errInvalidBody, errInvalidReceipt) drops the peer (queue.go deliver, fetchers_concurrent.go);
// a timed-out request of 2 items or fewer drops it, of more sets its capacity to 0; an empty reply
// marks the blocks lacking from that peer, a short one is taken and the rest asked again.
class GethHistoryJudge final : public HeaderPhaseAs {
  public:
    GethHistoryJudge() : HeaderPhaseAs("geth-skeleton") {}
    std::optional<VerdictEvent> judge_history(const Planned& p, RequestOutcome o, const HistoryFacts* f,
                                              Clock::time_point) override {
        const bool bodies = p.history->bodies();
        if (o == RequestOutcome::kInvalid) return drop_peer(bodies ? "invalid body" : "invalid receipts");
        if (o == RequestOutcome::kTimeout) {
            if (p.history->blocks.size() <= 2) return drop_peer("timeout of a request for 2 items or fewer");
            return penalise("timeout: capacity set to 0");
        }
        if (empty_reply(o, f)) return penalise("empty reply: blocks marked lacking");
        return std::nullopt;
    }
};

// Nethermind: BodiesSyncFeed and ReceiptsSyncFeed report a body or receipt list that does not
// match its header as a breach of protocol (disconnect); a reply that inserts nothing (empty) and
// a timeout make the peer weak (it sleeps). The header phase as the nethermind profile.
class NethermindHistoryJudge final : public HeaderPhaseAs {
  public:
    NethermindHistoryJudge() : HeaderPhaseAs("nethermind") {}
    std::optional<VerdictEvent> judge_history(const Planned& p, RequestOutcome o, const HistoryFacts* f,
                                              Clock::time_point) override {
        if (o == RequestOutcome::kInvalid) {
            return drop_peer(p.history->bodies() ? "breach of protocol: invalid tx or uncles root"
                                                 : "breach of protocol: invalid receipts root");
        }
        if (o == RequestOutcome::kTimeout) return penalise("weak peer: timeout");
        if (o == RequestOutcome::kGood && f->complete == 0 && f->asked > 0) {
            return penalise("weak peer: no sync progress");
        }
        return std::nullopt;
    }
};

// Besu (PeerTaskExecutor, PeerReputation): a reply a task rejects is "useless" (5 within a minute
// disconnect); for bodies and receipts that is an empty reply, one with more items than asked, and
// a body or receipt list that matches no header asked (GetSyncBlockBodiesFromPeerTask,
// GetSyncReceiptsFromPeerTask). 5 timeouts of one message in a row disconnect; any reply of that
// message resets its count. Headers as the besu profile: an empty header reply costs nothing.
class BesuHistoryJudge final : public Judge {
  public:
    std::optional<VerdictEvent> judge(const Planned&, RequestOutcome o, const ReplyFacts*,
                                      Clock::time_point now) override {
        return outcome(0x03, o, o == RequestOutcome::kInvalid, now);
    }
    std::optional<VerdictEvent> judge_history(const Planned& p, RequestOutcome o, const HistoryFacts* f,
                                              Clock::time_point now) override {
        const bool useless = o == RequestOutcome::kInvalid || empty_reply(o, f);
        return outcome(static_cast<int>(p.history->request), o, useless, now);
    }

  private:
    std::optional<VerdictEvent> outcome(int code, RequestOutcome o, bool useless, Clock::time_point now) {
        if (o == RequestOutcome::kTimeout) {
            if (++timeouts_[code] >= 5) {
                timeouts_[code] = 0;
                return drop_peer("5 timeouts");
            }
            return penalise("timeout");
        }
        if (o != RequestOutcome::kGood && o != RequestOutcome::kInvalid) return std::nullopt;
        timeouts_[code] = 0;
        if (!useless) return std::nullopt;
        while (!useless_.empty() && now - useless_.front() > std::chrono::minutes(1)) useless_.pop_front();
        useless_.push_back(now);
        if (useless_.size() >= 5) {
            useless_.clear();
            return drop_peer("5 useless replies in a minute");
        }
        return penalise("useless reply");
    }
    std::map<int, int> timeouts_;
    std::deque<Clock::time_point> useless_;
};

// reth (peers/reputation.rs, bodies/request.rs): an empty reply, one with more bodies than asked,
// or a body that fails validation is a bad message (-16 x 1024), a timeout -4 x 1024; at
// -50 x 1024 the peer is banned. Headers as the reth profile, on the same reputation.
class RethHistoryJudge final : public Judge {
  public:
    std::optional<VerdictEvent> judge(const Planned&, RequestOutcome o, const ReplyFacts* f,
                                      Clock::time_point) override {
        if (o == RequestOutcome::kTimeout) return change(-4 * 1024, "timeout");
        if (o == RequestOutcome::kInvalid) return change(-16 * 1024, "bad message");
        if (o == RequestOutcome::kGood && f->count == 0) return change(-16 * 1024, "empty response");
        return std::nullopt;
    }
    std::optional<VerdictEvent> judge_history(const Planned&, RequestOutcome o, const HistoryFacts* f,
                                              Clock::time_point) override {
        if (o == RequestOutcome::kTimeout) return change(-4 * 1024, "timeout");
        if (o == RequestOutcome::kInvalid) return change(-16 * 1024, "bad message");
        if (empty_reply(o, f)) return change(-16 * 1024, "empty response");
        return std::nullopt;
    }

  private:
    std::optional<VerdictEvent> change(int64_t by, const std::string& why) {
        reputation_ += by;
        if (reputation_ <= -50 * 1024) {
            reputation_ = 0;
            return drop_peer("banned (" + why + ")");
        }
        return penalise(why);
    }
    int64_t reputation_{0};
};

}  // namespace

void NethermindSizer::update(bool failed, uint64_t asked, uint64_t got, uint64_t bytes,
                             std::chrono::steady_clock::duration rtt) {
    enum class Direction { kDecrease, kIncrease, kStay };
    Direction d = Direction::kStay;
    if (failed || bytes > 3'000'000 || rtt > 3s || got < asked) {
        d = Direction::kDecrease;
    } else if (asked >= size && rtt < 2s) {
        d = Direction::kIncrease;
    }
    if (d == Direction::kIncrease && size < max) {
        size = std::min<uint64_t>(static_cast<uint64_t>(static_cast<double>(size) * 1.5), max);
    } else if (d == Direction::kDecrease && size > min) {
        size = std::max<uint64_t>(static_cast<uint64_t>(static_cast<double>(size) / 1.5), min);
    }
}

std::unique_ptr<Walk> make_history_walk(const ProfileSpec& spec) {
    const Shape* shape = shape_of(spec.name);
    return std::make_unique<HistoryWalk>(shape != nullptr ? *shape : *shape_of("geth-history"));
}

std::unique_ptr<Judge> make_history_judge(const ProfileSpec& spec) {
    const std::string_view n = spec.name;
    if (n == "nethermind-history") return std::make_unique<NethermindHistoryJudge>();
    if (n == "besu-history") return std::make_unique<BesuHistoryJudge>();
    if (n == "reth-history") return std::make_unique<RethHistoryJudge>();
    return std::make_unique<GethHistoryJudge>();
}

}  // namespace headerd::load
