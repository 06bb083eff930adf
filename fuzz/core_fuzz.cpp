// libFuzzer target for every core decoder that reads peer or disk bytes. The first input byte picks
// the decoder so one corpus covers them all; each decoder must return an error, never crash, and a
// successful header decode must re-encode to the same bytes.

#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "core/block_header.hpp"
#include "core/chain_config.hpp"
#include "core/era1.hpp"
#include "core/forkid.hpp"
#include "core/rlp.hpp"

using namespace headerd;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const uint8_t which = data[0];
    const ByteView in{data + 1, size - 1};
    switch (which % 6) {
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
    }
    return 0;
}
