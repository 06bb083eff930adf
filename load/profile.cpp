#include "load/profile.hpp"

#include "load/history_profile.hpp"

#include <algorithm>
#include <array>

namespace headerd::load {

namespace {

using namespace std::chrono_literals;
using eth::GetBlockHeadersRequest;
using eth::HashOrNumber;

// docs/load.md, "Profiles", has the source of every constant.
constexpr std::array kProfiles{
    ProfileSpec{"geth-skeleton",
                "geth >= 1.14.2 beacon skeleton sync: by number, reverse, 512, one in flight",
                1,
                6s,
                TimeoutRule::kGethMsgrate,
                69,
                72,
                1,
                {},
                28},
    ProfileSpec{"nethermind",
                "Nethermind fast headers: batches of 192 down from the pivot, each ascending",
                1,
                10s,
                TimeoutRule::kFixed,
                68,
                69,
                1,
                {},
                28},
    ProfileSpec{"besu",
                "Besu backward headers: by number, reverse, 192, five pipelined",
                5,
                5s,
                TimeoutRule::kFixed,
                68,
                69,
                1,
                {},
                12},
    ProfileSpec{"erigon",
                "Erigon PoS download: by hash, reverse, 192, parent-hash chasing, sent to 5 peers",
                1,
                30s,
                TimeoutRule::kFixed,
                68,
                69,
                5,
                {},
                8},
    ProfileSpec{"reth",
                "reth reverse headers: tip by hash, then by number, reverse, 1000",
                1,
                20s,
                TimeoutRule::kRethAdaptive,
                68,
                69,
                1,
                {},
                6},
    ProfileSpec{"ethereumjs",
                "ethereumjs beacon sync: a 1-header probe, then by number, reverse, 100",
                1,
                8s,
                TimeoutRule::kFixed,
                68,
                68,
                1,
                {},
                3},
    ProfileSpec{"probes", "synced nodes: head and parent probes, DAO check, reth gap fills, 1 s apart", 1, 10s,
                TimeoutRule::kFixed, 68, 69, 1, 1s, 12},
    ProfileSpec{"legacy",
                "pre-1.14 geth and forks, Besu full sync: skip > 0 skeletons, ancestor search",
                1,
                6s,
                TimeoutRule::kGethMsgrate,
                68,
                68,
                1,
                {},
                2},
    ProfileSpec{"edge",
                "hostile or odd requests: past the head, amount 0 and 2000, unknown hash, skip 2^64-1",
                1,
                10s,
                TimeoutRule::kFixed,
                68,
                69,
                1,
                {},
                1},
    // History: bodies and receipts after the headers (history_profile.cpp); not in `mix`.
    ProfileSpec{"geth-history",
                "geth snap sync: 512-header skeleton windows, then their bodies (<= 128) and receipts (<= 256)",
                2,
                6s,
                TimeoutRule::kGethMsgrate,
                69,
                72,
                1,
                {},
                0,
                50},
    ProfileSpec{"nethermind-history",
                "Nethermind fast blocks: bodies and receipts of every block, from the top down, sized 4..128",
                2,
                10s,
                TimeoutRule::kFixed,
                68,
                69,
                1,
                {},
                0,
                25},
    ProfileSpec{"besu-history",
                "Besu snap sync: batches of 128 blocks, bodies then receipts, five pipelined",
                5,
                5s,
                TimeoutRule::kFixed,
                68,
                69,
                1,
                {},
                0,
                10},
    ProfileSpec{"reth-history",
                "reth pipeline: 1000-header windows, then bodies of non-empty blocks, 200 a request",
                1,
                20s,
                TimeoutRule::kRethAdaptive,
                68,
                69,
                1,
                {},
                0,
                15},
};

Planned by_number(uint64_t origin, uint64_t amount, uint64_t skip, bool reverse, std::string_view step) {
    Planned p;
    p.request.origin = HashOrNumber::of(origin);
    p.request.amount = amount;
    p.request.skip = skip;
    p.request.reverse = reverse;
    p.step = step;
    return p;
}

Planned by_hash(const Hash32& hash, std::optional<uint64_t> number, uint64_t amount, uint64_t skip, bool reverse,
                std::string_view step) {
    Planned p;
    p.request.origin = HashOrNumber::of(hash);
    p.request.amount = amount;
    p.request.skip = skip;
    p.request.reverse = reverse;
    p.origin_number = number;
    p.origin_on_chain = number.has_value();
    p.step = step;
    return p;
}

// Walks that re-ask what failed: a timed-out or invalid request, or the part of a short reply that
// is missing, is asked again before the walk moves on (as every real client does).
class RetryingWalk : public Walk {
  public:
    std::optional<Planned> next(const ChainView& chain, std::mt19937_64& rng) final {
        if (!retry_.empty()) {
            Planned p = retry_.front();
            retry_.pop_front();
            return p;
        }
        return plan(chain, rng);
    }
    void done(const Planned& p, RequestOutcome outcome, const ReplyFacts* facts) final {
        if (outcome == RequestOutcome::kNotSent) return;
        if (outcome != RequestOutcome::kGood) {
            if (retry_.size() < 16) retry_.push_back(p);
            return;
        }
        learn(p, *facts);
    }

