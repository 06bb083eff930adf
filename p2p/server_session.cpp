#include "p2p/server_session.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <array>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <optional>

#include "p2p/eth/history.hpp"
#include "p2p/eth/messages.hpp"

namespace headerd::p2p {
namespace {

using eth::MessageId;
using eth::ServeKind;

class Handler {
  public:
    Handler(Connection& conn, const EthLink& link, const ServeContext& context)
        : conn_(conn),
          link_(link),
          context_(context),
          meters_(context.metrics != nullptr ? context.metrics->eth(link.version) : nullptr) {}

    asio::awaitable<void> run() {
        int silent_periods = 0;
        for (;;) {
            auto m = co_await conn_.read_message(Clock::now() + conn_.limits().idle);
            if (!m) {
                if (++silent_periods >= 2) throw PeerError(PeerErrorKind::kSilent, "peer silent for two idle periods");
                Bytes ping;
                encode_ping(ping);
                co_await conn_.write_message(kPingId, ping);
                continue;
            }
            silent_periods = 0;
            const Clock::time_point received = meters_ != nullptr ? Clock::now() : Clock::time_point{};
            if (co_await handle_base(conn_, *m)) continue;
            co_await dispatch(static_cast<MessageId>(eth_code(link_, *m)), m->payload, received);
            // Reads and writes complete at once while a peer keeps the socket busy: give the
            // worker's other sessions and timers their turn after every message, or one pipelining
            // peer would hold the worker.
            co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
        }
    }

  private:
    asio::awaitable<void> dispatch(MessageId id, ByteView payload, Clock::time_point received) {
        switch (eth::role_of(link_.version, static_cast<uint64_t>(id))) {
            case eth::MessageRole::kHeaderRequest:
                co_await serve_headers(payload);
                break;
            case eth::MessageRole::kEmptyAnsweredRequest:
                if (context_.history != nullptr && eth::is_history_request(id)) {
                    co_await serve_history(id, payload);
                } else {
                    co_await answer_empty(id, payload);
                }
                break;
            case eth::MessageRole::kRangeUpdate: {
                auto update = eth::BlockRangeUpdate::decode(payload);
                if (!update) throw_peer_error(update.error(), "BlockRangeUpdate");
                if (auto v = update->validate(); !v) throw_peer_error(v.error(), "BlockRangeUpdate");
                co_return;
            }
            case eth::MessageRole::kGossip:
                co_return;  // a header server has no use for it
            case eth::MessageRole::kResponse:
                // We never ask, so every reply is unsolicited. Bodies, receipts and the like are
                // harmless and cheap to drop; BlockHeaders would answer a request of ours, and a
                // peer that sends one is confused about who serves whom.
                if (id != MessageId::kBlockHeaders) co_return;
                [[fallthrough]];
            case eth::MessageRole::kStatus:
            case eth::MessageRole::kInvalid:
                throw PeerError(PeerErrorKind::kUnexpectedMessage,
                                fmt::format("unexpected {}", eth::message_name(static_cast<uint64_t>(id))));
        }
        observe_serve(id, received);
    }

    asio::awaitable<void> serve_headers(ByteView payload) {
        auto req = eth::GetBlockHeadersRequest::decode(payload);
        if (!req) throw_peer_error(req.error(), "GetBlockHeaders");
        Worker& worker = context_.worker;
        if (context_.reply_delay > Clock::duration::zero()) {
            // Before serving: the worker's reply buffer is shared by its sessions across awaits.
            asio::steady_timer delay(co_await asio::this_coro::executor, context_.reply_delay);
            co_await delay.async_wait(asio::use_awaitable);
        }
        const uint64_t reply_id = link_.offset + static_cast<uint64_t>(MessageId::kBlockHeaders);
        const NetMetrics* metrics = context_.metrics;
        // A range by number asked of the same chain before: its header list goes out as it was
        // compressed then, behind this request's prefix (docs/wire.md, "Compressed replies kept").
        std::optional<eth::RangeKey> key;
        if (context_.reply_cache != nullptr && conn_.snappy()) {
            key = eth::range_key(*req, context_.headers.limits().max_headers, context_.headers.source());
        }
        if (key) {
            const eth::ReplyCache::Entry* entry = context_.reply_cache->find(*key);
            if (metrics != nullptr) metrics->reply_cache_lookup(entry != nullptr);
            Outcome<eth::ServeSummary> summary = eth::ServeSummary{};
            if (entry == nullptr) {
                summary = context_.headers.serve(*req, worker.scratch(), worker.reply());
                // A reply the head cut shorter than the key says (the head moved back within the
                // read) is sent as it is and not kept.
                if (summary && summary->headers > 0 && summary->headers <= key->count) {
                    const Bytes& reply = worker.reply();
                    const ByteView header_bytes(reply.data() + reply.size() - summary->header_bytes,
                                                summary->header_bytes);
                    eth::ReplyCache::Change change;
                    entry = context_.reply_cache->insert(*key, header_bytes, summary->headers, change);
                    if (metrics != nullptr) metrics->reply_cache_changed(change.bytes, change.entries, change.evicted);
                }
            } else {
                const ServeKind kind = req->skip == 0 ? ServeKind::kContiguous : ServeKind::kSkip;
                summary = eth::ServeSummary{
                    kind, entry->headers, entry->length,
                    eth::ancient_headers(*key, entry->headers, context_.headers.source().ancient_items())};
            }
            if (entry != nullptr) {
                std::array<uint8_t, eth::kMaxBlockHeadersPrefix> prefix;
                const size_t n = eth::encode_block_headers_prefix(req->request_id, entry->length, prefix);
                // The entry is copied into the frame before the write first waits, so another
                // session's insert cannot pull it away.
                co_await conn_.write_spliced_message(reply_id, ByteView(prefix.data(), n), entry->body());
            } else {
                co_await conn_.write_message(reply_id, worker.reply());
            }
            count_served(summary);
            co_return;
        }
        // A damaged store still gets an (empty) answer; serve() logs nothing itself, we do below.
        auto summary = context_.headers.serve(*req, worker.scratch(), worker.reply());
        co_await conn_.write_message(reply_id, worker.reply());
        count_served(summary);
    }

