#pragma once

// eth/68 and eth/69 messages a header server sends and reads. Each message is a small struct with
// encode (appends the RLP payload to a caller-owned buffer) and a noexcept decode (exactly one
// payload, nothing after it). Ids are relative to the eth offset (0x10 when eth is the only shared
// capability). Layouts, limits and test vectors: docs/wire.md.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

#include "core/bytes.hpp"
#include "core/forkid.hpp"
#include "core/item_buffer.hpp"
#include "core/result.hpp"
#include "core/uint256.hpp"

namespace headerd::eth {

inline constexpr uint64_t kEth68 = 68;
inline constexpr uint64_t kEth69 = 69;

// geth drops a peer whose eth message is larger than this (maxMessageSize).
inline constexpr size_t kMaxMessageSize = size_t{10} << 20;

enum class MessageId : uint8_t {
    kStatus = 0x00,
    kNewBlockHashes = 0x01,
    kTransactions = 0x02,
    kGetBlockHeaders = 0x03,
    kBlockHeaders = 0x04,
    kGetBlockBodies = 0x05,
    kBlockBodies = 0x06,
    kNewBlock = 0x07,
    kNewPooledTransactionHashes = 0x08,
    kGetPooledTransactions = 0x09,
    kPooledTransactions = 0x0a,
    kGetReceipts = 0x0f,
    kReceipts = 0x10,
    kBlockRangeUpdate = 0x11,  // eth/69+
};

// Size of the message-id space of an eth version: 17 for eth/68, 18 for eth/69; 0 if unknown.
uint64_t message_space(uint64_t version) noexcept;
// Whether relative id `id` names a message of `version` (0x0b..0x0e are unused since eth/67;
// 0x11 exists from eth/69).
bool is_message_of(uint64_t version, uint64_t id) noexcept;
// "GetBlockHeaders", ...; "unknown" otherwise. For logs and metric labels.
std::string_view message_name(uint64_t id) noexcept;
// The reply to a request this node answers with an empty list: GetBlockBodies -> BlockBodies,
// GetReceipts -> Receipts, GetPooledTransactions -> PooledTransactions.
std::optional<MessageId> empty_reply_id(MessageId request) noexcept;

enum class MessageError {
    kTooFewFields = 1,     // a list ends before the message's last field
    kTooManyFields,        // elements after the last field (eth messages have no extension tail)
    kBadOrigin,            // GetBlockHeaders origin neither a 32-byte hash nor a number of <= 8 bytes
    kBadReverse,           // reverse flag neither 0x80 (false) nor 0x01 (true)
    kBadHeader,            // a BlockHeaders element that is not an RLP list
    kVersionOverflow,      // Status version wider than 32 bits
    kEarliestAfterLatest,  // block range with earliest > latest
    kZeroLatestHash,       // block range whose latest hash is zero
};

const std::error_category& message_category() noexcept;
std::error_code make_error_code(MessageError e) noexcept;

// ---- Status (0x00) ------------------------------------------------------------------------------

// eth/68: [version, network id, total difficulty, head hash, genesis hash, forkid]
struct StatusMessage68 {
    static constexpr MessageId kId = MessageId::kStatus;
    uint32_t version{static_cast<uint32_t>(kEth68)};
    uint64_t network_id{0};
    U256 total_difficulty{0};
    Hash32 head_hash{};
    Hash32 genesis_hash{};
    ForkId fork_id;

    void encode(Bytes& out) const;
    static Result<StatusMessage68> decode(ByteView payload) noexcept;
    bool operator==(const StatusMessage68&) const = default;
};

// eth/69: [version, network id, genesis hash, forkid, earliest, latest, latest hash]; earliest and
// latest bound the full blocks (bodies, receipts) the sender serves.
struct StatusMessage69 {
    static constexpr MessageId kId = MessageId::kStatus;
    uint32_t version{static_cast<uint32_t>(kEth69)};
    uint64_t network_id{0};
    Hash32 genesis_hash{};
    ForkId fork_id;
    uint64_t earliest{0};
    uint64_t latest{0};
    Hash32 latest_hash{};

