#pragma once

// The root of a Merkle Patricia trie (Ethereum's yellow paper, appendix D) over a list whose i-th
// value is stored under the key rlp(i): the transactions, receipts and withdrawals roots of a block
// header. Only the root is built; no node is kept. Why our own and not a library: no Debian 12
// package offers one for C++ (docs/history.md, "Verification").

#include <span>

#include "core/bytes.hpp"

namespace headerd {

// keccak256(rlp("")): the root of a trie with no entries (a block without transactions).
extern const Hash32 kEmptyTrieRoot;

// Root of the trie mapping rlp(i) to values[i] for every i. Each value is the bytes stored in the
// leaf: a legacy transaction's or receipt's RLP list, a typed one's type byte and payload (EIP-2718),
// a withdrawal's RLP list. An empty list gives kEmptyTrieRoot.
Hash32 ordered_trie_root(std::span<const ByteView> values);

}  // namespace headerd
