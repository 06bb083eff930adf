#include "p2p/eth/messages.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include "core/rlp.hpp"

namespace headerd::eth {
namespace {

class MessageCategory final : public std::error_category {
  public:
    const char* name() const noexcept override { return "eth"; }
    std::string message(int ev) const override {
        switch (static_cast<MessageError>(ev)) {
            case MessageError::kTooFewFields:
                return "message has too few fields";
            case MessageError::kTooManyFields:
                return "message has too many fields";
            case MessageError::kBadOrigin:
                return "origin is neither a 32-byte hash nor a number";
            case MessageError::kBadReverse:
                return "reverse flag is neither 0x80 nor 0x01";
            case MessageError::kBadHeader:
                return "block header is not an RLP list";
            case MessageError::kVersionOverflow:
                return "status version does not fit in 32 bits";
            case MessageError::kEarliestAfterLatest:
                return "block range earliest > latest";
            case MessageError::kZeroLatestHash:
                return "block range latest hash is zero";
            case MessageError::kBadFlag:
                return "flag is neither 0x80 nor 0x01";
            case MessageError::kWrongMessage:
                return "message is not of the expected kind in this eth version";
        }
        return "unknown eth message error";
    }
};

// The outer list of a message payload; nothing may follow it.
Result<ByteView> open_message(ByteView payload) noexcept {
    auto items = rlp::decode_list(payload);
    if (!items) return items.error();
    if (!payload.empty()) return rlp::DecodeError::kTrailingBytes;
    return *items;
}

// Reads the fields of one message list in order: a field that is not there is kTooFewFields, and
// done() reports elements left over as kTooManyFields.
class Fields {
  public:
    explicit Fields(ByteView items) noexcept : items_(items) {}

    Result<uint64_t> u64() noexcept {
        if (items_.empty()) return MessageError::kTooFewFields;
        return rlp::decode_uint64(items_);
    }
    Result<U256> u256() noexcept {
        if (items_.empty()) return {boost::system::in_place_error, MessageError::kTooFewFields};
        return rlp::decode_u256(items_);
    }
    Result<Hash32> hash() noexcept {
        if (items_.empty()) return MessageError::kTooFewFields;
        return rlp::decode_hash(items_);
    }
    Result<ByteView> list() noexcept {
        if (items_.empty()) return MessageError::kTooFewFields;
        return rlp::decode_list(items_);
    }
    // A {0, 1} field: exactly the byte 80 or 01, as geth's rlp bool.
    Result<bool> flag() noexcept {
        auto item = this->item();
        // Result<bool> would take an error_code for a bool: name the error alternative.
        if (!item) return {boost::system::in_place_error, item.error()};
        if (item->size() != 1 || ((*item)[0] != 0x80 && (*item)[0] != 0x01)) {
            return {boost::system::in_place_error, MessageError::kBadFlag};
        }
        return (*item)[0] == 0x01;
    }
    Result<CellBitmap> cell_bitmap() noexcept {
        if (items_.empty()) return MessageError::kTooFewFields;
        auto s = rlp::decode_string(items_);
        if (!s) return s.error();
        if (s->size() != CellBitmap{}.size()) return rlp::DecodeError::kUnexpectedLength;
        CellBitmap b;
        std::copy(s->begin(), s->end(), b.begin());
        return b;
    }
    // A list of 32-byte strings; returns its payload (33 bytes per hash: a0 and the hash).
    Result<ByteView> hash_list() noexcept {
        auto list = this->list();
        if (!list) return list.error();
        for (ByteView rest = *list; !rest.empty();) {
            if (auto hash = rlp::decode_hash(rest); !hash) return hash.error();
        }
        return *list;
    }
    // A list of 32-byte strings; returns how many.
    Result<size_t> hash_count() noexcept {
        auto list = this->list();
        if (!list) return list.error();
        size_t n = 0;
        for (ByteView rest = *list; !rest.empty(); ++n) {
            if (auto hash = rlp::decode_hash(rest); !hash) return hash.error();
        }
        return n;
    }
    // A list whose items are only delimited, not decoded; returns how many.
    Result<size_t> item_count() noexcept {
        auto list = this->list();
        if (!list) return list.error();
        size_t n = 0;
        for (ByteView rest = *list; !rest.empty(); ++n) {
            if (auto item = rlp::next_item(rest); !item) return item.error();
        }
        return n;
    }
    Result<ForkId> fork_id() noexcept {
        if (items_.empty()) return MessageError::kTooFewFields;
        return decode_fork_id(items_);
    }
    Result<uint32_t> version() noexcept {
        auto v = u64();
        if (!v) return v.error();
        if (*v > std::numeric_limits<uint32_t>::max()) return MessageError::kVersionOverflow;
        return static_cast<uint32_t>(*v);
    }
    // The next raw item, whatever it is.
    Result<ByteView> item() noexcept {
        if (items_.empty()) return MessageError::kTooFewFields;
        return rlp::next_item(items_);
    }
    Result<void> done() const noexcept {
        if (!items_.empty()) return MessageError::kTooManyFields;
        return {};
    }