    void encode(Bytes& out) const;
    static Result<StatusMessage69> decode(ByteView payload) noexcept;
    bool operator==(const StatusMessage69&) const = default;
};

// ---- GetBlockHeaders (0x03) ---------------------------------------------------------------------

struct HashOrNumber {
    bool is_hash{false};
    Hash32 hash{};       // when is_hash
    uint64_t number{0};  // when !is_hash
    static HashOrNumber of(uint64_t n) noexcept { return {false, {}, n}; }
    static HashOrNumber of(const Hash32& h) noexcept { return {true, h, 0}; }
    bool operator==(const HashOrNumber&) const = default;
};

// [request id, [origin, amount, skip, reverse]]; origin is a 32-byte string (hash) or an integer
// of at most 8 bytes (number); reverse is 0x80 or 0x01.
struct GetBlockHeadersRequest {
    static constexpr MessageId kId = MessageId::kGetBlockHeaders;
    uint64_t request_id{0};
    HashOrNumber origin;
    uint64_t amount{0};
    uint64_t skip{0};
    bool reverse{false};

    void encode(Bytes& out) const;
    static Result<GetBlockHeadersRequest> decode(ByteView payload) noexcept;
    bool operator==(const GetBlockHeadersRequest&) const = default;
};

// ---- BlockHeaders (0x04) ------------------------------------------------------------------------

// Most bytes encode_block_headers_prefix writes: three RLP headers of at most 9 bytes.
inline constexpr size_t kMaxBlockHeadersPrefix = 27;

// Exact size of [request id, [headers...]] around `headers_bytes` bytes of concatenated header RLP.
size_t block_headers_length(uint64_t request_id, size_t headers_bytes) noexcept;
// Writes the bytes that precede the headers in [request id, [headers...]] into `out`; returns how
// many. Allocation-free, so the server can build a reply prefix anywhere.
size_t encode_block_headers_prefix(uint64_t request_id, size_t headers_bytes,
                                   std::array<uint8_t, kMaxBlockHeadersPrefix>& out) noexcept;
// Replaces `out` with [request id, [h1, h2, ...]] where `headers` is already-encoded header RLP
// back to back (an ItemBuffer's bytes): one exact reserve, one copy, nothing re-encoded. Does not
// allocate when out has the capacity.
void encode_block_headers(Bytes& out, uint64_t request_id, ByteView headers);

// Client side: the headers are views into the decoded payload, each a well-formed RLP list (the
// caller decodes and verifies them).
struct BlockHeadersMessage {
    static constexpr MessageId kId = MessageId::kBlockHeaders;
    uint64_t request_id{0};
    std::vector<ByteView> headers;

    void encode(Bytes& out) const;
    static Result<BlockHeadersMessage> decode(ByteView payload) noexcept;
};

// The envelope every eth/66+ response shares, [request id, [item...]], read without decoding the
// items: what a request tracker checks before spending work on the body.
struct ResponseHead {
    uint64_t request_id{0};
    size_t items{0};
    static Result<ResponseHead> peek(ByteView payload) noexcept;
};

// ---- requests answered empty --------------------------------------------------------------------

// GetBlockBodies (0x05), GetReceipts (0x0f), GetPooledTransactions (0x09): [request id, [hash...]].
// headerd keeps no bodies, receipts or transactions, so only the id and the count are kept; every
// hash must still be a 32-byte string.
struct HashListRequest {
    uint64_t request_id{0};
    size_t count{0};
    static Result<HashListRequest> decode(ByteView payload) noexcept;
};

// [request id, []]: the valid empty BlockBodies, Receipts or PooledTransactions reply. (eth/70+
// Receipts differ; headerd does not offer eth/70.)
void encode_empty_reply(Bytes& out, uint64_t request_id);

// ---- BlockRangeUpdate (0x11, eth/69) ------------------------------------------------------------

// [earliest, latest, latest hash]
struct BlockRangeUpdate {
    static constexpr MessageId kId = MessageId::kBlockRangeUpdate;
    uint64_t earliest{0};
    uint64_t latest{0};
    Hash32 latest_hash{};

    void encode(Bytes& out) const;
    // Decodes only; call validate() before trusting the range.
    static Result<BlockRangeUpdate> decode(ByteView payload) noexcept;
    // earliest <= latest and a non-zero latest hash (geth's check; also applied to eth/69 Status).
    Result<void> validate() const noexcept;
    bool operator==(const BlockRangeUpdate&) const = default;
};

}  // namespace headerd::eth

template <>
struct std::is_error_code_enum<headerd::eth::MessageError> : std::true_type {};
