#include "p2p/server_session.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "p2p/eth/messages.hpp"

namespace headerd::p2p {
namespace {

using eth::MessageId;

constexpr uint64_t kPingId = static_cast<uint64_t>(BaseMessageId::kPing);

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
        }
    }

  private:
    asio::awaitable<void> dispatch(MessageId id, ByteView payload, Clock::time_point received) {
        switch (id) {
            case MessageId::kGetBlockHeaders:
                co_await serve_headers(payload);
                break;
            case MessageId::kGetBlockBodies:
            case MessageId::kGetReceipts:
            case MessageId::kGetPooledTransactions:
                co_await answer_empty(id, payload);
                break;
            case MessageId::kBlockRangeUpdate: {
                auto update = eth::BlockRangeUpdate::decode(payload);
                if (!update) throw_peer_error(update.error(), "BlockRangeUpdate");
                if (auto v = update->validate(); !v) throw_peer_error(v.error(), "BlockRangeUpdate");
                co_return;
            }
            case MessageId::kNewBlockHashes:
            case MessageId::kTransactions:
            case MessageId::kNewBlock:
            case MessageId::kNewPooledTransactionHashes:
                co_return;  // gossip: a header server has no use for it
            case MessageId::kBlockBodies:
            case MessageId::kPooledTransactions:
            case MessageId::kReceipts:
                co_return;  // replies we never asked for, but harmless and cheap to drop
            default:
                // Status again, or BlockHeaders we never asked for.
                throw PeerError(PeerErrorKind::kUnexpectedMessage,
                                fmt::format("unexpected {}", eth::message_name(static_cast<uint64_t>(id))));
        }
        observe_serve(id, received);
    }

    asio::awaitable<void> serve_headers(ByteView payload) {
        auto req = eth::GetBlockHeadersRequest::decode(payload);
        if (!req) throw_peer_error(req.error(), "GetBlockHeaders");
        Worker& worker = context_.worker;
        // A damaged store still gets an (empty) answer; serve() logs nothing itself, we do below.
        auto summary = context_.headers.serve(*req, worker.scratch(), worker.reply());
        co_await conn_.write_message(link_.offset + static_cast<uint64_t>(MessageId::kBlockHeaders), worker.reply());
        const NetMetrics* metrics = context_.metrics;
        if (metrics != nullptr && summary) {
            metrics->header_requests(summary->kind).Increment();
            metrics->headers_served(db::Store::kAncient).Increment(static_cast<double>(summary->ancient_headers));
            metrics->headers_served(db::Store::kLevelDb)
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

    asio::awaitable<void> answer_empty(MessageId id, ByteView payload) {
        auto req = eth::HashListRequest::decode(payload);
        if (!req) throw_peer_error(req.error(), eth::message_name(static_cast<uint64_t>(id)));
        Bytes& reply = context_.worker.reply();
        reply.clear();
        eth::encode_empty_reply(reply, req->request_id);
        co_await conn_.write_message(link_.offset + static_cast<uint64_t>(*eth::empty_reply_id(id)), reply);
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