    void count_served(const Outcome<eth::ServeSummary>& summary) {
        Worker& worker = context_.worker;
        const NetMetrics* metrics = context_.metrics;
        if (metrics != nullptr && summary) {
            metrics->header_requests(summary->kind).Increment();
            metrics->headers_served(Store::kAncient).Increment(static_cast<double>(summary->ancient_headers));
            metrics->headers_served(Store::kLevelDb)
                .Increment(static_cast<double>(summary->headers - summary->ancient_headers));
        }
        // A damaged store fails every request that touches it: one line per 10 s is enough.
        if (!summary) {
            if (auto v = worker.limiter().allow("damaged store", Clock::now())) {
                spdlog::error("Serving headers failed                   err=\"{}\" suppressed={}",
                              summary.error().message, v.suppressed);
            }
        }
    }

    // GetBlockBodies or GetReceipts from the history (p2p/eth/history.hpp). A damaged block ends
    // the reply before it; it is logged (at most once per 10 s per worker), never served.
    asio::awaitable<void> serve_history(MessageId id, ByteView payload) {
        Worker& worker = context_.worker;
        worker.scratch().clear();
        auto served = eth::serve_history(link_.version, id, payload, context_.headers.source(), *context_.history,
                                         *context_.history_limits, worker.scratch().bytes, worker.reply());
        worker.scratch().clear();
        if (!served) throw_peer_error(served.error(), eth::message_name(static_cast<uint64_t>(id)));
        if (served->damaged) {
            if (auto v = worker.limiter().allow("damaged history", Clock::now())) {
                spdlog::error("Serving history failed                   err=\"{}\" suppressed={}",
                              served->damaged->message, v.suppressed);
            }
        }
        if (context_.metrics != nullptr)
            context_.metrics->history_served(served->reply, served->items, served->item_bytes);
        co_await conn_.write_message(link_.offset + static_cast<uint64_t>(served->reply), worker.reply());
    }

    // The correct empty reply of the negotiated version for what headerd does not keep: BALs,
    // transactions, cells, and bodies and receipts without history.
    asio::awaitable<void> answer_empty(MessageId id, ByteView payload) {
        Bytes& reply = context_.worker.reply();
        auto reply_id = eth::answer_empty(link_.version, id, payload, reply);
        if (!reply_id) throw_peer_error(reply_id.error(), eth::message_name(static_cast<uint64_t>(id)));
        co_await conn_.write_message(link_.offset + static_cast<uint64_t>(*reply_id), reply);
    }

    // Service time of a request that arrived at `received`; a no-op with metrics off.
    void observe_serve(MessageId id, Clock::time_point received) const {
        if (meters_ == nullptr) return;
        auto* histogram = meters_->serve_seconds[static_cast<size_t>(id)];
        if (histogram != nullptr) histogram->Observe(std::chrono::duration<double>(Clock::now() - received).count());
    }

    Connection& conn_;
    const EthLink& link_;
    const ServeContext& context_;
    const MessageMeters* meters_;
};

}  // namespace

asio::awaitable<void> serve_peer(Connection& conn, const EthLink& link, const ServeContext& context) {
    Handler handler(conn, link, context);
    co_await handler.run();
}

}  // namespace headerd::p2p
