#include "core/block_header.hpp"

#include <algorithm>
#include <cstring>
#include <span>
#include <string>

#include "core/keccak.hpp"
#include "core/rlp.hpp"

namespace headerd {
namespace {

class HeaderCategory final : public std::error_category {
  public:
    const char* name() const noexcept override { return "header"; }
    std::string message(int ev) const override {
        switch (static_cast<HeaderError>(ev)) {
            case HeaderError::kTruncated:
                return "header truncated";
            case HeaderError::kTrailingBytes:
                return "trailing bytes after header";
            case HeaderError::kNotAList:
                return "header is not an RLP list";
            case HeaderError::kTooFewFields:
                return "header has fewer than 15 fields";
            case HeaderError::kInvalidFieldCount:
                return "header field count matches no layout (18 or 19 fields)";
            case HeaderError::kTooManyFields:
                return "header has more than 21 fields";
            case HeaderError::kWrongFieldSize:
                return "header hash, address, bloom or nonce of the wrong size";
            case HeaderError::kLeadingZero:
                return "header integer with a leading zero byte";
            case HeaderError::kIntegerOverflow:
                return "header integer too large for its field";
            case HeaderError::kUnexpectedList:
                return "header field is a list where a string is expected";
            case HeaderError::kNonCanonicalLength:
                return "header contains a non-canonical RLP length";
        }
        return "unknown header error";
    }
};

// Field-level failures come from the rlp decoders; they are reported in the header category.
std::error_code from_rlp(std::error_code ec) noexcept {
    switch (static_cast<rlp::DecodeError>(ec.value())) {
        case rlp::DecodeError::kInputTooShort:
        case rlp::DecodeError::kLengthOverflow:
            return HeaderError::kTruncated;
        case rlp::DecodeError::kTrailingBytes:
            return HeaderError::kTrailingBytes;
        case rlp::DecodeError::kLeadingZeroInLength:
        case rlp::DecodeError::kNonCanonicalSize:
        case rlp::DecodeError::kNonCanonicalSingleByte:
            return HeaderError::kNonCanonicalLength;
        case rlp::DecodeError::kLeadingZeroInInteger:
            return HeaderError::kLeadingZero;
        case rlp::DecodeError::kIntegerOverflow:
            return HeaderError::kIntegerOverflow;
        case rlp::DecodeError::kUnexpectedList:
        case rlp::DecodeError::kTooDeep:  // not produced by the decoders used here
            return HeaderError::kUnexpectedList;
        case rlp::DecodeError::kUnexpectedString:
            return HeaderError::kNotAList;
        case rlp::DecodeError::kUnexpectedLength:
            return HeaderError::kWrongFieldSize;
    }
    return HeaderError::kTruncated;
}

// Reads header fields in order from the list payload. Running out of fields is reported as
// `missing`, which the caller raises from kTooFewFields to kInvalidFieldCount once the required
// fields are read.
class FieldReader {
  public:
    explicit FieldReader(ByteView payload) noexcept : in_(payload) {}

    bool done() const noexcept { return in_.empty(); }
    void set_missing(HeaderError e) noexcept { missing_ = e; }

    std::error_code fixed(std::span<uint8_t> out) noexcept {
        if (in_.empty()) return missing_;
        auto s = rlp::decode_string(in_);
        if (!s) return from_rlp(s.error());
        if (s->size() != out.size()) return HeaderError::kWrongFieldSize;
        std::copy(s->begin(), s->end(), out.begin());
        return {};
    }
    std::error_code u64(uint64_t& v) noexcept {
        if (in_.empty()) return missing_;
        auto r = rlp::decode_uint64(in_);
        if (!r) return from_rlp(r.error());
        v = *r;
        return {};
    }
    std::error_code u256(U256& v) noexcept {
        if (in_.empty()) return missing_;
        auto r = rlp::decode_u256(in_);
        if (!r) return from_rlp(r.error());
        v = *r;
        return {};
    }
    std::error_code bytes(Bytes& v) noexcept {
        if (in_.empty()) return missing_;
        auto s = rlp::decode_string(in_);
        if (!s) return from_rlp(s.error());
        v.assign(s->begin(), s->end());
        return {};
    }

