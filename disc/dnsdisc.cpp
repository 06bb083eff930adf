#include "disc/dnsdisc.hpp"

#include <algorithm>
#include <charconv>

#include "core/keccak.hpp"
#include "disc/text_codec.hpp"

namespace headerd::disc {
namespace {

class DnsDiscCategory final : public std::error_category {
  public:
    const char* name() const noexcept override { return "dnsdisc"; }
    std::string message(int c) const override {
        switch (static_cast<DnsDiscError>(c)) {
            case DnsDiscError::kBadUrl:
                return "not enrtree://<base32 key>@<domain>";
            case DnsDiscError::kBadKey:
                return "tree key is not base32 of a compressed secp256k1 public key";
            case DnsDiscError::kBadDomain:
                return "not a valid DNS name";
            case DnsDiscError::kTooLong:
                return "entry longer than 512 characters";
            case DnsDiscError::kUnknownEntry:
                return "unknown entry type";
            case DnsDiscError::kBadRoot:
                return "root is not 'enrtree-root:v1 e=<hash> l=<hash> seq=<n> sig=<signature>'";
            case DnsDiscError::kBadHash:
                return "hash is not base32 of 12 to 32 bytes";
            case DnsDiscError::kBadSignature:
                return "root signature invalid or not made by the tree's key";
            case DnsDiscError::kHashMismatch:
                return "entry does not match the hash it was fetched by";
            case DnsDiscError::kNoRoot:
                return "no enrtree-root:v1 TXT record";
            case DnsDiscError::kNoEntry:
                return "no tree entry in the TXT records";
            case DnsDiscError::kSeqRollback:
                return "root seq lower than one seen before (rollback)";
            case DnsDiscError::kLinkInEnrTree:
                return "link entry in the ENR subtree";
            case DnsDiscError::kEnrInLinkTree:
                return "ENR entry in the link subtree";
            case DnsDiscError::kKeyConflict:
                return "link names a known tree with another key";
        }
        return "unknown DNS discovery error";
    }
};

// Strips `prefix` from `text` when it starts with it.
bool consume(std::string_view& text, std::string_view prefix) noexcept {
    if (!text.starts_with(prefix)) return false;
    text.remove_prefix(prefix.size());
    return true;
}

// The next token up to a single space (or the end); false when there is no space and `last` is not
// set, or when the token is empty.
bool token(std::string_view& text, std::string_view& out, bool last) noexcept {
    const size_t space = text.find(' ');
    if (last) {
        if (space != std::string_view::npos) return false;
        out = text;
        text = {};
    } else {
        if (space == std::string_view::npos) return false;
        out = text.substr(0, space);
        text.remove_prefix(space + 1);
    }
    return !out.empty();
}

// A decimal seq in its one canonical spelling (no sign, no leading zero), since the signature
// covers the text as written.
std::optional<uint64_t> parse_seq(std::string_view s) noexcept {
    if (s.empty() || (s.size() > 1 && s[0] == '0')) return std::nullopt;
    if (!std::ranges::all_of(s, [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
    uint64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
    return v;
}

Result<BranchEntry> parse_branch(std::string_view body) noexcept {
    BranchEntry branch;
    if (body.empty()) return branch;  // an empty branch is the ENR root of an empty tree
    while (true) {
        const size_t comma = body.find(',');
        const std::string_view child = body.substr(0, comma);
        if (!is_valid_hash(child)) return make_error_code(DnsDiscError::kBadHash);
        branch.children.emplace_back(child);
        if (comma == std::string_view::npos) break;
        body.remove_prefix(comma + 1);
    }
    return branch;
}

std::string subdomain_of(const std::string& hash, std::string_view domain) { return hash + "." + std::string(domain); }

// geth's Tree.build: one entry is its own subtree; up to kMaxBranchChildren make one branch; more
// are cut into runs of kMaxBranchChildren, each built alone, and the subtrees built again. Every
// entry below the returned one is added to `records`; the caller adds the returned one.
std::string build(std::vector<std::string> texts, std::map<std::string, std::string>& records) {
    if (texts.size() == 1) return std::move(texts[0]);
    if (texts.size() <= kMaxBranchChildren) {
        BranchEntry branch;
        for (auto& text : texts) {
            branch.children.push_back(entry_hash(text));
            records[branch.children.back()] = std::move(text);
        }
        return branch.text();
    }
    std::vector<std::string> subtrees;
    for (size_t i = 0; i < texts.size(); i += kMaxBranchChildren) {
        const size_t end = std::min(texts.size(), i + kMaxBranchChildren);
        std::string sub =
            build({texts.begin() + static_cast<std::ptrdiff_t>(i), texts.begin() + static_cast<std::ptrdiff_t>(end)},
                  records);
        records[entry_hash(sub)] = sub;
        subtrees.push_back(std::move(sub));
    }
    return build(std::move(subtrees), records);
}

}  // namespace

const std::error_category& dnsdisc_category() noexcept {
    static const DnsDiscCategory category;
    return category;
}

std::error_code make_error_code(DnsDiscError e) noexcept { return {static_cast<int>(e), dnsdisc_category()}; }

std::string LinkEntry::url() const { return std::string(kLinkPrefix) + base32_encode(key.compressed()) + "@" + domain; }

std::string RootEntry::unsigned_text() const {
    return std::string(kRootPrefix) + " e=" + enr_root + " l=" + link_root + " seq=" + std::to_string(seq);
}

std::string RootEntry::text() const { return unsigned_text() + " sig=" + base64url_encode(signature); }

Hash32 RootEntry::signing_hash() const { return keccak256(as_bytes(unsigned_text())); }

std::string BranchEntry::text() const {
    std::string out(kBranchPrefix);
    for (size_t i = 0; i < children.size(); ++i) {
        if (i > 0) out += ',';
        out += children[i];
    }
    return out;
}

bool is_valid_hash(std::string_view hash) noexcept {
    // The shortest and longest spellings first, so that nothing long is decoded.
    if (hash.size() < (kMinHashSize * 8 + 4) / 5 || hash.size() > (kMaxHashSize * 8 + 4) / 5) return false;
    const auto bytes = base32_decode(hash, false);
    return bytes && bytes->size() >= kMinHashSize && bytes->size() <= kMaxHashSize;
}

bool is_valid_domain(std::string_view domain) noexcept {
    if (domain.empty() || domain.size() > 253) return false;
    size_t label = 0;
    for (char c : domain) {
        if (c == '.') {
            if (label == 0) return false;
            label = 0;
            continue;
        }
        const bool ok =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
        if (!ok || ++label > 63) return false;
    }
    return label != 0;
}

Result<LinkEntry> parse_url(std::string_view url) noexcept {
    if (!consume(url, kLinkPrefix)) return make_error_code(DnsDiscError::kBadUrl);
    const size_t at = url.find('@');
    if (at == std::string_view::npos) return make_error_code(DnsDiscError::kBadUrl);
    const std::string_view key_text = url.substr(0, at);
    const std::string_view domain = url.substr(at + 1);
    // 33 bytes are 53 characters; a longer text is refused before decoding.
    if (key_text.size() != (rlpx::kCompressedKeySize * 8 + 4) / 5) return make_error_code(DnsDiscError::kBadKey);
    const auto key_bytes = base32_decode(key_text);
    if (!key_bytes) return make_error_code(DnsDiscError::kBadKey);
    auto key = rlpx::PublicKey::from_compressed(*key_bytes);
    if (!key) return make_error_code(DnsDiscError::kBadKey);
    if (!is_valid_domain(domain)) return make_error_code(DnsDiscError::kBadDomain);
    return LinkEntry{std::string(domain), *key};
}

Result<RootEntry> parse_root(std::string_view text) noexcept {
    if (text.size() > kMaxEntryTextSize) return make_error_code(DnsDiscError::kTooLong);
    std::string_view e, l, seq, sig;
    if (!consume(text, kRootPrefix) || !consume(text, " e=") || !token(text, e, false) || !consume(text, "l=") ||
        !token(text, l, false) || !consume(text, "seq=") || !token(text, seq, false) || !consume(text, "sig=") ||
        !token(text, sig, true)) {
        return make_error_code(DnsDiscError::kBadRoot);
    }
    const auto n = parse_seq(seq);
    if (!n) return make_error_code(DnsDiscError::kBadRoot);
    if (!is_valid_hash(e) || !is_valid_hash(l)) return make_error_code(DnsDiscError::kBadHash);
    const auto signature = base64url_decode(sig);
    if (!signature || signature->size() != rlpx::kSignatureSize) return make_error_code(DnsDiscError::kBadSignature);
    RootEntry root{std::string(e), std::string(l), *n, {}};
    std::ranges::copy(*signature, root.signature.begin());
    return root;
}

Result<RootEntry> parse_root_signed(std::string_view text, const rlpx::PublicKey& key) noexcept {
    auto root = parse_root(text);
    if (!root) return root;
    // geth verifies r || s and ignores the recovery id; so does this.
    const ByteView rs{root->signature.data(), rlpx::kPlainSignatureSize};
    if (!rlpx::verify(rs, root->signing_hash(), key)) return make_error_code(DnsDiscError::kBadSignature);
    return root;
}

Result<Entry> parse_entry(std::string_view text) noexcept {
    if (text.size() > kMaxEntryTextSize) return make_error_code(DnsDiscError::kTooLong);
    if (text.starts_with(kLinkPrefix)) {
        auto link = parse_url(text);
        if (!link) return link.error();
        return Entry{std::move(*link)};
    }
    if (std::string_view body = text; consume(body, kBranchPrefix)) {
        auto branch = parse_branch(body);
        if (!branch) return branch.error();
        return Entry{std::move(*branch)};
    }
    if (text.starts_with(kEnrPrefix)) {
        auto enr = Enr::from_text(text);
        if (!enr) return enr.error();
        return Entry{std::move(*enr)};
    }
    return make_error_code(DnsDiscError::kUnknownEntry);
}

Result<Entry> parse_entry_at(std::string_view text, std::string_view hash) noexcept {
    if (!is_valid_hash(hash)) return make_error_code(DnsDiscError::kBadHash);
    const auto want = base32_decode(hash, false);
    const Hash32 have = keccak256(as_bytes(text));
    if (!want || !std::equal(want->begin(), want->end(), have.begin())) {
        return make_error_code(DnsDiscError::kHashMismatch);
    }
    return parse_entry(text);
}

std::string entry_hash(std::string_view text) {
    const Hash32 h = keccak256(as_bytes(text));
    return base32_encode(ByteView{h.data(), kHashAbbrevSize});
}

std::string entry_text(const Entry& entry) {
    struct Text {
        std::string operator()(const BranchEntry& b) const { return b.text(); }
        std::string operator()(const LinkEntry& l) const { return l.url(); }
        std::string operator()(const Enr& e) const { return e.text(); }
    };
    return std::visit(Text{}, entry);
}

Result<DnsTree> make_tree(std::span<const Enr> enrs, std::span<const std::string> links, uint64_t seq,
                          const rlpx::PrivateKey& key, std::string_view domain) {
    if (!is_valid_domain(domain)) return make_error_code(DnsDiscError::kBadDomain);
    std::vector<const Enr*> sorted;
    for (const Enr& enr : enrs) sorted.push_back(&enr);
    std::ranges::sort(sorted, [](const Enr* a, const Enr* b) { return a->node_id() < b->node_id(); });
    std::vector<std::string> leaves;
    for (const Enr* enr : sorted) leaves.push_back(enr->text());
    std::vector<std::string> link_texts;
    for (const std::string& url : links) {
        auto link = parse_url(url);
        if (!link) return link.error();
        link_texts.push_back(link->url());
    }

    std::map<std::string, std::string> by_hash;
    const std::string enr_top = build(std::move(leaves), by_hash);
    const std::string link_top = build(std::move(link_texts), by_hash);
    RootEntry root{entry_hash(enr_top), entry_hash(link_top), seq, {}};
    by_hash[root.enr_root] = enr_top;
    by_hash[root.link_root] = link_top;
    auto signature = rlpx::sign_recoverable(key, root.signing_hash());
    if (!signature) return signature.error();
    root.signature = *signature;

    DnsTree tree{LinkEntry{std::string(domain), key.public_key()}.url(), root, {}};
    tree.records[std::string(domain)] = root.text();
    for (auto& [hash, text] : by_hash) tree.records[subdomain_of(hash, domain)] = std::move(text);
    return tree;
}

}  // namespace headerd::disc
