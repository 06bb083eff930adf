#pragma once

// The synthetic clients' profiles: how each imitated client walks the chain with GetBlockHeaders
// (direction, origin kind, amount, skip, requests in flight, timeout) and how it judges replies
// (what makes it drop or penalise a server). Every constant is the imitated client's own and
// docs/load.md names the source file it comes from.
//
// A Walk plans the next request from what the client knows (the server's head, earlier replies)
// and learns from each result. A Judge keeps the client's view of the server (timeout counts,
// reputation) and says when that client would have dropped or penalised it. Both live on one
// worker thread with their client: not thread-safe.

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "load/history_verify.hpp"
#include "load/verify.hpp"
#include "p2p/connection.hpp"
#include "p2p/eth/messages.hpp"

namespace headerd::load {

using Clock = p2p::Clock;

enum class TimeoutRule {
    kFixed,        // the profile's timeout
    kGethMsgrate,  // geth msgrate: 3 x RTT estimate / confidence, 2-20 s RTT clamp, 1 min cap (the session's)
    kRethAdaptive  // reth: 20 s, then 0.9 x timeout + 0.1 x 3 x RTT, clamped to 2-20 s
};

struct ProfileSpec {
    std::string_view name;
    std::string_view imitates;  // one line, for --help and the report
    uint32_t depth{1};          // requests in flight per client
    Clock::duration timeout{std::chrono::seconds(10)};
    TimeoutRule timeout_rule{TimeoutRule::kFixed};
    uint64_t min_eth{68};  // eth versions the client offers
    uint64_t max_eth{69};
    uint32_t fanout{1};       // clients that send each request at once (Erigon: 5)
    Clock::duration think{};  // pause after each reply (synced nodes' probes)
    double mix_weight{0};     // % of clients in `mix`
    // History profiles (bodies and receipts after the headers): % of clients in `history`; 0 for
    // the header profiles.
    double history_weight{0};

    bool history() const noexcept { return history_weight > 0; }
};

// Every profile, in the order of docs/load.md.
std::span<const ProfileSpec> profiles();
const ProfileSpec* find_profile(std::string_view name);

// What the client knows of the server's chain when it plans.
struct ChainView {
    uint64_t head{0};
    Hash32 head_hash{};
    // eth/69+: the oldest block the server serves whole (Status, BlockRangeUpdate); nullopt on eth/68.
    std::optional<uint64_t> earliest;
    // The lowest block of the reference chain (--chain), 0 without one.
    uint64_t lowest{0};
    // The session's capacity estimates (geth msgrate): bodies and receipt lists to ask next so the
    // reply takes about the target round trip (up to 1024).
    uint64_t body_capacity{1024};
    uint64_t receipt_capacity{1024};
};

// One planned request and what the client knows of its origin.
struct Planned {
    eth::GetBlockHeadersRequest request;
    std::optional<uint64_t> origin_number;  // hash origins the client learned
    bool origin_on_chain{false};
    uint64_t generation{0};  // Walk-defined; lets a shared walk ignore replies to old steps
    std::string_view step;   // e.g. "skeleton", "probe head"
    // Set for GetBlockBodies and GetReceipts; `request` is then unused.
    std::shared_ptr<const HistoryAsk> history;
};

// kNotSent: the request never went out (in-flight cap) or the end of the run cut it.
enum class RequestOutcome { kGood, kInvalid, kTimeout, kClosed, kNotSent };

class Walk {
  public:
    virtual ~Walk() = default;
    // The next request, or nullopt when there is nothing to ask until a request in flight is done
    // (a history walk waiting for its headers). Think time is the runner's.
    virtual std::optional<Planned> next(const ChainView& chain, std::mt19937_64& rng) = 0;
    // What became of a planned header request; facts only for kGood.
    virtual void done(const Planned& p, RequestOutcome outcome, const ReplyFacts* facts) = 0;
    // The headers of a good reply to a planned header request, before done() (the history walks
    // keep them to ask for their bodies and receipts, and to check those against them).
    virtual void headers(const Planned& /*p*/, std::span<const ByteView> /*headers*/) {}
    // What became of a planned GetBlockBodies or GetReceipts request; facts only for kGood.
    virtual void done_history(const Planned& /*p*/, RequestOutcome /*outcome*/, const HistoryFacts* /*facts*/) {}
};

std::unique_ptr<Walk> make_walk(const ProfileSpec& spec);

// A client's verdict on one result.
struct VerdictEvent {
    bool drop{false};  // false: a penalty short of dropping
    std::string reason;
};

class Judge {
  public:
    virtual ~Judge() = default;
    // `failure` is the verification failure (kInvalid), `facts` the good reply's facts (kGood).
    virtual std::optional<VerdictEvent> judge(const Planned& p, RequestOutcome outcome, const ReplyFacts* facts,
                                              Clock::time_point now) = 0;
    // The same for a GetBlockBodies or GetReceipts request (history profiles); by default an
    // invalid reply drops and a timeout is a penalty.
    virtual std::optional<VerdictEvent> judge_history(const Planned& p, RequestOutcome outcome,
                                                      const HistoryFacts* facts, Clock::time_point now);
};

std::unique_ptr<Judge> make_judge(const ProfileSpec& spec);

// The reth session timeout after one more round trip (TimeoutRule::kRethAdaptive).
Clock::duration reth_next_timeout(Clock::duration current, Clock::duration rtt) noexcept;

}  // namespace headerd::load