  protected:
    virtual Planned plan(const ChainView& chain, std::mt19937_64& rng) = 0;
    virtual void learn(const Planned& /*p*/, const ReplyFacts& /*facts*/) {}
    // A by-number request answered with `got` of its headers: ask for the rest.
    void ask_rest(const Planned& p, const ReplyFacts& facts) {
        const auto& r = p.request;
        if (r.origin.is_hash || r.skip != 0 || facts.count == 0 || facts.count >= facts.expected) return;
        const uint64_t got = facts.count;
        const uint64_t origin = r.reverse ? r.origin.number - got : r.origin.number + got;
        retry_.push_back(by_number(origin, facts.expected - got, 0, r.reverse, p.step));
    }
    std::deque<Planned> retry_;
};

// geth skeleton sync (eth/downloader/skeleton.go): origins head-1, head-513, ... by number,
// reverse, 512 headers; the last batch asks for exactly the headers above genesis.
class GethSkeleton final : public RetryingWalk {
    Planned plan(const ChainView& chain, std::mt19937_64& /*rng*/) override {
        if (!cursor_ || *cursor_ == 0 || *cursor_ > chain.head) cursor_ = chain.head == 0 ? 0 : chain.head - 1;
        const uint64_t origin = *cursor_;
        const uint64_t amount = origin >= 512 ? 512 : std::max<uint64_t>(origin, 1);
        *cursor_ = origin >= 512 ? origin - 512 : 0;
        return by_number(origin, amount, 0, true, "skeleton");
    }
    std::optional<uint64_t> cursor_;
};

// Nethermind FastHeaders (HeadersSyncFeed.BuildNewBatch): batches of 192 walking down from the
// pivot, each requested ascending; a partial reply's rest is requested again.
class Nethermind final : public RetryingWalk {
    Planned plan(const ChainView& chain, std::mt19937_64& /*rng*/) override {
        if (!lowest_ || *lowest_ == 0 || *lowest_ > chain.head + 1) lowest_ = chain.head + 1;
        const uint64_t start = *lowest_ >= 192 ? *lowest_ - 192 : 0;
        const uint64_t amount = *lowest_ - start;
        lowest_ = start;
        return by_number(start, amount, 0, false, "fast headers");
    }
    void learn(const Planned& p, const ReplyFacts& facts) override { ask_rest(p, facts); }
    std::optional<uint64_t> lowest_;
};

// Besu DownloadBackwardHeadersStep: by number, reverse, min(192, left to the anchor); the runner
// keeps five in flight (EthPeer.MAX_OUTSTANDING_REQUESTS); a partial reply continues at start - got.
class Besu final : public RetryingWalk {
    Planned plan(const ChainView& chain, std::mt19937_64& /*rng*/) override {
        if (!cursor_ || *cursor_ > chain.head) cursor_ = chain.head;
        const uint64_t origin = *cursor_;
        const uint64_t amount = std::min<uint64_t>(192, origin + 1);
        cursor_ = origin + 1 > amount ? std::optional<uint64_t>(origin - amount) : std::nullopt;
        return by_number(origin, amount, 0, true, "backward headers");
    }
    void learn(const Planned& p, const ReplyFacts& facts) override { ask_rest(p, facts); }
    std::optional<uint64_t> cursor_;
};

// Erigon PoS downloader (header_algos.go): one logical request at a time, by hash, reverse, 192,
// the next origin the parent hash of the last header received; the same request goes to up to 5
// peers (the clients of a fan-out group share one walk). A reply to an old step is ignored.
class Erigon final : public Walk {
  public:
    std::optional<Planned> next(const ChainView& chain, std::mt19937_64& /*rng*/) override {
        if (!anchor_ || anchor_number_ == 0) {
            anchor_ = chain.head_hash;
            anchor_number_ = chain.head;
            ++generation_;
        }
        Planned p = by_hash(*anchor_, anchor_number_, 192, 0, true, "PoS anchor");
        p.generation = generation_;
        return p;
    }
    void done(const Planned& p, RequestOutcome outcome, const ReplyFacts* facts) override {
        if (outcome != RequestOutcome::kGood || p.generation != generation_ || facts->count == 0) return;
        anchor_ = facts->last_parent_hash;
        anchor_number_ = facts->last_number == 0 ? 0 : facts->last_number - 1;
        if (facts->last_number == 0) anchor_.reset();
        ++generation_;
    }

