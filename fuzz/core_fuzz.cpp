// libFuzzer target for every core decoder that reads peer or disk bytes. The first input byte picks
// the decoder so one corpus covers them all; each decoder must return an error, never crash, a
// successful header decode must re-encode to the same bytes, and receipts must survive their
// eth/69 round trips. One more selector checks the in-place
// RLP writers against the appending encoders and the decoder.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "core/block_body.hpp"
#include "core/block_header.hpp"
#include "core/chain_config.hpp"
#include "core/era1.hpp"
#include "core/forkid.hpp"
#include "core/rlp.hpp"
#include "core/trie_root.hpp"

using namespace headerd;

namespace {

uint64_t take_u64(ByteView& in) noexcept {
    uint64_t v = 0;
    const size_t n = std::min<size_t>(in.size(), 8);
    for (size_t i = 0; i < n; ++i) v = (v << 8) | in[i];
    in = in.subspan(n);
    return v;
}

// write_uint must equal encode(uint64_t) and the string encoding of the value's minimal big-endian
// bytes (an independent path), and decode back; write_header must equal encode_header and decode
// back to the same kind and length.
void check_writers(ByteView in) {
    const uint64_t v = take_u64(in);
    const uint64_t n = take_u64(in);
    std::array<uint8_t, rlp::kMaxHeaderLength> buf;

    const ByteView written{buf.data(), rlp::write_uint(buf.data(), v)};
    Bytes ref;
    rlp::encode(ref, v);
    if (written.size() != rlp::length(v) || !std::equal(written.begin(), written.end(), ref.begin(), ref.end())) {
        std::abort();
    }
    Bytes be(8);
    store_be64(be.data(), v);
    const auto first = std::find_if(be.begin(), be.end(), [](uint8_t b) { return b != 0; });
    Bytes as_string;
    rlp::encode(as_string, ByteView{be}.subspan(static_cast<size_t>(first - be.begin())));
    if (!std::equal(written.begin(), written.end(), as_string.begin(), as_string.end())) std::abort();
    ByteView back = written;
    auto decoded = rlp::decode_uint64(back);
    if (!decoded || *decoded != v || !back.empty()) std::abort();

    for (bool list : {false, true}) {
        const ByteView header{buf.data(), rlp::write_header(buf.data(), {list, n})};
        ref.clear();
        rlp::encode_header(ref, {list, n});
        if (header.size() != rlp::header_length(n) ||
            !std::equal(header.begin(), header.end(), ref.begin(), ref.end())) {
            std::abort();
        }
        // decode_header also wants the payload present; check the prefix alone by hand.
        if (n < 56) {
            if (header.size() != 1 || header[0] != (list ? 0xc0 : 0x80) + n) std::abort();
        } else {
            const size_t len_len = header.size() - 1;
            if (header[0] != (list ? 0xf7 : 0xb7) + len_len || header[1] == 0) std::abort();
            uint64_t len = 0;
            for (size_t i = 1; i < header.size(); ++i) len = (len << 8) | header[i];
            if (len != n) std::abort();
        }
    }
    if (n < 4096) {
        Bytes list(rlp::length_of_list(n), 0x01);
        rlp::write_list_header(list.data(), n);
        ByteView whole{list};
        auto payload = rlp::decode_list(whole);
        if (!payload || payload->size() != n || !whole.empty()) std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const uint8_t which = data[0];
    const ByteView in{data + 1, size - 1};
    switch (which % 9) {
        case 0: {
            (void)rlp::validate(in);
            ByteView v = in;
            while (!v.empty() && rlp::next_item(v)) {
            }
            break;
        }
        case 1: {
            auto h = decode_block_header(in);
            auto peek = peek_header(in);
            if (h) {
                Bytes out;
                encode(out, *h);
                if (out.size() != in.size() || !std::equal(out.begin(), out.end(), in.begin())) std::abort();
                if (!peek || peek->number != h->number || peek->parent_hash != h->parent_hash) std::abort();
            }
            break;
        }
        case 2:
            (void)decode_chain_config(in);
            break;
        case 3: {
            ByteView v = in;
            (void)decode_fork_id(v);
            break;
        }
        case 4: {
            auto archive = era1::Archive::parse(in);
            if (archive) {
                Bytes out;
                for (size_t i = 0; i < archive->count(); ++i) (void)archive->header(i, out);
                (void)era1::verify_accumulator(*archive);
            }
            break;
        }
        case 5: {
            Bytes out;
            (void)era1::decode_snappy_frames(in, out);
            break;
        }
        case 6:
            check_writers(in);
            break;
        case 7: {
            // A body and a consensus-form receipt list: roots computed without a crash; a receipt
            // list that parses survives the eth/69 round trip (the bloom is recomputed, so only
            // the eth/69 forms must agree).
            if (auto body = parse_body(in)) {
                std::vector<ByteView> values;
                for (ByteView tx : body->transactions) values.push_back(*trie_value(tx));
                (void)ordered_trie_root(values);
            }
            Bytes eth69, back, again;
            if (parse_receipts(in)) {
                if (!receipts_to_eth69(in, eth69) || !receipts_from_eth69(eth69, back) ||
                    !receipts_to_eth69(back, again) || again != eth69) {
                    std::abort();
                }
            }
            break;
        }
        case 8: {
            // An eth/69 receipt list: what decodes comes back byte for byte.
            Bytes consensus, eth69;
            if (receipts_from_eth69(in, consensus)) {
                if (!receipts_to_eth69(consensus, eth69) ||
                    !std::equal(eth69.begin(), eth69.end(), in.begin(), in.end())) {
                    std::abort();
                }
            }
            break;
        }
    }
    return 0;
}
