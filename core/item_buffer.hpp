#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/bytes.hpp"

namespace headerd {

// A caller-owned, reusable buffer of consecutive items (header RLP, hashes): the items' bytes
// back to back in `bytes`, and the end offset of item i in `ends[i]`. Readers append to it;
// clear() keeps the capacity so a reused buffer reaches zero heap allocations in steady state.
struct ItemBuffer {
    Bytes bytes;
    std::vector<size_t> ends;

    void clear() noexcept {
        bytes.clear();
        ends.clear();
    }
    size_t size() const noexcept { return ends.size(); }
    bool empty() const noexcept { return ends.empty(); }
    ByteView item(size_t i) const noexcept {
        const size_t begin = i == 0 ? 0 : ends[i - 1];
        return ByteView{bytes}.subspan(begin, ends[i] - begin);
    }
    // Appends one item (copying its bytes).
    void push(ByteView b) {
        append(bytes, b);
        ends.push_back(bytes.size());
    }
};

}  // namespace headerd
