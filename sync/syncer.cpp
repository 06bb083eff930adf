#include "sync/syncer.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <map>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/awaitable.hpp"
#include "core/block_header.hpp"
#include "core/hex.hpp"
#include "p2p/eth/messages.hpp"

namespace headerd::sync {
namespace {

eth::GetBlockHeadersRequest by_number(uint64_t origin, uint64_t amount, bool reverse) {
    eth::GetBlockHeadersRequest r;
    r.origin = eth::HashOrNumber::of(origin);
    r.amount = amount;
    r.reverse = reverse;
    return r;
}

// Each syncer's requests form a group of their own on the sessions it borrows (never 0).
std::atomic<uint64_t> next_group{1};

}  // namespace

struct Syncer::Peer {
    Peer(size_t i, p2p::Enode e) : index(i), enode(std::move(e)) {}
    size_t index{0};
    p2p::Enode enode;
    std::shared_ptr<p2p::ClientSession> session;
    bool lent{false};  // the session came open from SyncConfig::sessions: the caller closes it
    PeerSummary summary;
    unsigned timeouts_in_row{0};
    unsigned empty_in_row{0};
    bool alive() const noexcept { return session && !summary.dropped && !session->closed(); }
};

Syncer::Syncer(asio::io_context& io, db::ChainDb& db, const p2p::LocalNode& local, SyncConfig config)
    : io_(io),
      db_(db),
      local_(local),
      config_(std::move(config)),
      wake_(io, p2p::Clock::time_point::max()),
      group_(next_group.fetch_add(1, std::memory_order_relaxed)) {
    for (size_t i = 0; i < config_.peers.size(); ++i) {
        auto p = std::make_shared<Peer>(i, config_.peers[i]);
        p->summary.address = fmt::format("{}:{}", p->enode.host, p->enode.port);
        p->summary.fate = "not connected";
        peers_.push_back(std::move(p));
    }
}

Syncer::~Syncer() = default;

void Syncer::notify() { wake_.cancel(); }

asio::awaitable<void> Syncer::wait() {
    wake_.expires_at(p2p::Clock::time_point::max());
    co_await wake_.async_wait(kTuple);
}

void Syncer::stop() {
    stopping_ = true;
    notify();
}

size_t Syncer::alive() const {
    return static_cast<size_t>(std::count_if(peers_.begin(), peers_.end(), [](const auto& p) { return p->alive(); }));
}

std::vector<PeerSummary> Syncer::peer_summaries() const {
    std::vector<PeerSummary> out;
    for (const auto& p : peers_) {
        PeerSummary s = p->summary;
        if (p->session && !s.dropped && s.fate == "connected" && p->session->closed() && p->session->error()) {
            s.fate = fmt::format("disconnected: {}", p->session->error()->what());
        }
        out.push_back(std::move(s));
    }
    return out;
}

std::string Syncer::fates() const {
    std::string out;
    for (const PeerSummary& s : peer_summaries()) {
        out += fmt::format("{}{} ({})", out.empty() ? "" : "; ", s.address, s.fate);
    }
    return out;
}

void Syncer::count_reply(Peer& peer, p2p::Clock::duration rtt) {
    peer.summary.rtt.record(std::chrono::duration_cast<std::chrono::nanoseconds>(rtt));
}

void Syncer::drop(Peer& peer, const std::string& why, const char* kind) {
    if (peer.summary.dropped) return;
    peer.summary.dropped = true;
    if (config_.metrics != nullptr) {
        config_.metrics->dropped(kind).Increment();
        config_.metrics->peers().Set(static_cast<double>(alive()));
    }
    peer.summary.fate = "dropped: " + why;
    spdlog::warn("Dropping peer                            peer={} client=\"{}\" reason=\"{}\"", peer.summary.address,
                 peer.summary.client, why);
    if (fetcher_) fetcher_->drop_owner(peer.index);
    if (peer.lent && std::string_view(kind) != "fault") {
        // Slow or without the blocks, not lying: the owner keeps its session, minus our requests.
        peer.session->abandon(group_);
    } else if (peer.session && !peer.session->closed()) {
        // The coroutine holds the session: the peer's slot may drop it before the close ends.
        asio::co_spawn(
            io_,
            [session = peer.session]() -> asio::awaitable<void> {
                co_await session->close(p2p::DisconnectReason::kUselessPeer);
            },
            asio::detached);
    }
    notify();
}

asio::awaitable<void> Syncer::connect_all() {
    progress_.phase = "connecting";
    size_t pending = peers_.size();
    p2p::ClientOptions options;
    options.limits.handshake = config_.handshake_timeout;
    // The fetcher reads the number and parent of every header and hashes it; a header that does
    // not hash into the proven chain is refused whatever its fields. Linking decodes each in full.
    options.check_headers = false;
    options.max_in_flight = std::max<size_t>(config_.requests_per_peer, 1) + 1;
    for (auto& peer : peers_) {
        if (peer->index < config_.sessions.size()) {
            if (auto& open = config_.sessions[peer->index]; open && !open->closed()) {
                peer->session = open;
                peer->lent = true;
                peer->summary.connected = true;
                peer->summary.client = open->link().client_id;
                peer->summary.fate = "connected";
                spdlog::debug("Using the open session                   peer={} client=\"{}\" eth={}",
                              peer->summary.address, peer->summary.client, open->link().version);
                --pending;
                continue;
            }
        }
        asio::co_spawn(
            io_,
            [this, peer, options]() -> asio::awaitable<void> {
                try {
                    peer->session = co_await p2p::ClientSession::connect(peer->enode, local_, options);
                    peer->summary.connected = true;
                    peer->summary.client = peer->session->link().client_id;
                    peer->summary.fate = "connected";
                    spdlog::info("Connected                                peer={} client=\"{}\" eth={}",
                                 peer->summary.address, peer->summary.client, peer->session->link().version);
                } catch (const std::exception& e) {
                    peer->summary.fate = fmt::format("unreachable: {}", e.what());
                    spdlog::warn("Cannot connect                           peer={} error=\"{}\"", peer->summary.address,
                                 e.what());
                }
            },
            [this, &pending](std::exception_ptr) {
                --pending;
                notify();
            });
    }
    while (pending > 0) co_await wait();
}

asio::awaitable<Outcome<Syncer::Target>> Syncer::resolve_target() {
    progress_.phase = "head";
    const auto timeout = config_.request_timeout.value_or(std::chrono::seconds(10));
    if (config_.head_hash) {
        const Hash32 want = *config_.head_hash;
        for (auto& peer : peers_) {
            if (!peer->alive()) continue;
            eth::GetBlockHeadersRequest req;
            req.origin = eth::HashOrNumber::of(want);
            req.amount = 1;
            ++peer->summary.requests;
            auto r = co_await peer->session->request(req, timeout, group_);
            if (!r) {
                if (r.error().kind == p2p::RequestFailure::Kind::kTimeout) ++peer->summary.timeouts;
                peer->summary.fate = fmt::format("no head header: {}", r.error().message);
                spdlog::warn("No head header from peer                 peer={} error=\"{}\"", peer->summary.address,
                             r.error().message);
                continue;
            }
            count_reply(*peer, r->rtt);
            if (r->headers.empty()) {
                ++peer->summary.empty;
                peer->summary.fate = "does not have the head header";
                spdlog::info("Peer does not know the head              peer={} head={}", peer->summary.address,
                             to_hex0x(want));
                continue;
            }
            const ByteView rlp = r->headers.front();
            if (r->headers.size() != 1 || header_hash(rlp) != want) {
                drop(*peer, fmt::format("answered the request for head {} with another header", to_hex0x(want)));
                continue;
            }
            auto peek = peek_header(rlp);
            if (!peek) {
                drop(*peer, "sent a malformed head header");
                continue;
            }
            peer->summary.headers += 1;
            co_return Target{peek->number, want, Bytes(rlp.begin(), rlp.end())};
        }
        co_return make_error(fmt::format("no peer gave the header of head {}: {}", to_hex0x(want), fates()));
    }

    // --head-number: the hash a majority of the answering peers (and at least two) give.
    const uint64_t number = *config_.head_number;
    std::map<Hash32, std::vector<size_t>> votes;
    std::map<Hash32, Bytes> header_of;
    size_t answered = 0;
    for (auto& peer : peers_) {
        if (!peer->alive()) continue;
        ++peer->summary.requests;
        auto r = co_await peer->session->request(by_number(number, 1, false), timeout, group_);
        if (!r || r->headers.size() != 1) continue;
        count_reply(*peer, r->rtt);
        auto peek = peek_header(r->headers.front());
        if (!peek || peek->number != number) {
            drop(*peer, fmt::format("answered the request for block {} with another block", number));
            continue;
        }
        ++answered;
        const Hash32 h = header_hash(r->headers.front());
        votes[h].push_back(peer->index);
        header_of.emplace(h, Bytes(r->headers.front().begin(), r->headers.front().end()));
    }
    std::string tally;
    for (const auto& [h, who] : votes) {
        tally += fmt::format("{}{} from {} peer(s)", tally.empty() ? "" : ", ", to_hex0x(h), who.size());
        if (who.size() >= 2 && who.size() * 2 > answered) {
            spdlog::info("Head agreed by peers                     number={} hash={} peers={}/{}", number, to_hex0x(h),
                         who.size(), answered);
            co_return Target{number, h, header_of[h]};
        }
    }
    co_return make_error(
        fmt::format("no majority of at least two peers agrees on block {} ({}); give --head HASH "
                    "from a source you trust",
                    number, tally.empty() ? "no peer has it" : tally));
}

asio::awaitable<Outcome<SyncResult>> Syncer::run() {
    result_ = SyncResult{};
    co_await connect_all();
    if (alive() == 0) co_return make_error(fmt::format("no peer could be reached: {}", fates()));

    auto target = co_await resolve_target();
    if (!target) {
        co_await close_all();
        result_.peers = peer_summaries();
        co_return target.error();
    }
    progress_.target = target->number;
    if (config_.metrics != nullptr) {
        config_.metrics->target().Set(static_cast<double>(target->number));
        config_.metrics->peers().Set(static_cast<double>(alive()));
    }
    spdlog::info("Sync target                              number={} hash={}", target->number, to_hex0x(target->hash));

    // Already there?
    if (auto canonical = db_.canonical_hash(target->number); canonical && *canonical && **canonical == target->hash) {
        co_await close_all();
        result_.already = true;
        result_.head = *db_.head();
        result_.peers = peer_summaries();
        progress_.phase = "done";
        co_return result_;
    }

    auto skeleton = db_.skeleton();
    if (skeleton && skeleton->head_hash == target->hash) {
        result_.resumed = true;
        result_.resumed_tail = skeleton->tail;
        spdlog::info("Resuming                                 head={} stored_down_to={}", skeleton->head,
                     skeleton->tail);
    } else {
        if (skeleton) {
            spdlog::info("Replacing the stored skeleton            old_head={} old_tail={} new_head={}", skeleton->head,
                         skeleton->tail, target->number);
        }
        if (auto r = db_.skeleton_begin({target->rlp, target->hash, target->number}); !r) {
            co_await close_all();
            co_return r.error();
        }
        skeleton = db_.skeleton();
    }

    auto point = db_.skeleton_link_point();
    if (!point) {
        co_await close_all();
        co_return point.error();
    }
    if (!point->linked) {
        auto fetched = co_await fetch(*skeleton, db_.head());
        if (!fetched) {
            co_await close_all();
            result_.peers = peer_summaries();
            co_return fetched.error();
        }
    }
    co_await close_all();
    result_.peers = peer_summaries();

    point = db_.skeleton_link_point();
    if (!point) co_return point.error();
    result_.replaced = point->replaced;
    progress_.phase = "linking";
    db::LinkOptions link;
    link.batch = config_.link_batch;
    link.on_progress = [this](uint64_t done, uint64_t) { progress_.linked = done; };
    auto head = db_.skeleton_link(link);
    if (!head) co_return head.error();
    result_.head = *head;
    if (config_.freeze) {
        progress_.phase = "freezing";
        auto frozen = db_.freeze(config_.freeze_options);
        if (!frozen) co_return frozen.error();
        result_.frozen = *frozen;
    }
    progress_.phase = "done";
    co_return result_;
}

asio::awaitable<Outcome<void>> Syncer::fetch(const db::Skeleton& skeleton, std::optional<db::Head> local_head) {
    progress_.phase = "fetching";
    const ChainConfig& config = *local_.config;
    join_ = [this, &config, local_head](uint64_t number, const Hash32& hash, const Hash32& parent) {
        if (number == 0) return hash == config.genesis_hash ? Join::kLinked : Join::kWrongGenesis;
        if (!local_head || number - 1 > local_head->number) return Join::kNo;
        auto canonical = db_.canonical_hash(number - 1);
        return canonical && *canonical && **canonical == parent ? Join::kLinked : Join::kNo;
    };
    const uint64_t floor = local_head ? std::min(local_head->number + 1, skeleton.tail - 1) : 0;
    fetcher_.emplace(skeleton.tail - 1, skeleton.tail_parent, floor, config_.window);
    progress_.next = fetcher_->next();
    progress_.floor = fetcher_->floor();

    for (auto& peer : peers_) {
        if (!peer->alive()) continue;
        for (size_t i = 0; i < std::max<size_t>(1, config_.requests_per_peer); ++i) {
            ++loops_;
            asio::co_spawn(io_, peer_loop(peer), [this](std::exception_ptr e) {
                --loops_;
                if (e) {
                    try {
                        std::rethrow_exception(e);
                    } catch (const std::exception& ex) {
                        fatal_ = fmt::format("internal error in a peer loop: {}", ex.what());
                    }
                }
                notify();
            });
        }
    }
    while (!fetcher_->done() && !fatal_ && !stopping_ && alive() > 0) co_await wait();
    // Let every loop see the end (they wait on the same timer) before the fetcher goes.
    while (loops_ > 0) {
        notify();
        co_await close_all();
        if (loops_ > 0) co_await wait();
    }
    const bool linked = fetcher_->linked();
    const bool wrong_genesis = fetcher_->wrong_genesis();
    const uint64_t next = fetcher_->next();
    fetcher_.reset();
    if (fatal_) co_return make_error(*fatal_);
    if (wrong_genesis) {
        co_return make_error(
            fmt::format("the chain below the trusted head does not lead to the genesis {} of network "
                        "{}: the head is not on this network",
                        to_hex0x(config.genesis_hash), config.name));
    }
    if (linked) co_return Outcome<void>{};
    if (stopping_) {
        co_return make_error(
            fmt::format("interrupted; the headers verified so far are stored (down to block {}): run sync again to "
                        "resume",
                        next + 1));
    }
    co_return make_error(
        fmt::format("no peer left to download blocks {}..{} from: {}", progress_.floor, next, fates()));
}

Outcome<void> Syncer::verify() {
    Verified verified;
    while (true) {
        auto fault = fetcher_->advance(join_, verified);
        if (!verified.headers.empty()) {
            // Each write reaches the OS at once (a killed process loses nothing); one a second,
            // and the last, is fsynced too, so a power cut costs at most about a second of work.
            const auto now = p2p::Clock::now();
            const bool durable = verified.linked || now - last_durable_ >= std::chrono::seconds(1);
            if (auto r = db_.skeleton_extend(verified.headers, durable); !r) return r;
            if (durable) last_durable_ = now;
            result_.fetched += verified.headers.size();
            progress_.fetched = result_.fetched;
            if (config_.metrics != nullptr)
                config_.metrics->fetched().Increment(static_cast<double>(verified.headers.size()));
        }
        progress_.next = fetcher_->next();
        if (config_.metrics != nullptr) config_.metrics->next().Set(static_cast<double>(progress_.next));
        if (fault) {
            drop(*peers_[fault->owner], fault->reason);
            continue;  // what the liar held is handed back; advance again in case others fit now
        }
        if (fetcher_->exhausted()) {
            // Verified down to the local head without joining it: the new chain forks below it.
            const uint64_t lowest = db_.ancient_items();
            const uint64_t floor = fetcher_->floor();
            if (floor <= lowest) {
                return make_error(
                    fmt::format("the new chain does not join the stored one at or above block {}, the "
                                "lowest unfrozen block; headerd never rewrites the freezer",
                                lowest));
            }
            const uint64_t lower = floor > lowest + 1024 ? floor - 1024 : lowest;
            spdlog::info("The new chain forks below the local head; fetching further down  to={}", lower);
            fetcher_->lower_floor(lower);
            progress_.floor = lower;
            continue;
        }
        return {};
    }
}

asio::awaitable<void> Syncer::peer_loop(std::shared_ptr<Peer> peer) {
    while (fetcher_ && !fetcher_->done() && !fatal_ && !stopping_ && peer->alive()) {
        const uint64_t amount =
            std::max<uint64_t>(1, std::min(config_.max_request, peer->session->target_headers(config_.max_request)));
        auto task = fetcher_->assign(amount);
        if (!task) {
            co_await wait();
            continue;
        }
        ++peer->summary.requests;
        result_.highest_requested = std::max(result_.highest_requested, task->origin);
        spdlog::debug("Requesting headers                       peer={} origin={} amount={} reverse=true",
                      peer->summary.address, task->origin, task->amount);
        auto reply = co_await peer->session->request(by_number(task->origin, task->amount, true),
                                                     config_.request_timeout, group_);
        if (!fetcher_) co_return;  // the fetch ended meanwhile
        if (!reply) {
            fetcher_->release(*task);
            switch (reply.error().kind) {
                case p2p::RequestFailure::Kind::kTimeout:
                    ++peer->summary.timeouts;
                    if (++peer->timeouts_in_row >= config_.max_timeouts) {
                        drop(*peer, fmt::format("{} requests in a row timed out", peer->timeouts_in_row), "timeout");
                    }
                    break;
                case p2p::RequestFailure::Kind::kClosed:
                    if (!peer->summary.dropped && !stopping_) {
                        peer->summary.dropped = true;
                        peer->summary.fate = fmt::format("dropped: {}", reply.error().message);
                        spdlog::warn("Peer session ended                       peer={} reason=\"{}\"",
                                     peer->summary.address, reply.error().message);
                        fetcher_->drop_owner(peer->index);
                    }
                    break;
                case p2p::RequestFailure::Kind::kRejected:
                case p2p::RequestFailure::Kind::kAbandoned:  // by close_all: the fetch is over
                    break;
            }
            notify();
            continue;
        }
        peer->timeouts_in_row = 0;
        if (config_.metrics != nullptr) {
            config_.metrics->capacity(peer->summary.address)
                .Set(peer->session->capacity().items_per_second(
                    static_cast<uint64_t>(eth::MessageId::kGetBlockHeaders)));
        }
        count_reply(*peer, reply->rtt);
        const size_t got = reply->headers.size();
        if (got == 0) {
            ++peer->summary.empty;
            if (++peer->empty_in_row >= config_.max_empty) {
                drop(*peer, fmt::format("answered {} requests in a row with no headers", peer->empty_in_row), "empty");
            }
        } else {
            peer->empty_in_row = 0;
        }
        if (auto fault = fetcher_->deliver(*task, peer->index, std::move(*reply))) {
            drop(*peer, fault->reason);
        } else {
            peer->summary.headers += got;
            // The first fatal error is the one to report: after a failed write (a full disk) the
            // fetcher is ahead of the store, and a later reply's verify fails only because of it.
            if (!fatal_) {
                if (auto r = verify(); !r) fatal_ = r.error().message;
            }
        }
        notify();
    }
}

asio::awaitable<void> Syncer::close_all() {
    for (auto& peer : peers_) {
        if (peer->session && !peer->session->closed()) {
            if (!peer->summary.dropped && peer->summary.fate == "connected")
                peer->summary.fate = "served until the end";
            if (peer->lent) {
                peer->session->abandon(group_);  // the owner's session goes on; our requests end
            } else {
                co_await peer->session->close();
            }
        }
    }
}

}  // namespace headerd::sync
