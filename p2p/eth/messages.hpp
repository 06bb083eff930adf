#pragma once

// eth/68..eth/72 messages a header server sends and reads. Each message is a small struct with
// encode (appends the RLP payload to a caller-owned buffer) and a noexcept decode (exactly one
// payload, nothing after it). Ids are relative to the eth offset (0x10 when eth is the only shared
// capability). role_of() is the one classification of incoming messages, answer_empty() the one
// answer to every request headerd cannot serve. Layouts, limits and test vectors: docs/wire.md.

#include <algorithm>
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
inline constexpr uint64_t kEth69 = 69;  // Status with a block range, BlockRangeUpdate
inline constexpr uint64_t kEth70 = 70;  // partial receipt lists (EIP-7975)
inline constexpr uint64_t kEth71 = 71;  // block access lists (EIP-8159)
inline constexpr uint64_t kEth72 = 72;  // cell-level blob relay (EIP-8070)

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
    kBlockRangeUpdate = 0x11,     // eth/69+
    kGetBlockAccessLists = 0x12,  // eth/71+
    kBlockAccessLists = 0x13,     // eth/71+
    kGetCells = 0x14,             // eth/72
    kCells = 0x15,                // eth/72
};

// Size of the message-id space of an eth version: 17 for eth/68, 18 for eth/69 and eth/70, 20 for
// eth/71, 22 for eth/72; 0 for a version headerd does not speak.
uint64_t message_space(uint64_t version) noexcept;
// Whether relative id `id` names a message of `version` (0x0b..0x0e are unused since eth/67).
bool is_message_of(uint64_t version, uint64_t id) noexcept;
// "GetBlockHeaders", ...; "unknown" otherwise. Names do not change between versions. For logs and
// metric labels.
std::string_view message_name(uint64_t id) noexcept;
// Whether `version` carries a block range (Status fields and BlockRangeUpdate): eth/69 and later.
inline bool has_block_range(uint64_t version) noexcept { return version >= kEth69; }

// What a header server does with each incoming eth message.
enum class MessageRole : uint8_t {
    kStatus,                // handshake only; a second one is a protocol breach
    kHeaderRequest,         // GetBlockHeaders: serve
    kEmptyAnsweredRequest,  // a request for data headerd does not keep: answer_empty()
    kResponse,              // a reply: match it against a pending request (unsolicited: drop or breach)
    kGossip,                // announcements and broadcasts: ignore
    kRangeUpdate,           // BlockRangeUpdate: decode and validate
    kInvalid,               // not a message of this version: protocol breach
};

// The role of relative id `relative_id` in eth `version`; kInvalid for an id the version does not
// define and for a version headerd does not speak. NewBlockHashes and NewBlock stay gossip in
// every version: devp2p still lists them (even though geth refuses them from eth/69 on).
MessageRole role_of(uint64_t version, uint64_t relative_id) noexcept;
std::string_view to_string(MessageRole role) noexcept;

