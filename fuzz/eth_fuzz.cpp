// libFuzzer target for every p2p/eth decoder of peer bytes; the first input byte picks one (and for
// the version-dependent ones the second picks the version and message), including the asking side's
// decoder of BlockBodies and Receipts replies. Decoders must return an
// error or a value, never crash; a decoded request must re-encode to something that decodes to the
// same request, and every empty answer must be a well-formed response of its version.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iterator>

#include "core/chain_config.hpp"
#include "p2p/eth/history.hpp"
#include "p2p/eth/messages.hpp"
#include "p2p/eth/status.hpp"
#include "p2p/wire/base_protocol.hpp"
#include "p2p/wire/message_codec.hpp"

using namespace headerd;

namespace {

constexpr eth::MessageId kEmptyAnswered[] = {eth::MessageId::kGetBlockBodies, eth::MessageId::kGetPooledTransactions,
                                             eth::MessageId::kGetReceipts, eth::MessageId::kGetBlockAccessLists,
                                             eth::MessageId::kGetCells};
constexpr eth::MessageId kResponses[] = {eth::MessageId::kBlockHeaders,       eth::MessageId::kBlockBodies,
                                         eth::MessageId::kPooledTransactions, eth::MessageId::kReceipts,
                                         eth::MessageId::kBlockAccessLists,   eth::MessageId::kCells};

// The versions headerd offers, 68..72, picked by a byte.
uint64_t version_of(uint8_t b) noexcept { return eth::kEth68 + b % 5; }

// answer_empty either fails and leaves `out` alone, or writes a response of that version that
// peeks back with no item (at most 1024 unavailable access lists).
void check_answer_empty(uint8_t pick, ByteView payload) {
    const uint64_t version = version_of(pick);
    const eth::MessageId request = kEmptyAnswered[(pick / 5) % std::size(kEmptyAnswered)];
    Bytes out = {0xee};
    auto reply = eth::answer_empty(version, request, payload, out);
    if (!reply) {
        if (out.size() != 1 || out[0] != 0xee) std::abort();
        return;
    }
    if (eth::role_of(version, static_cast<uint64_t>(request)) != eth::MessageRole::kEmptyAnsweredRequest) std::abort();
    auto head = eth::ResponseHead::peek(version, *reply, out);
    if (!head) std::abort();
    const size_t max_items = *reply == eth::MessageId::kBlockAccessLists ? eth::kMaxBlockAccessListsServed : 0;
    if (head->items > max_items) std::abort();
}

// The version-aware peek refuses ids that are not responses of the version, and agrees with the
// plain one for every response shaped [id, [item...]].
void check_peek(uint8_t pick, ByteView payload) {
    const uint64_t version = version_of(pick);
    const eth::MessageId id = kResponses[(pick / 5) % std::size(kResponses)];
    auto head = eth::ResponseHead::peek(version, id, payload);
    if (eth::role_of(version, static_cast<uint64_t>(id)) != eth::MessageRole::kResponse) {
        if (head) std::abort();
        return;
    }
    if (id == eth::MessageId::kCells || (id == eth::MessageId::kReceipts && version >= eth::kEth70)) return;
    auto plain = eth::ResponseHead::peek(payload);
    if (head.has_value() != plain.has_value()) std::abort();
    if (head && (plain->request_id != head->request_id || plain->items != head->items)) std::abort();
}

// A BlockBodies or Receipts reply the asking side decodes (headerd get, load) agrees with the
// tracker's peek on its id and item count, and every item is a list.
void check_history_reply(uint8_t pick, ByteView payload) {
    const uint64_t version = version_of(pick);
    const eth::MessageId id = (pick / 5) % 2 == 0 ? eth::MessageId::kBlockBodies : eth::MessageId::kReceipts;
    auto reply = eth::decode_history_reply(version, id, payload);
    if (!reply) return;
    auto head = eth::ResponseHead::peek(version, id, payload);
    if (!head || head->request_id != reply->request_id || head->items != reply->items.size()) std::abort();
    for (ByteView item : reply->items) {
        if (item.empty() || item[0] < 0xc0) std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const ByteView in{data + 1, size - 1};
    switch (data[0] % 13) {
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
        case 9:
            if (!in.empty()) check_answer_empty(in[0], in.subspan(1));
            break;
        case 10:
            if (!in.empty()) {
                // A Status that does not decode is a protocol breach, never a subprotocol error.
                auto check =
                    eth::check_status(version_of(in[0]), in.subspan(1), mainnet_config(), 24'000'000, 1'770'000'000);
                if (!check && check.error().code.category() != eth::status_category() &&
                    check.error().reason != p2p::DisconnectReason::kProtocolBreach) {
                    std::abort();
                }
            }
            break;
        case 11:
            if (!in.empty()) check_peek(in[0], in.subspan(1));
            break;
        case 12:
            if (!in.empty()) check_history_reply(in[0], in.subspan(1));
            break;
    }
    return 0;
}
