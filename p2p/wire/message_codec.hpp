#pragma once

// Frame data of one devp2p message: msg-id (an RLP integer, never compressed) followed by the
// payload, snappy-compressed once both Hellos are exchanged (p2p >= 5). The RLPx frame codec
// (p2p/rlpx/frame.hpp) encrypts and MACs exactly these bytes.

#include <cstddef>
#include <cstdint>

#include "core/bytes.hpp"
#include "core/result.hpp"
#include "p2p/wire/snappy_codec.hpp"

namespace headerd::p2p {

struct Message {
    uint64_t id{0};
    ByteView payload;  // uncompressed, except for Disconnect (see decode_frame_data)
};

// Writes msg-id ‖ payload (compressed when `compress`) into `buf`, which is resized up when too
// small and never down, and returns the frame data (a view starting at buf.data()). The payload is
// compressed straight into place behind the id: no intermediate copy. SnappyError::kSendTooLarge
// above kMaxSendSize.
Result<ByteView> encode_frame_data(uint64_t id, ByteView payload, bool compress, Bytes& buf);

// Splits frame data into id and payload, inflating into `buf` when `compressed` (refusing a
// declared size above max_size before inflating; an uncompressed payload above max_size is
// SnappyError::kTooLarge as well). A Disconnect (id 0x01) payload is returned as it arrived:
// peers send it compressed or not, and decode_disconnect tries both.
Result<Message> decode_frame_data(ByteView frame_data, bool compressed, Bytes& buf,
                                  size_t max_size = kMaxUncompressedSize) noexcept;

}  // namespace headerd::p2p
