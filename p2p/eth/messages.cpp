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

// Allocation-free RLP writers for the BlockHeaders prefix.
uint8_t* put_be(uint8_t* p, uint64_t v, size_t n) noexcept {
    for (size_t i = n; i > 0; --i) *p++ = static_cast<uint8_t>(v >> (8 * (i - 1)));
    return p;
}
size_t be_length(uint64_t v) noexcept {
    size_t n = 0;
    for (; v != 0; v >>= 8) ++n;
    return n;
}
uint8_t* put_list_header(uint8_t* p, size_t payload) noexcept {
    if (payload < 56) {
        *p++ = static_cast<uint8_t>(0xc0 + payload);
        return p;
    }
    const size_t n = be_length(payload);
    *p++ = static_cast<uint8_t>(0xf7 + n);
    return put_be(p, payload, n);
}
uint8_t* put_uint(uint8_t* p, uint64_t v) noexcept {
    if (v == 0) {
        *p++ = 0x80;
    } else if (v < 0x80) {
        *p++ = static_cast<uint8_t>(v);
    } else {
        const size_t n = be_length(v);
        *p++ = static_cast<uint8_t>(0x80 + n);
        p = put_be(p, v, n);
    }
    return p;
}

// The envelope of every eth/66+ request-id message whose body is one list: [request id, [item...]].
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
            return 18;
        default:
            return 0;
    }
}

bool is_message_of(uint64_t version, uint64_t id) noexcept {
    if (id >= message_space(version)) return false;
    // GetNodeData/NodeData (0x0d/0x0e) went away in eth/67; 0x0b/0x0c were never assigned.
    return id < 0x0b || id > 0x0e;
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
        default:
            return "unknown";
    }
}

std::optional<MessageId> empty_reply_id(MessageId request) noexcept {
    switch (request) {
        case MessageId::kGetBlockBodies:
            return MessageId::kBlockBodies;
        case MessageId::kGetReceipts:
            return MessageId::kReceipts;
        case MessageId::kGetPooledTransactions:
            return MessageId::kPooledTransactions;
        default:
            return std::nullopt;
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
    p = put_list_header(p, outer);
    p = put_uint(p, request_id);
    p = put_list_header(p, headers_bytes);
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
    auto envelope = open_id_and_list(payload);
    if (!envelope) return envelope.error();
    HashListRequest r;
    r.request_id = envelope->request_id;
    for (ByteView rest = envelope->list; !rest.empty(); ++r.count) {
        auto hash = rlp::decode_hash(rest);
        if (!hash) return hash.error();
    }
    return r;
}

Result<ResponseHead> ResponseHead::peek(ByteView payload) noexcept {
    auto envelope = open_id_and_list(payload);
    if (!envelope) return envelope.error();
    ResponseHead r;
    r.request_id = envelope->request_id;
    for (ByteView rest = envelope->list; !rest.empty(); ++r.items) {
        if (auto item = rlp::next_item(rest); !item) return item.error();
    }
    return r;
}

void encode_empty_reply(Bytes& out, uint64_t request_id) {
    rlp::encode_header(out, {true, rlp::length(request_id) + 1});
    rlp::encode(out, request_id);
    out.push_back(0xc0);
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