  private:
    std::optional<Hash32> anchor_;
    uint64_t anchor_number_{0};
    uint64_t generation_{0};
};

// reth ReverseHeadersDownloader: the sync target by hash (1 header), then by number, reverse,
// min(left, 1000) from tip - 1; a short reply's suffix is requested (v2.5.0).
class Reth final : public RetryingWalk {
    Planned plan(const ChainView& chain, std::mt19937_64& /*rng*/) override {
        if (!cursor_ || *cursor_ == 0 || *cursor_ > chain.head) {
            cursor_ = chain.head == 0 ? 0 : chain.head - 1;
            return by_hash(chain.head_hash, chain.head, 1, 0, true, "sync target");
        }
        const uint64_t origin = *cursor_;
        const uint64_t amount = std::min<uint64_t>(1000, origin);
        *cursor_ = origin - amount;
        return by_number(origin, amount, 0, true, "reverse headers");
    }
    void learn(const Planned& p, const ReplyFacts& facts) override { ask_rest(p, facts); }
    std::optional<uint64_t> cursor_;
};

// ethereumjs: before every job peer.latest() asks for the best header (by hash, 1), then the job
// asks by number, reverse, 100 (MAXPERREQUEST_DEFAULT).
class EthereumJs final : public RetryingWalk {
    Planned plan(const ChainView& chain, std::mt19937_64& /*rng*/) override {
        probe_next_ = !probe_next_;
        if (probe_next_) return by_hash(chain.head_hash, chain.head, 1, 0, false, "latest");
        if (!cursor_ || *cursor_ == 0 || *cursor_ > chain.head) cursor_ = chain.head;
        const uint64_t origin = *cursor_;
        const uint64_t amount = std::min<uint64_t>(100, origin);
        *cursor_ = origin - std::min(origin, amount);
        return by_number(origin, std::max<uint64_t>(amount, 1), 0, true, "job");
    }
    void learn(const Planned& p, const ReplyFacts& facts) override { ask_rest(p, facts); }
    std::optional<uint64_t> cursor_;
    bool probe_next_{false};
};

// Synced nodes: Erigon's eth/68 connect probe and Besu's ChainHeadTracker (head by hash, 1),
// Nethermind's refresh (head parent by hash, 2, ascending), Besu's DAO check (block 1,920,000, 1;
// only on chains that long), reth's gap fill (by hash, reverse, 32).
class Probes final : public Walk {
  public:
    std::optional<Planned> next(const ChainView& chain, std::mt19937_64& /*rng*/) override {
        step_ = (step_ + 1) % 4;
        switch (step_) {
            case 0:
                return by_hash(chain.head_hash, chain.head, 1, 0, false, "head");
            case 1:
                if (parent_ && parent_number_ + 1 == chain.head) {
                    return by_hash(*parent_, parent_number_, 2, 0, false, "head parent");
                }
                return by_hash(chain.head_hash, chain.head, 1, 0, false, "head");
            case 2:
                return by_number(chain.head >= 1'920'010 ? 1'920'000 : chain.head / 2, 1, 0, false, "DAO check");
            default:
                return by_hash(chain.head_hash, chain.head, 32, 0, true, "gap fill");
        }
    }
    void done(const Planned& p, RequestOutcome outcome, const ReplyFacts* facts) override {
        if (outcome == RequestOutcome::kGood && p.step == "head" && facts->count == 1 && facts->first_number > 0) {
            parent_ = facts->last_parent_hash;
            parent_number_ = facts->first_number - 1;
        }
    }