  private:
    ByteView in_;
    HeaderError missing_{HeaderError::kTooFewFields};
};

size_t payload_length(const BlockHeader& h) noexcept {
    constexpr size_t kHashLength = 33;  // 0xa0 + 32 bytes
    size_t n = 5 * kHashLength;         // parent, ommers, state, transactions, receipts
    n += rlp::length(ByteView{h.coinbase});
    n += rlp::length(ByteView{h.logs_bloom});
    n += rlp::length(h.difficulty);
    n += rlp::length(h.number) + rlp::length(h.gas_limit) + rlp::length(h.gas_used) + rlp::length(h.timestamp);
    n += rlp::length(ByteView{h.extra_data});
    n += kHashLength + rlp::length(ByteView{h.nonce});
    const size_t fields = h.field_count();
    if (fields >= 16) n += rlp::length(h.base_fee_per_gas.value_or(U256{0}));
    if (fields >= 17) n += kHashLength;
    if (fields >= 20) {
        n += rlp::length(h.blob_gas_used.value_or(0)) + rlp::length(h.excess_blob_gas.value_or(0)) + kHashLength;
    }
    if (fields >= 21) n += kHashLength;
    return n;
}

}  // namespace

const std::error_category& header_category() noexcept {
    static const HeaderCategory category;
    return category;
}

std::error_code make_error_code(HeaderError e) noexcept { return {static_cast<int>(e), header_category()}; }

size_t BlockHeader::field_count() const noexcept {
    if (requests_hash) return 21;
    if (blob_gas_used || excess_blob_gas || parent_beacon_block_root) return 20;
    if (withdrawals_root) return 17;
    if (base_fee_per_gas) return 16;
    return 15;
}

Result<BlockHeader> decode_block_header(ByteView rlp) noexcept {
    auto payload = rlp::decode_list(rlp);
    if (!payload) return from_rlp(payload.error());
    if (!rlp.empty()) return HeaderError::kTrailingBytes;

    FieldReader r{*payload};
    BlockHeader h;
    if (auto ec = r.fixed(h.parent_hash)) return ec;
    if (auto ec = r.fixed(h.ommers_hash)) return ec;
    if (auto ec = r.fixed(h.coinbase)) return ec;
    if (auto ec = r.fixed(h.state_root)) return ec;
    if (auto ec = r.fixed(h.transactions_root)) return ec;
    if (auto ec = r.fixed(h.receipts_root)) return ec;
    if (auto ec = r.fixed(h.logs_bloom)) return ec;
    if (auto ec = r.u256(h.difficulty)) return ec;
    if (auto ec = r.u64(h.number)) return ec;
    if (auto ec = r.u64(h.gas_limit)) return ec;
    if (auto ec = r.u64(h.gas_used)) return ec;
    if (auto ec = r.u64(h.timestamp)) return ec;
    if (auto ec = r.bytes(h.extra_data)) return ec;
    if (auto ec = r.fixed(h.mix_hash)) return ec;
    if (auto ec = r.fixed(h.nonce)) return ec;
    if (r.done()) return h;

    // Every optional field below is present only if its layout's previous fields are.
    if (auto ec = r.u256(h.base_fee_per_gas.emplace())) return ec;
    if (r.done()) return h;
    if (auto ec = r.fixed(h.withdrawals_root.emplace())) return ec;
    if (r.done()) return h;

    // Cancun added three fields at once: 18 or 19 fields is no layout.
    r.set_missing(HeaderError::kInvalidFieldCount);
    if (auto ec = r.u64(h.blob_gas_used.emplace())) return ec;
    if (auto ec = r.u64(h.excess_blob_gas.emplace())) return ec;
    if (auto ec = r.fixed(h.parent_beacon_block_root.emplace())) return ec;
    if (r.done()) return h;
    if (auto ec = r.fixed(h.requests_hash.emplace())) return ec;
    if (!r.done()) return HeaderError::kTooManyFields;
    return h;
}

size_t encoded_length(const BlockHeader& h) noexcept { return rlp::length_of_list(payload_length(h)); }

void encode(Bytes& out, const BlockHeader& h) {
    const size_t payload = payload_length(h);
    rlp::encode_header(out, {true, payload});
    rlp::encode(out, h.parent_hash);
    rlp::encode(out, h.ommers_hash);
    rlp::encode(out, ByteView{h.coinbase});
    rlp::encode(out, h.state_root);
    rlp::encode(out, h.transactions_root);
    rlp::encode(out, h.receipts_root);
    rlp::encode(out, ByteView{h.logs_bloom});
    rlp::encode(out, h.difficulty);
    rlp::encode(out, h.number);
    rlp::encode(out, h.gas_limit);
    rlp::encode(out, h.gas_used);
    rlp::encode(out, h.timestamp);
    rlp::encode(out, ByteView{h.extra_data});
    rlp::encode(out, h.mix_hash);
    rlp::encode(out, ByteView{h.nonce});
    const size_t fields = h.field_count();
    if (fields >= 16) rlp::encode(out, h.base_fee_per_gas.value_or(U256{0}));
    if (fields >= 17) rlp::encode(out, h.withdrawals_root.value_or(Hash32{}));
    if (fields >= 20) {
        rlp::encode(out, h.blob_gas_used.value_or(0));
        rlp::encode(out, h.excess_blob_gas.value_or(0));
        rlp::encode(out, h.parent_beacon_block_root.value_or(Hash32{}));
    }
    if (fields >= 21) rlp::encode(out, h.requests_hash.value_or(Hash32{}));
}

Hash32 header_hash(ByteView header_rlp) noexcept { return keccak256(header_rlp); }

Result<HeaderPeek> peek_header(ByteView header_rlp) noexcept {
    auto payload = rlp::decode_list(header_rlp);
    if (!payload) return from_rlp(payload.error());
    if (!header_rlp.empty()) return HeaderError::kTrailingBytes;

    ByteView in = *payload;
    // Fast path: every real header starts with the same fixed-size items (parent hash, ommers hash,
    // 20-byte coinbase, three roots, 256-byte bloom), so their item headers sit at fixed offsets and
    // the number is two items after the bloom. Checking those bytes in place reads the same items
    // the general walk below does, and accepts and rejects the same inputs.
    constexpr size_t kBloomEnd = 33 + 33 + 21 + 33 * 3 + 3 + 256;
    if (in.size() > kBloomEnd && in[0] == 0xa0 && in[33] == 0xa0 && in[66] == 0x94 && in[87] == 0xa0 &&
        in[120] == 0xa0 && in[153] == 0xa0 && in[186] == 0xb9 && in[187] == 0x01 && in[188] == 0x00) {
        HeaderPeek peek{};
        std::memcpy(peek.parent_hash.data(), in.data() + 1, 32);
        ByteView rest = in.subspan(kBloomEnd);
        auto difficulty = rlp::next_item(rest);
        if (!difficulty) return from_rlp(difficulty.error());
        if (rest.empty()) return HeaderError::kTooFewFields;
        auto number = rlp::decode_uint64(rest);
        if (!number) return from_rlp(number.error());
        peek.number = *number;
        return peek;
    }
    if (in.empty()) return HeaderError::kTooFewFields;
    auto parent = rlp::decode_hash(in);
    if (!parent) return from_rlp(parent.error());
    // Skip ommers hash, coinbase, state/transactions/receipts roots, bloom and difficulty.
    for (int i = 0; i < 7; ++i) {
        if (in.empty()) return HeaderError::kTooFewFields;
        auto item = rlp::next_item(in);
        if (!item) return from_rlp(item.error());
    }
    if (in.empty()) return HeaderError::kTooFewFields;
    auto number = rlp::decode_uint64(in);
    if (!number) return from_rlp(number.error());
    return HeaderPeek{*parent, *number};
}

}  // namespace headerd
