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

// A snappy block cut in two (docs/wire.md, "Compressed replies kept"): a block is its uncompressed
// length (a varint) and then a series of elements, literals and copies, where a copy reaches back
// only into what the block decoded before it. So the elements of `body` compressed on their own,
// behind any prefix, still decode to `body`: a reply whose body was compressed once can be sent
// again behind a new prefix (a request id, a list header) without compressing the body again.
struct CompressedBody {
    ByteView elements;  // snappy elements of the body: its compressed block without the length varint
    size_t length{0};   // the body's uncompressed length
};

// Compresses `body` into `buf` (resized up when too small, never down) and returns its elements.
// kSendTooLarge above kMaxSendSize.
Result<CompressedBody> compress_body(ByteView body, Bytes& buf);

// Writes msg-id ‖ the snappy block of payload `prefix ‖ body` into `buf` (resized up when too small,
// never down): the length varint, `prefix` as one literal, then the body's elements as they are.
// kSendTooLarge when the payload is above kMaxSendSize.
Result<ByteView> encode_spliced_frame_data(uint64_t id, ByteView prefix, const CompressedBody& body, Bytes& buf);

// Splits frame data into id and payload, inflating into `buf` when `compressed` (refusing a
// declared size above max_size before inflating; an uncompressed payload above max_size is
// SnappyError::kTooLarge as well). A Disconnect (id 0x01) payload is returned as it arrived:
// peers send it compressed or not, and decode_disconnect tries both.
Result<Message> decode_frame_data(ByteView frame_data, bool compressed, Bytes& buf,
                                  size_t max_size = kMaxUncompressedSize) noexcept;

}  // namespace headerd::p2p