  private:
    int step_{-1};
    std::optional<Hash32> parent_;
    uint64_t parent_number_{0};
};

// Skip > 0 users: a geth-fork skeleton (by number, forward, 128, skip 191) and its fill (192),
// an ancestor span search (forward, 12, skip 15), geth's legacy fetchHead (by hash, reverse, 2,
// skip 63) and Besu's full-sync range (by hash, forward, 193, skip 199).
class Legacy final : public Walk {
  public:
    std::optional<Planned> next(const ChainView& chain, std::mt19937_64& rng) override {
        step_ = (step_ + 1) % 5;
        const uint64_t head = chain.head;
        switch (step_) {
            case 0:
                from_ = std::uniform_int_distribution<uint64_t>(0, head)(rng);
                return by_number(from_, 128, 191, false, "skeleton");
            case 1:
                return by_number(from_, 192, 0, false, "fill");
            case 2:
                return by_number(head > 12 * 16 ? head - 12 * 16 : 0, 12, 15, false, "ancestor span");
            case 3:
                return by_hash(chain.head_hash, head, 2, 63, true, "fetch head");
            default:
                if (known_) return by_hash(known_->first, known_->second, 193, 199, false, "full sync range");
                return by_number(from_, 193, 199, false, "full sync range");
        }
    }
    void done(const Planned& p, RequestOutcome outcome, const ReplyFacts* facts) override {
        if (outcome == RequestOutcome::kGood && p.step == "fill" && facts->count > 1) {
            known_ = {facts->last_parent_hash, facts->last_number - 1};
        }
    }

  private:
    int step_{-1};
    uint64_t from_{0};
    std::optional<std::pair<Hash32, uint64_t>> known_;
};

// Requests real clients really send now and then, and a server must answer without harm
// (docs/load.md): origin past the head, amount 0, amount 2000, an unknown hash, skip 2^64-1.
class Edge final : public Walk {
  public:
    std::optional<Planned> next(const ChainView& chain, std::mt19937_64& rng) override {
        step_ = (step_ + 1) % 6;
        switch (step_) {
            case 0:
                return by_number(chain.head + 1000, 192, 0, false, "past head");
            case 1:
                return by_number(0, 0, 0, false, "amount 0");
            case 2:
                return by_number(0, 2000, 0, false, "amount 2000");
            case 3: {
                Hash32 h;
                for (auto& b : h) b = static_cast<uint8_t>(rng());
                return by_hash(h, std::nullopt, 192, 0, true, "unknown hash");
            }
            case 4:
                return by_number(chain.head / 2, 10, UINT64_MAX, false, "skip 2^64-1");
            default:
                return by_number(chain.head / 2, 10, UINT64_MAX, true, "skip 2^64-1 reverse");
        }
    }
    void done(const Planned&, RequestOutcome, const ReplyFacts*) override {}

