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
