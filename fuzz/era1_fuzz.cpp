// libFuzzer target for .era1 archives (core/era1.cpp): the input is a whole archive file, as
// `headerd import` maps it. It drives Archive::parse (records, block index, tuples), the snappy
// framed decoding of every header, and the accumulator check.
//
// It asserts: parse returns an archive or an Era1Error, never crashes; a parsed archive holds 1..8192
// blocks numbered start, start+1, ... without overflow, with total difficulties that never decrease;
// a header that decompresses is one RLP list that decodes as a block header of its number (and
// re-encodes to the same bytes when it decodes fully); when verify_accumulator accepts the archive,
// every header decompresses, and the root recomputed here from keccak(header) and the total
// difficulties equals the stored one, and the variant given those hashes accepts it too.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "core/block_header.hpp"
#include "core/era1.hpp"

using namespace headerd;

namespace {

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "era1_fuzz: %s\n", what);
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    auto archive = era1::Archive::parse(ByteView{data, size});
    if (!archive) {
        if (archive.error().category() != era1::era1_category()) fail("parse failed with another error category");
        return 0;
    }
    const uint64_t count = archive->count();
    if (count == 0 || count > era1::kMaxBlocks) fail("an archive of 0 or more than 8192 blocks");
    if (archive->start_number() > UINT64_MAX - (count - 1)) fail("block numbers overflow");
    const auto entries = archive->entries();
    std::vector<Hash32> hashes;
    std::vector<U256> tds;
    bool all = true;
    Bytes out;
    for (size_t i = 0; i < count; ++i) {
        if (entries[i].number != archive->start_number() + i) fail("an entry with the wrong number");
        if (i > 0 && archive->total_difficulty(i) < archive->total_difficulty(i - 1)) fail("total difficulty fell");
        auto header = archive->header(i, out);
        if (!header) {
            all = false;
            continue;
        }
        auto peek = peek_header(*header);
        if (!peek || peek->number != archive->start_number() + i) fail("a header that is not its block");
        if (auto full = decode_block_header(*header)) {
            Bytes again;
            encode(again, *full);
            if (!std::equal(again.begin(), again.end(), header->begin(), header->end()))
                fail("a header re-encodes otherwise");
        }
        hashes.push_back(header_hash(*header));
        tds.push_back(archive->total_difficulty(i));
    }
    if (era1::verify_accumulator(*archive)) {
        if (!all) fail("accumulator accepted with a header that does not decompress");
        auto root = era1::accumulator_root(hashes, tds);
        if (!root || *root != archive->accumulator_root())
            fail("accepted accumulator differs from the recomputed root");
        if (!era1::verify_accumulator(*archive, hashes)) fail("the variant with hashes disagrees");
    }
    return 0;
}