enum class MessageError {
    kTooFewFields = 1,     // a list ends before the message's last field
    kTooManyFields,        // elements after the last field (eth messages have no extension tail)
    kBadOrigin,            // GetBlockHeaders origin neither a 32-byte hash nor a number of <= 8 bytes
    kBadReverse,           // reverse flag neither 0x80 (false) nor 0x01 (true)
    kBadHeader,            // a BlockHeaders element that is not an RLP list
    kVersionOverflow,      // Status version wider than 32 bits
    kEarliestAfterLatest,  // block range with earliest > latest
    kZeroLatestHash,       // block range whose latest hash is zero
    kBadFlag,              // a {0, 1} field (Receipts lastBlockIncomplete) neither 0x80 nor 0x01
    kWrongMessage,         // answer_empty()/peek() given an id that is not a request answered empty / a response of the
                           // version
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

// The envelope of a response, read without decoding its items: what a request tracker checks
// before spending work on the body.
struct ResponseHead {
    uint64_t request_id{0};
    size_t items{0};
    // [request id, [item...]]: every response of eth/66..69, and of later versions all but
    // Receipts and Cells.
    static Result<ResponseHead> peek(ByteView payload) noexcept;
    // The envelope of response `id` in `version`: eth/70+ Receipts are
    // [request id, lastBlockIncomplete, [receipt list...]] (items: the receipt lists), eth/72 Cells
    // [request id, [hash...], [cell group...], cells B_16] (items: the cell groups, as geth's
    // tracker counts them); the others as above. An id that is not a response of `version` is
    // MessageError::kWrongMessage.
    static Result<ResponseHead> peek(uint64_t version, MessageId id, ByteView payload) noexcept;
};

// ---- requests answered empty --------------------------------------------------------------------

// headerd keeps no transactions, access lists or blobs, and bodies and receipts only when it holds
// history (p2p/eth/history.hpp serves them then). The decoders below read every such request
// strictly (a malformed request is a protocol breach like any other): the request id and the
// hashes, each checked to be a 32-byte string and kept as a view.

// GetBlockBodies (0x05), GetPooledTransactions (0x09), GetBlockAccessLists (0x12, eth/71+) and
// eth/68-69 GetReceipts (0x0f): [request id, [hash...]]. Sessions answering empty call
// answer_empty(), which picks the layout by version.
struct HashListRequest {
    uint64_t request_id{0};
    size_t count{0};
    ByteView hashes;  // the hash list's payload: hash i is hash_at(hashes, i)
    static Result<HashListRequest> decode(ByteView payload) noexcept;
};
// Each hash of a decoded hash list is a 33-byte item: a0 and the 32 bytes.
inline constexpr size_t kHashItemSize = 33;
inline Hash32 hash_at(ByteView hashes, size_t i) noexcept {
    Hash32 h;
    std::copy_n(hashes.data() + i * kHashItemSize + 1, 32, h.begin());
    return h;
}

// eth/70+ GetReceipts (0x0f): [request id, firstBlockReceiptIndex, [block hash...]].
struct GetReceiptsRequest70 {
    static constexpr MessageId kId = MessageId::kGetReceipts;
    uint64_t request_id{0};
    uint64_t first_block_receipt_index{0};
    size_t count{0};
    ByteView hashes;  // as HashListRequest::hashes
    static Result<GetReceiptsRequest70> decode(ByteView payload) noexcept;
};

// Which cell indices (0..127) of every blob are meant; geth sets index i as bit i % 8 (least
// significant first) of byte i / 8. headerd never reads the bits.
using CellBitmap = std::array<uint8_t, 16>;

// eth/72 GetCells (0x14): [request id, [tx hash...], cells B_16].
struct GetCellsRequest {
    static constexpr MessageId kId = MessageId::kGetCells;
    uint64_t request_id{0};
    size_t count{0};
    CellBitmap cells{};
    static Result<GetCellsRequest> decode(ByteView payload) noexcept;
};

// Most entries of a BlockAccessLists reply (geth's maxBALsServe): a longer request is answered for
// its first 1024 hashes, as geth does.
inline constexpr size_t kMaxBlockAccessListsServed = 1024;

// [request id, []]: the empty BlockBodies, PooledTransactions and eth/68-69 Receipts (direct use by
// sessions is superseded by answer_empty()).
void encode_empty_reply(Bytes& out, uint64_t request_id);
// [request id, 0, []]: eth/70+ Receipts with no receipt list, lastBlockIncomplete false.
void encode_empty_receipts70(Bytes& out, uint64_t request_id);
// [request id, [80, 80, ...]] with `count` entries: a BlockAccessLists reply where every BAL is
// unavailable. The empty string, not [], is the spec's "unavailable": [] is a valid (empty) BAL.
void encode_unavailable_block_access_lists(Bytes& out, uint64_t request_id, size_t count);
// [request id, [], [], 16 zero bytes]: Cells with nothing. The all-zero bitmap is a subset of
// every request's bitmap and says "no cell index", so it is valid whatever was asked.
void encode_empty_cells(Bytes& out, uint64_t request_id);

// Answers a request of `version` that headerd cannot serve (role_of(...) == kEmptyAnsweredRequest):
// decodes it strictly in that version's layout, then replaces `out` with the valid empty reply of
// that version and returns the reply's id:
//   GetBlockBodies -> BlockBodies [id, []]        GetPooledTransactions -> PooledTransactions [id, []]
//   GetReceipts -> Receipts [id, []] (68, 69)     or [id, 0, []] (70+)
//   GetBlockAccessLists -> BlockAccessLists [id, [80 x min(n, 1024)]] (71+)
//   GetCells -> Cells [id, [], [], 00 x 16] (72)
// A decode error leaves `out` as it was; the caller disconnects with protocol breach. A `request`
// that is not such a request in `version` is MessageError::kWrongMessage. `out`'s capacity is
// reused: it grows only for a reply larger than any before (replies are at most 29 bytes, except
// BlockAccessLists: one byte per entry).
Result<MessageId> answer_empty(uint64_t version, MessageId request, ByteView payload, Bytes& out);

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
