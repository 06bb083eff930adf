// libFuzzer target for every p2p/eth decoder of peer bytes; the first input byte picks one.
// Decoders must return an error or a value, never crash; a decoded request must re-encode to
// something that decodes to the same request.

#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "p2p/eth/messages.hpp"
#include "p2p/wire/base_protocol.hpp"
#include "p2p/wire/message_codec.hpp"

using namespace headerd;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const ByteView in{data + 1, size - 1};
    switch (data[0] % 9) {
        case 0:
            (void)p2p::Hello::decode(in);
            break;
        case 1:
            (void)p2p::decode_disconnect(in);
            break;
        case 2: {
            Bytes buf;
            (void)p2p::decode_frame_data(in, true, buf, size_t{1} << 20);
            break;
        }
        case 3:
            (void)eth::StatusMessage68::decode(in);
            break;
        case 4:
            (void)eth::StatusMessage69::decode(in);
            break;
        case 5: {
            auto req = eth::GetBlockHeadersRequest::decode(in);
            if (req) {
                Bytes out;
                req->encode(out);
                auto again = eth::GetBlockHeadersRequest::decode(out);
                if (!again || !(*again == *req)) std::abort();
            }
            break;
        }
        case 6: {
            // The tracker's envelope peek must agree with the full decode whenever that succeeds.
            auto full = eth::BlockHeadersMessage::decode(in);
            auto head = eth::ResponseHead::peek(in);
            if (full && (!head || head->request_id != full->request_id || head->items != full->headers.size())) {
                std::abort();
            }
            break;
        }
        case 7:
            (void)eth::HashListRequest::decode(in);
            break;
        case 8: {
            auto update = eth::BlockRangeUpdate::decode(in);
            if (update) (void)update->validate();
            break;
        }
    }
    return 0;
}