  private:
    int step_{-1};
};

// ---- judges ------------------------------------------------------------------------------------

std::optional<VerdictEvent> drop(std::string reason) { return VerdictEvent{true, std::move(reason)}; }
std::optional<VerdictEvent> penalty(std::string reason) { return VerdictEvent{false, std::move(reason)}; }

// geth (skeleton.go, handlers.go): any timeout, bad, empty or short reply drops the peer.
class GethJudge final : public Judge {
    std::optional<VerdictEvent> judge(const Planned& p, RequestOutcome o, const ReplyFacts* f,
                                      Clock::time_point) override {
        if (o == RequestOutcome::kTimeout) return drop("timeout");
        if (o == RequestOutcome::kInvalid) return drop("invalid reply");
        if (o != RequestOutcome::kGood) return std::nullopt;
        if (f->count == 0) return drop("empty reply");
        if (p.step == "skeleton" && f->count != p.request.amount) return drop("short skeleton batch");
        return std::nullopt;
    }
};

// Nethermind (HeadersSyncFeed.InsertHeaders): a reply that is too long or does not match the
// request is a breach (disconnect); an empty reply or a timeout marks the peer weak (it sleeps).
class NethermindJudge final : public Judge {
    std::optional<VerdictEvent> judge(const Planned&, RequestOutcome o, const ReplyFacts* f,
                                      Clock::time_point) override {
        if (o == RequestOutcome::kInvalid) return drop("breach of protocol");
        if (o == RequestOutcome::kTimeout) return penalty("weak peer: timeout");
        if (o == RequestOutcome::kGood && f->count == 0) return penalty("weak peer: no sync progress");
        return std::nullopt;
    }
};

// Besu (PeerReputation, RequestManager): 5 timeouts in a row, or 5 useless replies within a
// minute, disconnect; a broken chain with skip 0 disconnects at once; empty costs nothing.
class BesuJudge final : public Judge {
    std::optional<VerdictEvent> judge(const Planned&, RequestOutcome o, const ReplyFacts*,
                                      Clock::time_point now) override {
        if (o == RequestOutcome::kGood) {
            timeouts_ = 0;
            return std::nullopt;
        }
        if (o == RequestOutcome::kTimeout) {
            if (++timeouts_ >= 5) {
                timeouts_ = 0;
                return drop("5 timeouts");
            }
            return penalty("timeout");
        }
        if (o == RequestOutcome::kInvalid) {
            while (!useless_.empty() && now - useless_.front() > std::chrono::minutes(1)) useless_.pop_front();
            useless_.push_back(now);
            if (useless_.size() >= 5) {
                useless_.clear();
                return drop("5 useless replies in a minute");
            }
            return penalty("useless reply");
        }
        return std::nullopt;
    }
    int timeouts_{0};
    std::deque<Clock::time_point> useless_;
};

// Erigon: replies that do not match the anchor are ignored; 3 timeouts of one anchor kick the peer.
class ErigonJudge final : public Judge {
    std::optional<VerdictEvent> judge(const Planned& p, RequestOutcome o, const ReplyFacts*,
                                      Clock::time_point) override {
        if (p.generation != generation_) {
            generation_ = p.generation;
            timeouts_ = 0;
        }
        if (o == RequestOutcome::kTimeout && ++timeouts_ >= 3) {
            timeouts_ = 0;
            return drop("anchor abandoned after 3 timeouts");
        }
        return std::nullopt;
    }
    uint64_t generation_{0};
    int timeouts_{0};
};

// reth (peers/reputation.rs): a timeout costs 4 x 1024, a bad message (empty, too long, wrong
// start, invalid) 16 x 1024; at -50 x 1024 the peer is banned.
class RethJudge final : public Judge {
    std::optional<VerdictEvent> judge(const Planned&, RequestOutcome o, const ReplyFacts* f,
                                      Clock::time_point) override {
        int64_t change = 0;
        std::string why;
        if (o == RequestOutcome::kTimeout) {
            change = -4 * 1024;
            why = "timeout";
        } else if (o == RequestOutcome::kInvalid || (o == RequestOutcome::kGood && f->count == 0)) {
            change = -16 * 1024;
            why = o == RequestOutcome::kInvalid ? "bad message" : "empty response";
        }
        if (change == 0) return std::nullopt;
        reputation_ += change;
        if (reputation_ <= -50 * 1024) {
            reputation_ = 0;
            return drop("banned (" + why + ")");
        }
        return penalty(why);
    }
    int64_t reputation_{0};
};

// ethereumjs fetcher: a timeout or an invalid reply bans the peer for 60 s; empty is retried.
class EthereumJsJudge final : public Judge {
    std::optional<VerdictEvent> judge(const Planned&, RequestOutcome o, const ReplyFacts*, Clock::time_point) override {
        if (o == RequestOutcome::kTimeout) return drop("timeout ban (60 s)");
        if (o == RequestOutcome::kInvalid) return drop("invalid reply ban (60 s)");
        return std::nullopt;
    }
};

// Probes, legacy and edge stand for several clients: an invalid reply drops (every client does);
// a timeout is a penalty.
class GenericJudge final : public Judge {
    std::optional<VerdictEvent> judge(const Planned&, RequestOutcome o, const ReplyFacts*, Clock::time_point) override {
        if (o == RequestOutcome::kInvalid) return drop("invalid reply");
        if (o == RequestOutcome::kTimeout) return penalty("timeout");
        return std::nullopt;
    }
};

}  // namespace

std::span<const ProfileSpec> profiles() { return kProfiles; }

const ProfileSpec* find_profile(std::string_view name) {
    for (const ProfileSpec& p : kProfiles) {
        if (p.name == name) return &p;
    }
    return nullptr;
}

std::optional<VerdictEvent> Judge::judge_history(const Planned&, RequestOutcome o, const HistoryFacts*,
                                                 Clock::time_point) {
    if (o == RequestOutcome::kInvalid) return drop("invalid reply");
    if (o == RequestOutcome::kTimeout) return penalty("timeout");
    return std::nullopt;
}

std::unique_ptr<Walk> make_walk(const ProfileSpec& spec) {
    if (spec.history()) return make_history_walk(spec);
    const std::string_view n = spec.name;
    if (n == "geth-skeleton") return std::make_unique<GethSkeleton>();
    if (n == "nethermind") return std::make_unique<Nethermind>();
    if (n == "besu") return std::make_unique<Besu>();
    if (n == "erigon") return std::make_unique<Erigon>();
    if (n == "reth") return std::make_unique<Reth>();
    if (n == "ethereumjs") return std::make_unique<EthereumJs>();
    if (n == "probes") return std::make_unique<Probes>();
    if (n == "legacy") return std::make_unique<Legacy>();
    return std::make_unique<Edge>();
}

std::unique_ptr<Judge> make_judge(const ProfileSpec& spec) {
    if (spec.history()) return make_history_judge(spec);
    const std::string_view n = spec.name;
    if (n == "geth-skeleton") return std::make_unique<GethJudge>();
    if (n == "nethermind") return std::make_unique<NethermindJudge>();
    if (n == "besu") return std::make_unique<BesuJudge>();
    if (n == "erigon") return std::make_unique<ErigonJudge>();
    if (n == "reth") return std::make_unique<RethJudge>();
    if (n == "ethereumjs") return std::make_unique<EthereumJsJudge>();
    return std::make_unique<GenericJudge>();
}

Clock::duration reth_next_timeout(Clock::duration current, Clock::duration rtt) noexcept {
    const auto next = std::chrono::duration_cast<Clock::duration>(0.9 * current + 0.1 * 3 * rtt);
    return std::clamp<Clock::duration>(next, std::chrono::seconds(2), std::chrono::seconds(20));
}

}  // namespace headerd::load
