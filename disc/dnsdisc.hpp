#pragma once

// DNS node lists (EIP-1459, devp2p dnsdisc.md), the sans-I/O part: the enrtree:// URL, the four
// entry types a tree is made of, the check that an entry is the one its name asks for, and the
// builder that turns ENRs and links into a signed tree (the TXT records a zone serves).
//
// A tree lives under a domain. The domain's TXT record is the signed root
//     enrtree-root:v1 e=<enr-root hash> l=<link-root hash> seq=<n> sig=<base64url 65 bytes>
// and every other entry sits at <hash>.<domain>, where <hash> is base32 (no padding) of the first
// 16 bytes of keccak256 of the entry's text: a branch "enrtree-branch:<h1>,<h2>,...", a link to
// another tree "enrtree://<base32 compressed key>@<domain>", or a leaf "enr:<record>". Only the root
// is signed; every other entry is authenticated by its name, so a resolver on the way can withhold
// entries but not change them. See docs/discovery.md ("DNS discovery").

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <variant>
#include <vector>

#include "core/bytes.hpp"
#include "core/result.hpp"
#include "disc/enr.hpp"
#include "p2p/rlpx/secp256k1.hpp"

namespace headerd::disc {

// The longest entry text accepted. An entry is one TXT record that must fit a 512-byte UDP DNS
// answer (the spec's rule); geth's trees stay below it (a full branch of 18 children is 500
// characters, a 300-byte ENR 404), so this refuses nothing a conforming tree holds.
inline constexpr size_t kMaxEntryTextSize = 512;
// Children per branch the builder writes: geth's maxChildren (its expression 300 / 16 * (13 / 8)
// evaluates to 18 in integer arithmetic). Kept equal so that a tree built here has the same
// hashes as geth's dnsdisc.MakeTree of the same records and links.
inline constexpr size_t kMaxBranchChildren = 18;
// An entry's name: base32 of the first 16 bytes of its keccak256 (26 characters).
inline constexpr size_t kHashAbbrevSize = 16;
// A hash in a root or branch may be shortened to as few as 12 bytes, and is at most 32 (geth's
// minHashLength and the digest size); the entry must then start with those bytes.
inline constexpr size_t kMinHashSize = 12;
inline constexpr size_t kMaxHashSize = 32;

inline constexpr std::string_view kRootPrefix = "enrtree-root:v1";
inline constexpr std::string_view kLinkPrefix = "enrtree://";
inline constexpr std::string_view kBranchPrefix = "enrtree-branch:";
inline constexpr std::string_view kEnrPrefix = "enr:";

enum class DnsDiscError {
    kBadUrl = 1,     // not enrtree://<key>@<domain>
    kBadKey,         // the key of a URL or link is not base32 of a compressed secp256k1 point
    kBadDomain,      // empty, above 253 characters, or a label that is empty, long or not [A-Za-z0-9_-]
    kTooLong,        // entry text above kMaxEntryTextSize
    kUnknownEntry,   // none of the prefixes enrtree-root:v1, enrtree-branch:, enrtree://, enr:
    kBadRoot,        // not "enrtree-root:v1 e=H l=H seq=N sig=S" (one space apart, seq decimal)
    kBadHash,        // a hash in a root or branch that is not base32 of 12 to 32 bytes
    kBadSignature,   // the root's signature is not 65 bytes, or not by the tree's key
    kHashMismatch,   // the entry's text does not hash to the name it was fetched from
    kNoRoot,         // no TXT record at the tree's domain is a root
    kNoEntry,        // no TXT record at a hash name is an entry
    kSeqRollback,    // a root whose seq is lower than one already seen for that tree
    kLinkInEnrTree,  // a link below the root's e= (links belong under l=)
    kEnrInLinkTree,  // an ENR below the root's l=
    kKeyConflict,    // a link names a domain already known with another key
};

const std::error_category& dnsdisc_category() noexcept;
std::error_code make_error_code(DnsDiscError e) noexcept;

// A tree's location: its domain and the key that signs its root. As URL: enrtree://KEY@DOMAIN.
struct LinkEntry {
    std::string domain;
    rlpx::PublicKey key;

