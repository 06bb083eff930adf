#pragma once

// serve --rpc: a read-only JSON-RPC 2.0 endpoint over HTTP for tools that want headers and history
// from a node without running a full client (a Portal client verifying history with
// debug_getRawHeader, an indexer backfilling bodies and receipts). Methods, limits and error codes
// as geth's where both have them: docs/rpc.md. There are no state methods and nothing writes.
//
// Thread-safety: a Handler only reads its sources (which serve any thread at once), so one may
// answer on any thread, several at once.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/header_source.hpp"
#include "core/history_source.hpp"
#include "metrics/http_server.hpp"

namespace headerd::rpc {

struct RpcLimits {
    size_t max_body_bytes{5 << 20};       // a request body (geth: 5 MiB); more is HTTP 413
    size_t max_batch{1000};               // calls in one batch (geth's BatchRequestLimit)
    size_t max_response_bytes{25 << 20};  // a batch's reply (geth's BatchResponseMaxSize); later calls fail
};

// JSON-RPC error codes (the specification's, and geth's for history a node does not hold).
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kServerError = -32000;
inline constexpr int kResponseTooLarge = -32003;
inline constexpr int kPrunedHistory = 4444;

class Handler {
  public:
    // `history` may be null (a headers-only node). `first_block` is the lowest block held ("earliest").
    // `client_version` is what web3_clientVersion answers.
    Handler(const HeaderSource& headers, const HistorySource* history, uint64_t first_block, std::string client_version,
            RpcLimits limits = {});

    // The reply to one request body: a response object, an array of them for a batch, or empty
    // when every call was a notification (no id).
    std::string answer(std::string_view body) const;

    // The HTTP side: POST / with Content-Type application/json, Host localhost or an IP address
    // (geth's default virtual hosts, against DNS rebinding), else 404, 405, 415 or 403.
    metrics::HttpHandler http_handler() const;

    const RpcLimits& limits() const noexcept { return limits_; }

  private:
    const HeaderSource& headers_;
    const HistorySource* history_;
    uint64_t first_block_;
    std::string client_version_;
    RpcLimits limits_;
};

}  // namespace headerd::rpc
