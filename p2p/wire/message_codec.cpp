#include "p2p/wire/message_codec.hpp"

#include <algorithm>

#include <snappy.h>

#include "core/rlp.hpp"
#include "p2p/wire/base_protocol.hpp"

namespace headerd::p2p {

Result<ByteView> encode_frame_data(uint64_t id, ByteView payload, bool compress, Bytes& buf) {
    if (payload.size() > kMaxSendSize) return SnappyError::kSendTooLarge;
    const size_t id_length = rlp::length(id);
    const size_t max = id_length + (compress ? snappy::MaxCompressedLength(payload.size()) : payload.size());
    if (buf.size() < max) buf.resize(max);
    // The id is written in place, in front of where the payload goes (rlp::encode would append).
    uint8_t* out = buf.data();
    rlp::write_uint(out, id);
    size_t n = payload.size();
    if (compress) {
        snappy::RawCompress(reinterpret_cast<const char*>(payload.data()), payload.size(),
                            reinterpret_cast<char*>(out + id_length), &n);
    } else if (!payload.empty()) {
        std::copy(payload.begin(), payload.end(), out + id_length);
    }
    return ByteView{out, id_length + n};
}

namespace {

// The varint of snappy's length preamble (little-endian base 128).
uint8_t* write_varint(uint8_t* out, size_t v) {
    while (v >= 0x80) {
        *out++ = static_cast<uint8_t>(v | 0x80);
        v >>= 7;
    }
    *out++ = static_cast<uint8_t>(v);
    return out;
}

size_t varint_length(size_t v) {
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        ++n;
    }
    return n;
}

// A literal element's tag: lengths 1..60 in the tag byte, longer ones in 1 to 4 bytes after it.
uint8_t* write_literal_tag(uint8_t* out, size_t length) {
    const size_t n = length - 1;
    if (n < 60) {
        *out++ = static_cast<uint8_t>(n << 2);
        return out;
    }
    uint8_t bytes = 0;
    for (size_t v = n; v > 0; v >>= 8) ++bytes;
    *out++ = static_cast<uint8_t>((59 + bytes) << 2);
    for (uint8_t i = 0; i < bytes; ++i) *out++ = static_cast<uint8_t>(n >> (8 * i));
    return out;
}

}  // namespace

Result<CompressedBody> compress_body(ByteView body, Bytes& buf) {
    auto block = snappy_compress(body, buf);
    if (!block) return block.error();
    return CompressedBody{block->subspan(varint_length(body.size())), body.size()};
}

Result<ByteView> encode_spliced_frame_data(uint64_t id, ByteView prefix, const CompressedBody& body, Bytes& buf) {
    const size_t length = prefix.size() + body.length;
    if (length > kMaxSendSize) return SnappyError::kSendTooLarge;
    const size_t max = rlp::length(id) + 5 + (prefix.empty() ? 0 : 5 + prefix.size()) + body.elements.size();
    if (buf.size() < max) buf.resize(max);
    uint8_t* out = rlp::write_uint(buf.data(), id);
    out = write_varint(out, length);
    if (!prefix.empty()) {
        out = write_literal_tag(out, prefix.size());
        out = std::copy(prefix.begin(), prefix.end(), out);
    }
    out = std::copy(body.elements.begin(), body.elements.end(), out);
    return ByteView{buf.data(), static_cast<size_t>(out - buf.data())};
}

Result<Message> decode_frame_data(ByteView frame_data, bool compressed, Bytes& buf, size_t max_size) noexcept {
    ByteView rest = frame_data;
    auto id = decode_message_id(rest);
    if (!id) return id.error();
    if (!compressed || *id == kDisconnectId) {
        if (rest.size() > max_size) return SnappyError::kTooLarge;
        return Message{*id, rest};
    }
    auto payload = snappy_decompress(rest, buf, max_size);
    if (!payload) return payload.error();
    return Message{*id, *payload};
}

}  // namespace headerd::p2p