    std::string url() const;  // also the entry's text inside a link subtree
    friend bool operator==(const LinkEntry&, const LinkEntry&) = default;
};

struct RootEntry {
    std::string enr_root;   // hash of the ENR subtree's top entry
    std::string link_root;  // hash of the link subtree's top entry
    uint64_t seq{0};
    rlpx::Signature signature{};  // r || s || v over signing_hash()

    // "enrtree-root:v1 e=... l=... seq=N": what the signature covers.
    std::string unsigned_text() const;
    std::string text() const;  // unsigned_text() + " sig=" + base64url(signature)
    Hash32 signing_hash() const;
};

struct BranchEntry {
    std::vector<std::string> children;  // hashes; a branch may be empty (an empty tree)

    std::string text() const;
};

// A leaf is the verified record itself.
using Entry = std::variant<BranchEntry, LinkEntry, Enr>;

// enrtree://KEY@DOMAIN: kBadUrl, kBadKey, kBadDomain.
Result<LinkEntry> parse_url(std::string_view url) noexcept;

// The root's syntax only (kTooLong, kBadRoot, kBadHash, kBadSignature for a signature that is not
// base64url of 65 bytes); parse_root_signed also checks that `key` made the signature.
Result<RootEntry> parse_root(std::string_view text) noexcept;
Result<RootEntry> parse_root_signed(std::string_view text, const rlpx::PublicKey& key) noexcept;

// A branch, link or leaf (kTooLong, kUnknownEntry, kBadHash, the errors of parse_url, and for a
// leaf the EnrError of Enr::from_text). A root is kUnknownEntry here: it is never named by a hash.
Result<Entry> parse_entry(std::string_view text) noexcept;
// parse_entry of the text fetched from HASH.domain, after checking that it is the entry HASH
// names: `hash` must be base32 of 12 to 32 bytes (kBadHash) that keccak256(text) starts with
// (kHashMismatch). The hash is checked first, so a mismatching entry is refused as such whatever
// else is wrong with it.
Result<Entry> parse_entry_at(std::string_view text, std::string_view hash) noexcept;

// The name of an entry: base32 of the first 16 bytes of keccak256(text).
std::string entry_hash(std::string_view text);
std::string entry_text(const Entry& entry);

// A hash as roots and branches may write it: base32 without padding of 12 to 32 bytes (the unused
// low bits of its last character ignored, since a shortened hash is a prefix of the full text).
bool is_valid_hash(std::string_view hash) noexcept;
// A DNS name this code will query: at most 253 characters, labels of 1 to 63 characters from
// [A-Za-z0-9_-], no leading or trailing dot.
bool is_valid_domain(std::string_view domain) noexcept;

// A signed tree as a zone serves it.
struct DnsTree {
    std::string url;  // enrtree://KEY@DOMAIN of the signing key
    RootEntry root;
    // Every TXT record: DOMAIN -> the root's text, HASH.DOMAIN -> an entry's text.
    std::map<std::string, std::string> records;
};

// Builds and signs the tree of `enrs` (leaves sorted by node id) and `links` (enrtree:// URLs), as
// geth's dnsdisc.MakeTree followed by Tree.Sign: branches of up to kMaxBranchChildren, a subtree
// of one entry being that entry itself and an empty one an empty branch. Errors: a link that
// parse_url refuses, kBadDomain for `domain`.
Result<DnsTree> make_tree(std::span<const Enr> enrs, std::span<const std::string> links, uint64_t seq,
                          const rlpx::PrivateKey& key, std::string_view domain);

}  // namespace headerd::disc

template <>
struct std::is_error_code_enum<headerd::disc::DnsDiscError> : std::true_type {};