    // Reads the next field into `out` with `read` (&Fields::u64, &Fields::hash, ...) unless an
    // earlier into() failed, so a decoder can read a run of fields and check once, in finish().
    template <typename T>
    Fields& into(T& out, Result<T> (Fields::*read)() noexcept) noexcept {
        if (error_) return *this;
        auto v = (this->*read)();
        if (v) {
            out = *v;
        } else {
            error_ = v.error();
        }
        return *this;
    }
    // The first error of into(), else done()'s verdict.
    Result<void> finish() const noexcept {
        if (error_) return error_;
        return done();
    }

  private:
    ByteView items_;
    std::error_code error_;
};

size_t fork_id_length(const ForkId& id) noexcept {
    return rlp::length_of_list(rlp::length(ByteView{id.hash}) + rlp::length(id.next));
}

constexpr size_t kHashLength = 33;  // an RLP-encoded 32-byte string

// [request id, [item...]] with the items left unsplit, for BlockHeaders.
struct IdAndList {
    uint64_t request_id;
    ByteView list;  // the items' RLP, not yet split
};

Result<IdAndList> open_id_and_list(ByteView payload) noexcept {
    auto items = open_message(payload);
    if (!items) return items.error();
    IdAndList out{};
    Fields f{*items};
    f.into(out.request_id, &Fields::u64).into(out.list, &Fields::list);
    if (auto r = f.finish(); !r) return r.error();
    return out;
}

}  // namespace

const std::error_category& message_category() noexcept {
    static const MessageCategory category;
    return category;
}

std::error_code make_error_code(MessageError e) noexcept { return {static_cast<int>(e), message_category()}; }

uint64_t message_space(uint64_t version) noexcept {
    switch (version) {
        case kEth68:
            return 17;
        case kEth69:
        case kEth70:
            return 18;
        case kEth71:
            return 20;
        case kEth72:
            return 22;
        default:
            return 0;
    }
}

bool is_message_of(uint64_t version, uint64_t id) noexcept { return role_of(version, id) != MessageRole::kInvalid; }

MessageRole role_of(uint64_t version, uint64_t relative_id) noexcept {
    // message_space() bounds each version: ids above it (BlockRangeUpdate on eth/68, the access
    // lists before eth/71, cells before eth/72) are not messages of that version.
    if (relative_id >= message_space(version)) return MessageRole::kInvalid;
    switch (static_cast<MessageId>(relative_id)) {
        case MessageId::kStatus:
            return MessageRole::kStatus;
        case MessageId::kGetBlockHeaders:
            return MessageRole::kHeaderRequest;
        case MessageId::kGetBlockBodies:
        case MessageId::kGetPooledTransactions:
        case MessageId::kGetReceipts:
        case MessageId::kGetBlockAccessLists:
        case MessageId::kGetCells:
            return MessageRole::kEmptyAnsweredRequest;
        case MessageId::kBlockHeaders:
        case MessageId::kBlockBodies:
        case MessageId::kPooledTransactions:
        case MessageId::kReceipts:
        case MessageId::kBlockAccessLists:
        case MessageId::kCells:
            return MessageRole::kResponse;
        case MessageId::kNewBlockHashes:
        case MessageId::kTransactions:
        case MessageId::kNewBlock:
        case MessageId::kNewPooledTransactionHashes:
            return MessageRole::kGossip;
        case MessageId::kBlockRangeUpdate:
            return MessageRole::kRangeUpdate;
    }
    // 0x0b..0x0e: GetNodeData/NodeData (0x0d/0x0e) went away in eth/67; 0x0b/0x0c were never assigned.
    return MessageRole::kInvalid;
}

std::string_view to_string(MessageRole role) noexcept {
    switch (role) {
        case MessageRole::kStatus:
            return "status";
        case MessageRole::kHeaderRequest:
            return "header_request";
        case MessageRole::kEmptyAnsweredRequest:
            return "empty_answered_request";
        case MessageRole::kResponse:
            return "response";
        case MessageRole::kGossip:
            return "gossip";
        case MessageRole::kRangeUpdate:
            return "range_update";
        case MessageRole::kInvalid:
            return "invalid";
    }
    return "invalid";
}

std::string_view message_name(uint64_t id) noexcept {
    switch (id) {
        case 0x00:
            return "Status";
        case 0x01:
            return "NewBlockHashes";
        case 0x02:
            return "Transactions";
        case 0x03:
            return "GetBlockHeaders";
        case 0x04:
            return "BlockHeaders";
        case 0x05:
            return "GetBlockBodies";
        case 0x06:
            return "BlockBodies";
        case 0x07:
            return "NewBlock";
        case 0x08:
            return "NewPooledTransactionHashes";
        case 0x09:
            return "GetPooledTransactions";
        case 0x0a:
            return "PooledTransactions";
        case 0x0f:
            return "GetReceipts";
        case 0x10:
            return "Receipts";
        case 0x11:
            return "BlockRangeUpdate";
        case 0x12:
            return "GetBlockAccessLists";
        case 0x13:
            return "BlockAccessLists";
        case 0x14:
            return "GetCells";
        case 0x15:
            return "Cells";
        default:
            return "unknown";
    }
}

// ---- Status -------------------------------------------------------------------------------------

void StatusMessage68::encode(Bytes& out) const {
    const size_t payload = rlp::length(uint64_t{version}) + rlp::length(network_id) + rlp::length(total_difficulty) +
                           2 * kHashLength + fork_id_length(fork_id);
    out.reserve(out.size() + rlp::length_of_list(payload));
    rlp::encode_header(out, {true, payload});
    rlp::encode(out, uint64_t{version});
    rlp::encode(out, network_id);
    rlp::encode(out, total_difficulty);
    rlp::encode(out, head_hash);
    rlp::encode(out, genesis_hash);
    headerd::encode(out, fork_id);
}

Result<StatusMessage68> StatusMessage68::decode(ByteView payload) noexcept {
    auto items = open_message(payload);
    if (!items) return items.error();
    StatusMessage68 s;
    Fields f{*items};
    f.into(s.version, &Fields::version)
        .into(s.network_id, &Fields::u64)
        .into(s.total_difficulty, &Fields::u256)
        .into(s.head_hash, &Fields::hash)
        .into(s.genesis_hash, &Fields::hash)
        .into(s.fork_id, &Fields::fork_id);
    if (auto r = f.finish(); !r) return r.error();
    return s;
}

void StatusMessage69::encode(Bytes& out) const {
    const size_t payload = rlp::length(uint64_t{version}) + rlp::length(network_id) + kHashLength +
                           fork_id_length(fork_id) + rlp::length(earliest) + rlp::length(latest) + kHashLength;
    out.reserve(out.size() + rlp::length_of_list(payload));
    rlp::encode_header(out, {true, payload});
    rlp::encode(out, uint64_t{version});
    rlp::encode(out, network_id);
    rlp::encode(out, genesis_hash);
    headerd::encode(out, fork_id);
    rlp::encode(out, earliest);
    rlp::encode(out, latest);
    rlp::encode(out, latest_hash);
}

Result<StatusMessage69> StatusMessage69::decode(ByteView payload) noexcept {
    auto items = open_message(payload);
    if (!items) return items.error();
    StatusMessage69 s;
    Fields f{*items};
    f.into(s.version, &Fields::version)
        .into(s.network_id, &Fields::u64)
        .into(s.genesis_hash, &Fields::hash)
        .into(s.fork_id, &Fields::fork_id)
        .into(s.earliest, &Fields::u64)
        .into(s.latest, &Fields::u64)
        .into(s.latest_hash, &Fields::hash);
    if (auto r = f.finish(); !r) return r.error();
    return s;
}

// ---- GetBlockHeaders ----------------------------------------------------------------------------

void GetBlockHeadersRequest::encode(Bytes& out) const {
    const size_t origin_length = origin.is_hash ? kHashLength : rlp::length(origin.number);
    const size_t query = origin_length + rlp::length(amount) + rlp::length(skip) + 1;
    const size_t payload = rlp::length(request_id) + rlp::length_of_list(query);
    out.reserve(out.size() + rlp::length_of_list(payload));
    rlp::encode_header(out, {true, payload});
    rlp::encode(out, request_id);
    rlp::encode_header(out, {true, query});
    if (origin.is_hash) {
        rlp::encode(out, origin.hash);
    } else {
        rlp::encode(out, origin.number);
    }
    rlp::encode(out, amount);
    rlp::encode(out, skip);
    out.push_back(reverse ? 0x01 : 0x80);
}

Result<GetBlockHeadersRequest> GetBlockHeadersRequest::decode(ByteView payload) noexcept {
    auto items = open_message(payload);
    if (!items) return items.error();
    Fields outer{*items};
    GetBlockHeadersRequest r;
    auto id = outer.u64();
    if (!id) return id.error();
    r.request_id = *id;
    auto query = outer.list();
    if (!query) return query.error();
    if (auto d = outer.done(); !d) return d.error();

    Fields q{*query};
    // Hash or number is decided by the string's length alone, as geth does: 32 bytes is a hash,
    // up to 8 a (canonical) integer, anything else, a list included, is refused.
    auto origin = q.item();
    if (!origin) return origin.error();
    {
        ByteView in = *origin;
        auto h = rlp::decode_header(in);
        if (!h) return h.error();
        if (h->list) return MessageError::kBadOrigin;
        if (h->payload_length == 32) {
            ByteView o = *origin;
            auto hash = rlp::decode_hash(o);
            if (!hash) return hash.error();
            r.origin = HashOrNumber::of(*hash);
        } else if (h->payload_length <= 8) {
            ByteView o = *origin;
            auto number = rlp::decode_uint64(o);
            if (!number) return number.error();
            r.origin = HashOrNumber::of(*number);
        } else {
            return MessageError::kBadOrigin;
        }
    }
    auto amount = q.u64();
    if (!amount) return amount.error();
    r.amount = *amount;
    auto skip = q.u64();
    if (!skip) return skip.error();
    r.skip = *skip;
    auto reverse = q.item();
    if (!reverse) return reverse.error();
    if (reverse->size() != 1 || ((*reverse)[0] != 0x80 && (*reverse)[0] != 0x01)) return MessageError::kBadReverse;
    r.reverse = (*reverse)[0] == 0x01;
    if (auto d = q.done(); !d) return d.error();
    return r;
}

// ---- BlockHeaders -------------------------------------------------------------------------------

size_t block_headers_length(uint64_t request_id, size_t headers_bytes) noexcept {
    return rlp::length_of_list(rlp::length(request_id) + rlp::length_of_list(headers_bytes));
}

size_t encode_block_headers_prefix(uint64_t request_id, size_t headers_bytes,
                                   std::array<uint8_t, kMaxBlockHeadersPrefix>& out) noexcept {
    const size_t outer = rlp::length(request_id) + rlp::length_of_list(headers_bytes);
    uint8_t* p = out.data();
    p = rlp::write_list_header(p, outer);
    p = rlp::write_uint(p, request_id);
    p = rlp::write_list_header(p, headers_bytes);
    return static_cast<size_t>(p - out.data());
}

void encode_block_headers(Bytes& out, uint64_t request_id, ByteView headers) {
    std::array<uint8_t, kMaxBlockHeadersPrefix> prefix;
    const size_t n = encode_block_headers_prefix(request_id, headers.size(), prefix);
    out.clear();
    out.reserve(n + headers.size());
    out.insert(out.end(), prefix.begin(), prefix.begin() + static_cast<std::ptrdiff_t>(n));
    append(out, headers);
}

void BlockHeadersMessage::encode(Bytes& out) const {
    size_t total = 0;
    for (ByteView h : headers) total += h.size();
    std::array<uint8_t, kMaxBlockHeadersPrefix> prefix;
    const size_t n = encode_block_headers_prefix(request_id, total, prefix);
    out.reserve(out.size() + n + total);
    out.insert(out.end(), prefix.begin(), prefix.begin() + static_cast<std::ptrdiff_t>(n));
    for (ByteView h : headers) append(out, h);
}

Result<BlockHeadersMessage> BlockHeadersMessage::decode(ByteView payload) noexcept {
    auto envelope = open_id_and_list(payload);
    if (!envelope) return envelope.error();
    BlockHeadersMessage m;
    m.request_id = envelope->request_id;
    for (ByteView rest = envelope->list; !rest.empty();) {
        auto header = rlp::next_item(rest);
        if (!header) return header.error();
        if ((*header)[0] < 0xc0) return MessageError::kBadHeader;
        m.headers.push_back(*header);
    }
    return m;
}

// ---- requests answered empty --------------------------------------------------------------------

Result<HashListRequest> HashListRequest::decode(ByteView payload) noexcept {
    auto items = open_message(payload);
    if (!items) return items.error();
    HashListRequest r;
    Fields f{*items};
    f.into(r.request_id, &Fields::u64).into(r.hashes, &Fields::hash_list);
    if (auto d = f.finish(); !d) return d.error();
    r.count = r.hashes.size() / kHashItemSize;
    return r;
}

Result<GetReceiptsRequest70> GetReceiptsRequest70::decode(ByteView payload) noexcept {
    auto items = open_message(payload);
    if (!items) return items.error();
    GetReceiptsRequest70 r;
    Fields f{*items};
    f.into(r.request_id, &Fields::u64)
        .into(r.first_block_receipt_index, &Fields::u64)
        .into(r.hashes, &Fields::hash_list);
    if (auto d = f.finish(); !d) return d.error();
    r.count = r.hashes.size() / kHashItemSize;
    return r;
}

Result<GetCellsRequest> GetCellsRequest::decode(ByteView payload) noexcept {
    auto items = open_message(payload);
    if (!items) return items.error();
    GetCellsRequest r;
    Fields f{*items};
    f.into(r.request_id, &Fields::u64).into(r.count, &Fields::hash_count).into(r.cells, &Fields::cell_bitmap);
    if (auto d = f.finish(); !d) return d.error();
    return r;
}

Result<ResponseHead> ResponseHead::peek(ByteView payload) noexcept {
    auto items = open_message(payload);
    if (!items) return items.error();
    ResponseHead r;
    Fields f{*items};
    f.into(r.request_id, &Fields::u64).into(r.items, &Fields::item_count);
    if (auto d = f.finish(); !d) return d.error();
    return r;
}

Result<ResponseHead> ResponseHead::peek(uint64_t version, MessageId id, ByteView payload) noexcept {
    if (role_of(version, static_cast<uint64_t>(id)) != MessageRole::kResponse) return MessageError::kWrongMessage;
    if (id == MessageId::kReceipts && version >= kEth70) {
        auto items = open_message(payload);
        if (!items) return items.error();
        ResponseHead r;
        bool last_block_incomplete = false;
        Fields f{*items};
        f.into(r.request_id, &Fields::u64)
            .into(last_block_incomplete, &Fields::flag)
            .into(r.items, &Fields::item_count);
        if (auto d = f.finish(); !d) return d.error();
        return r;
    }
    if (id == MessageId::kCells) {
        auto items = open_message(payload);
        if (!items) return items.error();
        ResponseHead r;
        size_t hashes = 0;
        CellBitmap cells{};
        Fields f{*items};
        f.into(r.request_id, &Fields::u64)
            .into(hashes, &Fields::hash_count)
            .into(r.items, &Fields::item_count)
            .into(cells, &Fields::cell_bitmap);
        if (auto d = f.finish(); !d) return d.error();
        return r;
    }
    return peek(payload);
}

void encode_empty_reply(Bytes& out, uint64_t request_id) {
    std::array<uint8_t, 2 * rlp::kMaxHeaderLength + 1> buf;
    uint8_t* p = rlp::write_list_header(buf.data(), rlp::length(request_id) + 1);
    p = rlp::write_uint(p, request_id);
    *p++ = 0xc0;
    out.insert(out.end(), buf.data(), p);
}

void encode_empty_receipts70(Bytes& out, uint64_t request_id) {
    std::array<uint8_t, 2 * rlp::kMaxHeaderLength + 2> buf;
    uint8_t* p = rlp::write_list_header(buf.data(), rlp::length(request_id) + 2);
    p = rlp::write_uint(p, request_id);
    *p++ = 0x80;  // lastBlockIncomplete = false
    *p++ = 0xc0;
    out.insert(out.end(), buf.data(), p);
}

void encode_unavailable_block_access_lists(Bytes& out, uint64_t request_id, size_t count) {
    const size_t payload = rlp::length(request_id) + rlp::length_of_list(count);
    std::array<uint8_t, 3 * rlp::kMaxHeaderLength> prefix;
    uint8_t* p = rlp::write_list_header(prefix.data(), payload);
    p = rlp::write_uint(p, request_id);
    p = rlp::write_list_header(p, count);
    out.reserve(out.size() + rlp::length_of_list(payload));
    out.insert(out.end(), prefix.data(), p);
    out.insert(out.end(), count, uint8_t{0x80});
}

void encode_empty_cells(Bytes& out, uint64_t request_id) {
    constexpr size_t kBitmap = 1 + CellBitmap{}.size();  // 90 followed by 16 zero bytes
    std::array<uint8_t, 2 * rlp::kMaxHeaderLength + 2 + kBitmap> buf{};
    uint8_t* p = rlp::write_list_header(buf.data(), rlp::length(request_id) + 2 + kBitmap);
    p = rlp::write_uint(p, request_id);
    *p++ = 0xc0;  // no transaction hashes
    *p++ = 0xc0;  // no cell groups
    *p++ = static_cast<uint8_t>(0x80 + CellBitmap{}.size());
    p += CellBitmap{}.size();  // buf is zero-filled: the empty bitmap
    out.insert(out.end(), buf.data(), p);
}

Result<MessageId> answer_empty(uint64_t version, MessageId request, ByteView payload, Bytes& out) {
    if (role_of(version, static_cast<uint64_t>(request)) != MessageRole::kEmptyAnsweredRequest) {
        return MessageError::kWrongMessage;
    }
    switch (request) {
        case MessageId::kGetBlockBodies:
        case MessageId::kGetPooledTransactions: {
            auto r = HashListRequest::decode(payload);
            if (!r) return r.error();
            out.clear();
            encode_empty_reply(out, r->request_id);
            return request == MessageId::kGetBlockBodies ? MessageId::kBlockBodies : MessageId::kPooledTransactions;
        }
        case MessageId::kGetReceipts:
            if (version >= kEth70) {
                auto r = GetReceiptsRequest70::decode(payload);
                if (!r) return r.error();
                out.clear();
                encode_empty_receipts70(out, r->request_id);
            } else {
                auto r = HashListRequest::decode(payload);
                if (!r) return r.error();
                out.clear();
                encode_empty_reply(out, r->request_id);
            }
            return MessageId::kReceipts;
        case MessageId::kGetBlockAccessLists: {
            auto r = HashListRequest::decode(payload);
            if (!r) return r.error();
            out.clear();
            encode_unavailable_block_access_lists(out, r->request_id, std::min(r->count, kMaxBlockAccessListsServed));
            return MessageId::kBlockAccessLists;
        }
        case MessageId::kGetCells: {
            auto r = GetCellsRequest::decode(payload);
            if (!r) return r.error();
            out.clear();
            encode_empty_cells(out, r->request_id);
            return MessageId::kCells;
        }
        default:
            return MessageError::kWrongMessage;
    }
}

// ---- BlockRangeUpdate ---------------------------------------------------------------------------

void BlockRangeUpdate::encode(Bytes& out) const {
    const size_t payload = rlp::length(earliest) + rlp::length(latest) + kHashLength;
    rlp::encode_header(out, {true, payload});
    rlp::encode(out, earliest);
    rlp::encode(out, latest);
    rlp::encode(out, latest_hash);
}

Result<BlockRangeUpdate> BlockRangeUpdate::decode(ByteView payload) noexcept {
    auto items = open_message(payload);
    if (!items) return items.error();
    BlockRangeUpdate u;
    Fields f{*items};
    f.into(u.earliest, &Fields::u64).into(u.latest, &Fields::u64).into(u.latest_hash, &Fields::hash);
    if (auto r = f.finish(); !r) return r.error();
    return u;
}

Result<void> BlockRangeUpdate::validate() const noexcept {
    if (earliest > latest) return MessageError::kEarliestAfterLatest;
    if (std::all_of(latest_hash.begin(), latest_hash.end(), [](uint8_t b) { return b == 0; })) {
        return MessageError::kZeroLatestHash;
    }
    return {};
}

}  // namespace headerd::eth
