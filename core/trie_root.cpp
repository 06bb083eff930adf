#include "core/trie_root.hpp"

#include <algorithm>
#include <vector>

#include "core/keccak.hpp"
#include "core/rlp.hpp"

namespace headerd {

const Hash32 kEmptyTrieRoot = keccak256(Bytes{0x80});

namespace {

struct Item {
    std::vector<uint8_t> nibbles;  // the key, 4 bits per element
    ByteView value;
};

Bytes node(std::span<const Item> items, size_t depth);

Bytes as_list(const Bytes& payload) {
    Bytes out;
    out.reserve(rlp::length_of_list(payload.size()));
    rlp::encode_header(out, {true, payload.size()});
    append(out, payload);
    return out;
}

// A child as its parent holds it: the node itself when its RLP is shorter than 32 bytes, its hash
// otherwise.
void append_reference(Bytes& out, const Bytes& child) {
    if (child.size() < 32) {
        append(out, child);
    } else {
        rlp::encode(out, keccak256(child));
    }
}

// The hex-prefix encoding of a key's nibbles, flagged as a leaf's or an extension's.
Bytes hex_prefix(std::span<const uint8_t> nibbles, bool leaf) {
    Bytes out;
    const bool odd = nibbles.size() % 2 == 1;
    const auto flag = static_cast<uint8_t>((leaf ? 2 : 0) + (odd ? 1 : 0));
    size_t i = 0;
    if (odd) {
        out.push_back(static_cast<uint8_t>(flag << 4 | nibbles[0]));
        i = 1;
    } else {
        out.push_back(static_cast<uint8_t>(flag << 4));
    }
    for (; i < nibbles.size(); i += 2) {  // an even number of nibbles is left
        out.push_back(static_cast<uint8_t>(nibbles[i] << 4 | nibbles[i + 1]));
    }
    return out;
}

// A branch over items whose keys agree on their first `depth` nibbles.
Bytes branch(std::span<const Item> items, size_t depth) {
    Bytes payload;
    size_t i = 0;
    const Item* here = nullptr;  // the item whose key ends at this branch (its value slot)
    if (items[0].nibbles.size() == depth) here = &items[i++];
    for (uint8_t nibble = 0; nibble < 16; ++nibble) {
        size_t j = i;
        while (j < items.size() && items[j].nibbles[depth] == nibble) ++j;
        if (j == i) {
            payload.push_back(0x80);
        } else {
            append_reference(payload, node(items.subspan(i, j - i), depth + 1));
        }
        i = j;
    }
    if (here != nullptr) {
        rlp::encode(payload, here->value);
    } else {
        payload.push_back(0x80);
    }
    return as_list(payload);
}

// The node over items (sorted, keys distinct, at least one) whose keys agree on their first
// `depth` nibbles: a leaf for one item, an extension over their longer common prefix, or a branch.
Bytes node(std::span<const Item> items, size_t depth) {
    const auto& first = items.front().nibbles;
    if (items.size() == 1) {
        Bytes payload;
        rlp::encode(payload, hex_prefix(std::span(first).subspan(depth), true));
        rlp::encode(payload, items.front().value);
        return as_list(payload);
    }
    const auto& last = items.back().nibbles;
    size_t common = depth;
    while (common < first.size() && common < last.size() && first[common] == last[common]) ++common;
    if (common == depth) return branch(items, depth);
    Bytes payload;
    rlp::encode(payload, hex_prefix(std::span(first).subspan(depth, common - depth), false));
    append_reference(payload, branch(items, common));
    return as_list(payload);
}

}  // namespace

Hash32 ordered_trie_root(std::span<const ByteView> values) {
    if (values.empty()) return kEmptyTrieRoot;
    std::vector<Item> items(values.size());
    Bytes key;
    for (size_t i = 0; i < values.size(); ++i) {
        key.clear();
        rlp::encode(key, static_cast<uint64_t>(i));
        items[i].nibbles.reserve(key.size() * 2);
        for (uint8_t b : key) {
            items[i].nibbles.push_back(static_cast<uint8_t>(b >> 4));
            items[i].nibbles.push_back(static_cast<uint8_t>(b & 0x0f));
        }
        items[i].value = values[i];
    }
    std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
        const size_t n = std::min(a.nibbles.size(), b.nibbles.size());
        for (size_t k = 0; k < n; ++k) {
            if (a.nibbles[k] != b.nibbles[k]) return a.nibbles[k] < b.nibbles[k];
        }
        return a.nibbles.size() < b.nibbles.size();
    });
    return keccak256(node(items, 0));
}

}  // namespace headerd
