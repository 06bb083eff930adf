// DNS node lists (EIP-1459): the example zone of the spec (devp2p dnsdisc.md) read and its root
// verified, and its hashes made again by make_tree; trees made by make_tree read back whole
// (sync_tree) and one ENR at a time (DnsClient::next) through an in-memory resolver; links
// followed and link cycles ended; a new root picked up after the recheck interval; a seq
// rollback, a wrong hash, a bad signature and every kind of malformed entry refused with its own
// error and the name it came from; TXT answers with split strings joined. Every ENR made here has
// a loopback address.

#include "disc/dnsdisc.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "disc/dns_client.hpp"
#include "disc/dns_resolver.hpp"
#include "disc/text_codec.hpp"

namespace headerd::disc {
namespace {

// The example zone of devp2p dnsdisc.md, also geth's TestClientSyncTree, served at the domain "n".
// Its root is signed by the key of kExampleTreeUrl (the key in the spec's prose, AM5F..., is the
// key of the linked tree, not of this one).
constexpr std::string_view kExampleTreeUrl = "enrtree://AKPYQIUQIL7PSIACI32J7FGZW56E5FKHEFCCOFHILBIMW3M6LWXS2@n";
constexpr std::string_view kExampleRoot =
    "enrtree-root:v1 e=JWXYDBPXYWG6FX3GMDIBFA6CJ4 l=C7HRFPF3BLGF3YR4DY5KX3SMBE seq=1 "
    "sig=o908WmNp7LibOfPsr4btQwatZJ5URBr2ZAuxvK4UWHlsB9sUOTJQaGAlLPVAhM__XJesCHxLISo94z5Z2a463gA";
constexpr std::string_view kExampleLink =
    "enrtree://AM5FCQLWIZX2QFPNJAP7VUERCCRNGRHWZG3YYHIUV7BVDQ5FDPRT2@morenodes.example.org";
const std::map<std::string, std::string>& example_entries() {
    static const std::map<std::string, std::string> entries = {
        {"C7HRFPF3BLGF3YR4DY5KX3SMBE", std::string(kExampleLink)},
        {"JWXYDBPXYWG6FX3GMDIBFA6CJ4",
         "enrtree-branch:2XS2367YHAXJFGLZHVAWLQD4ZY,H4FHT4B454P6UXFD7JCYQ5PWDY,MHTDO6TMUBRIA2XWG5LUDACK24"},
        {"2XS2367YHAXJFGLZHVAWLQD4ZY",
         "enr:-"
         "HW4QOFzoVLaFJnNhbgMoDXPnOvcdVuj7pDpqRvh6BRDO68aVi5ZcjB3vzQRZH2IcLBGHzo8uUN3snqmgTiE56CH3AMBgmlkgnY0iXNlY3Ay"
         "NTZrMaECC2_24YYkYHEgdzxlSNKQEnHhuNAbNlMlWJxrJxbAFvA"},
        {"H4FHT4B454P6UXFD7JCYQ5PWDY",
         "enr:-"
         "HW4QAggRauloj2SDLtIHN1XBkvhFZ1vtf1raYQp9TBW2RD5EEawDzbtSmlXUfnaHcvwOizhVYLtr7e6vw7NAf6mTuoCgmlkgnY0iXNlY3Ay"
         "NTZrMaECjrXI8TLNXU0f8cthpAMxEshUyQlK-AM0PW2wfrnacNI"},
        {"MHTDO6TMUBRIA2XWG5LUDACK24",
         "enr:-HW4QLAYqmrwllBEnzWWs7I5Ev2IAs7x_dZlbYdRdMUx5EyKHDXp7AV5CkuPGUPdvbv1_"
         "Ms1CPfhcGCvSElSosZmyoqAgmlkgnY0iXNlY3Ay"
         "NTZrMaECriawHKWdDRk2xeZkrOXBQ0dfMFLHY4eENZwdufn1S1o"},
    };
    return entries;
}

// TXT records by name, as a zone would serve them; counts the lookups.
class MapResolver final : public TxtResolver {
  public:
    void add(const std::map<std::string, std::string>& records) {
        for (const auto& [name, text] : records) txt[name] = {text};
    }
    Result<std::vector<std::string>> lookup_txt(std::string_view name) override {
        ++lookups;
        const auto it = txt.find(std::string(name));
        if (it == txt.end()) return make_error_code(ResolveError::kNotFound);
        return it->second;
    }

    std::map<std::string, std::vector<std::string>> txt;
    size_t lookups = 0;
};

MapResolver example_resolver() {
    MapResolver r;
    r.txt["n"] = {std::string(kExampleRoot)};
    for (const auto& [hash, text] : example_entries()) r.txt[hash + ".n"] = {text};
    return r;
}

rlpx::PrivateKey key_of(uint8_t b) { return *rlpx::PrivateKey::from_bytes(Bytes(32, b)); }

const rlpx::PrivateKey& tree_key() {
    static const rlpx::PrivateKey key = key_of(0x77);
    return key;
}

// `count` records with loopback addresses (127.0.x.y) and distinct keys, from key byte `first`.
std::vector<Enr> loopback_enrs(size_t count, uint8_t first = 1) {
    std::vector<Enr> out;
    for (size_t i = 0; i < count; ++i) {
        const auto n = static_cast<uint8_t>(first + i);
        out.push_back(*EnrBuilder(i + 1).ip({127, 0, 0, n}).tcp(30303).udp(30303).sign(key_of(n)));
    }
    return out;
}

std::set<std::string> texts_of(const std::vector<Enr>& enrs) {
    std::set<std::string> out;
    for (const Enr& e : enrs) out.insert(e.text());
    return out;
}

DnsTree make(const std::vector<Enr>& enrs, const std::vector<std::string>& links, std::string_view domain,
             uint64_t seq = 1, const rlpx::PrivateKey& key = tree_key()) {
    auto tree = make_tree(enrs, links, seq, key, domain);
    EXPECT_TRUE(tree) << tree.error().message();
    return *tree;
}

// Pulls ENRs with next() until every one of `want` came, at most 3 calls per record (geth's
// checkIterator bound); returns those that never came.
std::set<std::string> missing_after_iterating(DnsClient& client, std::set<std::string> want) {
    const size_t max_calls = want.size() * 3;
    for (size_t i = 0; i < max_calls && !want.empty(); ++i) {
        auto got = client.next();
        EXPECT_TRUE(got) << got.error().message();
        if (!got || !*got) break;
        want.erase((*got)->text());
    }
    return want;
}

std::string root_text(std::string_view e, std::string_view l, uint64_t seq, const rlpx::PrivateKey& key) {
    RootEntry root{std::string(e), std::string(l), seq, {}};
    root.signature = *rlpx::sign_recoverable(key, root.signing_hash());
    return root.text();
}

TEST(DnsDisc, Base32RoundTripAndStrictness) {
    EXPECT_EQ(base32_encode(as_bytes("foobar")), "MZXW6YTBOI");
    EXPECT_EQ(base32_encode(as_bytes("f")), "MY");
    for (size_t n = 0; n < 40; ++n) {
        Bytes b(n);
        for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(i * 37 + n);
        const auto back = base32_decode(base32_encode(b));
        ASSERT_TRUE(back);
        EXPECT_EQ(*back, b);
    }
    EXPECT_FALSE(base32_decode("MZ"));                  // unused low bits not zero: a second spelling of "f"
    EXPECT_EQ(base32_decode("MZ", false), Bytes{'f'});  // as a shortened hash may have them
    EXPECT_FALSE(base32_decode("MY======"));            // padding
    EXPECT_FALSE(base32_decode("my"));                  // lower case is not the alphabet
    EXPECT_FALSE(base32_decode("MZXW6YTBO"));           // 9 characters are no whole number of bytes
}

TEST(DnsDisc, ExampleZoneRootVerifiesAndHashesMatch) {
    const auto location = parse_url(kExampleTreeUrl);
    ASSERT_TRUE(location);
    EXPECT_EQ(location->domain, "n");
    const auto root = parse_root_signed(kExampleRoot, location->key);
    ASSERT_TRUE(root) << root.error().message();
    EXPECT_EQ(root->enr_root, "JWXYDBPXYWG6FX3GMDIBFA6CJ4");
    EXPECT_EQ(root->link_root, "C7HRFPF3BLGF3YR4DY5KX3SMBE");
    EXPECT_EQ(root->seq, 1u);
    EXPECT_EQ(root->text(), kExampleRoot);

    for (const auto& [hash, text] : example_entries()) {
        EXPECT_EQ(entry_hash(text), hash);
        const auto entry = parse_entry_at(text, hash);
        ASSERT_TRUE(entry) << hash << ": " << entry.error().message();
        EXPECT_EQ(entry_text(*entry), text);
    }
    // The linked tree's key. (The spec's prose gives 0x049f88... as the key of this URL, but the
    // URL's base32 is 0x033a5141...: the prose is not checked.)
    const auto link = parse_url(kExampleLink);
    ASSERT_TRUE(link);
    EXPECT_EQ(base32_encode(link->key.compressed()), "AM5FCQLWIZX2QFPNJAP7VUERCCRNGRHWZG3YYHIUV7BVDQ5FDPRT2");
    EXPECT_EQ(link->domain, "morenodes.example.org");
    EXPECT_EQ(link->url(), kExampleLink);

    // Another key does not verify the root.
    EXPECT_EQ(parse_root_signed(kExampleRoot, link->key).error(), DnsDiscError::kBadSignature);
}

TEST(DnsDisc, BuilderMakesTheExampleHashes) {
    // geth's MakeTree of the example's records and link gives the example's e= and l=: the same
    // ordering (by node id) and the same branch shape.
    std::vector<Enr> enrs;
    for (const auto& [hash, text] : example_entries()) {
        if (text.starts_with("enr:")) enrs.push_back(*Enr::from_text(text));
    }
    const std::vector<std::string> links{std::string(kExampleLink)};
    const DnsTree tree = make(enrs, links, "n");
    EXPECT_EQ(tree.root.enr_root, "JWXYDBPXYWG6FX3GMDIBFA6CJ4");
    EXPECT_EQ(tree.root.link_root, "C7HRFPF3BLGF3YR4DY5KX3SMBE");
    for (const auto& [hash, text] : example_entries()) EXPECT_EQ(tree.records.at(hash + ".n"), text);
    EXPECT_EQ(tree.records.size(), example_entries().size() + 1);
    EXPECT_EQ(tree.url, (LinkEntry{"n", tree_key().public_key()}.url()));
}

TEST(DnsDisc, ClientSyncsTheExampleZone) {
    MapResolver r = example_resolver();
    DnsClient client(r);
    const auto tree = client.sync_tree(kExampleTreeUrl);
    ASSERT_TRUE(tree) << tree.error().message();
    EXPECT_EQ(tree->root.seq, 1u);
    EXPECT_EQ(tree->enrs.size(), 3u);
    ASSERT_EQ(tree->links.size(), 1u);
    EXPECT_EQ(tree->links[0].url(), kExampleLink);
}

TEST(DnsDisc, BuilderRoundTrip) {
    // 40 records: more than one branch holds (18), so the ENR subtree has two levels of branches.
    const auto enrs = loopback_enrs(40);
    const std::vector<std::string> links{std::string(kExampleLink),
                                         LinkEntry{"other.example", key_of(0x55).public_key()}.url()};
    const DnsTree tree = make(enrs, links, "nodes.test", 7);
    for (const auto& [name, text] : tree.records) {
        EXPECT_LE(text.size(), kMaxEntryTextSize) << name;
        if (name == "nodes.test") continue;
        EXPECT_EQ(name, entry_hash(text) + ".nodes.test");
        EXPECT_TRUE(parse_entry(text)) << name;
    }
    MapResolver r;
    r.add(tree.records);
    DnsClient client(r);
    const auto synced = client.sync_tree(tree.url);
    ASSERT_TRUE(synced) << synced.error().message();
    EXPECT_EQ(synced->root.seq, 7u);
    EXPECT_EQ(texts_of(synced->enrs), texts_of(enrs));
    EXPECT_EQ(synced->enrs.size(), enrs.size());
    std::set<std::string> got_links;
    for (const auto& l : synced->links) got_links.insert(l.url());
    EXPECT_EQ(got_links, std::set<std::string>(links.begin(), links.end()));

    // An empty tree: an empty branch on both sides.
    const DnsTree empty = make({}, {}, "empty.test");
    EXPECT_EQ(empty.records.at(empty.root.enr_root + ".empty.test"), "enrtree-branch:");
    MapResolver r2;
    r2.add(empty.records);
    DnsClient client2(r2);
    const auto synced2 = client2.sync_tree(empty.url);
    ASSERT_TRUE(synced2) << synced2.error().message();
    EXPECT_TRUE(synced2->enrs.empty());
    auto none = DnsClient(r2);
    ASSERT_TRUE(none.add_tree(empty.url));
    const auto next = none.next();
    ASSERT_TRUE(next);
    EXPECT_FALSE(*next);  // nothing to give, and it says so instead of spinning
}

TEST(DnsDisc, IteratorFindsEveryEnr) {
    const auto enrs = loopback_enrs(30);
    const DnsTree tree = make(enrs, {}, "n");
    MapResolver r;
    r.add(tree.records);
    DnsClient client(r, DnsClientConfig{.seed = 1});
    ASSERT_TRUE(client.add_tree(tree.url));
    // Each record once before any twice: 30 calls give the 30 records.
    std::set<std::string> seen;
    for (size_t i = 0; i < enrs.size(); ++i) {
        auto got = client.next();
        ASSERT_TRUE(got) << got.error().message();
        ASSERT_TRUE(*got);
        EXPECT_TRUE(seen.insert((*got)->text()).second);
    }
    EXPECT_EQ(seen, texts_of(enrs));
    // Then it starts again, from the cache: no lookup.
    const size_t lookups = r.lookups;
    auto again = client.next();
    ASSERT_TRUE(again && *again);
    EXPECT_EQ(r.lookups, lookups);
}

TEST(DnsDisc, IteratorFollowsLinks) {
    const auto enrs = loopback_enrs(40);
    const DnsTree t1 = make({enrs.begin(), enrs.begin() + 10}, {}, "t1");
    const DnsTree t2 = make({enrs.begin() + 10, enrs.end()}, {t1.url}, "t2");
    MapResolver r;
    r.add(t1.records);
    r.add(t2.records);
    DnsClient client(r, DnsClientConfig{.seed = 2});
    ASSERT_TRUE(client.add_tree(t2.url));
    EXPECT_TRUE(missing_after_iterating(client, texts_of(enrs)).empty());
    EXPECT_EQ(client.tree_count(), 2u);
}

TEST(DnsDisc, LinkCycleAndSharedChildrenTerminate) {
    // t1 links t2 and t2 links t1 (and itself): each domain is one tree, walked once.
    const auto enrs = loopback_enrs(6);
    const std::string url1 = LinkEntry{"t1", tree_key().public_key()}.url();
    const std::string url2 = LinkEntry{"t2", tree_key().public_key()}.url();
    const DnsTree t1 = make({enrs.begin(), enrs.begin() + 3}, {url2}, "t1");
    const DnsTree t2 = make({enrs.begin() + 3, enrs.end()}, {url1, url2}, "t2");
    MapResolver r;
    r.add(t1.records);
    r.add(t2.records);
    DnsClient client(r, DnsClientConfig{.seed = 3});
    ASSERT_TRUE(client.add_tree(url1));
    EXPECT_TRUE(missing_after_iterating(client, texts_of(enrs)).empty());
    EXPECT_EQ(client.tree_count(), 2u);

    // A branch that lists a leaf twice, and a second branch that lists the first and the leaf:
    // the leaf is visited once.
    const std::string leaf = enrs[0].text();
    const std::string inner = "enrtree-branch:" + entry_hash(leaf) + "," + entry_hash(leaf);
    const std::string top = "enrtree-branch:" + entry_hash(inner) + "," + entry_hash(leaf);
    const std::string no_links = "enrtree-branch:";
    MapResolver r2;
    r2.txt["d"] = {root_text(entry_hash(top), entry_hash(no_links), 1, tree_key())};
    for (const auto& text : {leaf, inner, top, no_links}) r2.txt[entry_hash(text) + ".d"] = {text};
    DnsClient client2(r2);
    const auto synced = client2.sync_tree(LinkEntry{"d", tree_key().public_key()}.url());
    ASSERT_TRUE(synced) << synced.error().message();
    EXPECT_EQ(synced->enrs.size(), 1u);
}

TEST(DnsDisc, SeqRollbackRejected) {
    const auto enrs = loopback_enrs(4);
    const DnsTree v5 = make(enrs, {}, "n", 5);
    const DnsTree v4 = make({enrs.begin(), enrs.begin() + 2}, {}, "n", 4);
    MapResolver r;
    r.add(v5.records);
    auto now = std::chrono::steady_clock::time_point{};
    DnsClient client(r, DnsClientConfig{.seed = 4, .now = [&now] { return now; }});
    ASSERT_TRUE(client.add_tree(v5.url));
    auto first = client.next();
    ASSERT_TRUE(first && *first);

    // The server now serves an older tree; at the next root check the client refuses it.
    r.add(v4.records);
    now += std::chrono::minutes(31);
    auto rolled = client.next();
    ASSERT_FALSE(rolled);
    EXPECT_EQ(rolled.error().error, DnsDiscError::kSeqRollback);
    EXPECT_EQ(rolled.error().name, "n");
    // A whole download through the same client refuses it too.
    auto synced = client.sync_tree(v4.url);
    ASSERT_FALSE(synced);
    EXPECT_EQ(synced.error().error, DnsDiscError::kSeqRollback);
    // The same seq again is no rollback.
    r.add(v5.records);
    EXPECT_TRUE(client.sync_tree(v5.url));
}

TEST(DnsDisc, IteratorPicksUpANewRoot) {
    // Seq 1 has 10 records; seq 2 adds 10 more. Before the recheck interval only the first 10 come;
    // after it, all 20 (geth's TestIteratorNodeUpdates).
    const auto enrs = loopback_enrs(20);
    const DnsTree v1 = make({enrs.begin(), enrs.begin() + 10}, {}, "n", 1);
    const DnsTree v2 = make(enrs, {}, "n", 2);
    MapResolver r;
    r.add(v1.records);
    auto now = std::chrono::steady_clock::time_point{};
    DnsClient client(r, DnsClientConfig{.seed = 6, .now = [&now] { return now; }});
    ASSERT_TRUE(client.add_tree(v1.url));
    const std::vector<Enr> first(enrs.begin(), enrs.begin() + 10);
    EXPECT_TRUE(missing_after_iterating(client, texts_of(first)).empty());
    r.txt.clear();
    r.add(v2.records);
    std::set<std::string> seen;
    for (int i = 0; i < 30; ++i) {
        auto got = client.next();
        ASSERT_TRUE(got && *got);
        seen.insert((*got)->text());
    }
    EXPECT_EQ(seen, texts_of(first));  // still the old root, from the cache
    now += std::chrono::minutes(30);
    EXPECT_TRUE(missing_after_iterating(client, texts_of(enrs)).empty());
}

TEST(DnsDisc, WrongHashRejected) {
    const auto enrs = loopback_enrs(3);
    DnsTree tree = make(enrs, {}, "n");
    // One leaf's name now holds another (valid, loopback) record.
    const std::string victim = entry_hash(enrs[1].text()) + ".n";
    tree.records[victim] = loopback_enrs(1, 100)[0].text();
    MapResolver r;
    r.add(tree.records);
    DnsClient client(r);
    const auto synced = client.sync_tree(tree.url);
    ASSERT_FALSE(synced);
    EXPECT_EQ(synced.error().error, DnsDiscError::kHashMismatch);
    EXPECT_EQ(synced.error().name, victim);
    EXPECT_NE(synced.error().message().find(victim), std::string::npos);
}

TEST(DnsDisc, BadSignatureRejected) {
    const DnsTree tree = make(loopback_enrs(2), {}, "n", 3);
    MapResolver r;
    r.add(tree.records);
    // Signed by another key than the URL's.
    const DnsTree other = make(loopback_enrs(2), {}, "n", 3, key_of(0x66));
    r.txt["n"] = {other.records.at("n")};
    DnsClient client(r);
    auto synced = client.sync_tree(tree.url);
    ASSERT_FALSE(synced);
    EXPECT_EQ(synced.error().error, DnsDiscError::kBadSignature);
    EXPECT_EQ(synced.error().name, "n");
    // The right key but a seq changed after signing.
    std::string tampered = tree.records.at("n");
    tampered.replace(tampered.find(" seq=3 "), 7, " seq=9 ");
    r.txt["n"] = {tampered};
    synced = client.sync_tree(tree.url);
    ASSERT_FALSE(synced);
    EXPECT_EQ(synced.error().error, DnsDiscError::kBadSignature);
}

TEST(DnsDisc, MalformedEntriesRejected) {
    const std::string key = base32_encode(tree_key().public_key().compressed());
    const std::string h = entry_hash("x");
    const struct {
        std::string text;
        std::error_code want;
    } cases[] = {
        {"hello", DnsDiscError::kUnknownEntry},
        {std::string(kExampleRoot), DnsDiscError::kUnknownEntry},  // a root has no hash name
        {"enrtree-branch:" + h + ",", DnsDiscError::kBadHash},
        {"enrtree-branch:," + h, DnsDiscError::kBadHash},
        {"enrtree-branch:ABCDEFGH", DnsDiscError::kBadHash},                 // 5 bytes: too short
        {"enrtree-branch:" + h + "1", DnsDiscError::kBadHash},               // '1' is not base32
        {"enrtree-branch:" + std::string(60, 'A'), DnsDiscError::kBadHash},  // above 32 bytes
        {"enrtree-branch:" + h + " ", DnsDiscError::kBadHash},
        {"enrtree://" + key, DnsDiscError::kBadUrl},
        {"enrtree://" + key + "@", DnsDiscError::kBadDomain},
        {"enrtree://" + key + "@a..b", DnsDiscError::kBadDomain},
        {"enrtree://" + key + "@a b", DnsDiscError::kBadDomain},
        {"enrtree://" + key + "@" + std::string(64, 'a'), DnsDiscError::kBadDomain},
        {"enrtree://AAAA@example.org", DnsDiscError::kBadKey},
        {"enrtree://" + std::string(53, 'A') + "@example.org", DnsDiscError::kBadKey},  // not on the curve
        {"enr:-----", EnrError::kBadText},
        {"enr:" + loopback_enrs(1)[0].text().substr(4) + "A", EnrError::kBadText},
        {"enrtree-branch:" + std::string(600, 'A'), DnsDiscError::kTooLong},
    };
    for (const auto& c : cases) {
        const auto entry = parse_entry(c.text);
        ASSERT_FALSE(entry) << c.text;
        EXPECT_EQ(entry.error(), c.want) << c.text << ": " << entry.error().message();
        EXPECT_FALSE(entry.error().message().empty());
    }
    EXPECT_TRUE(parse_entry("enrtree-branch:"));
    EXPECT_EQ(parse_entry_at("enrtree-branch:", "AAAA").error(), DnsDiscError::kBadHash);
    EXPECT_EQ(parse_entry_at("enrtree-branch:", h).error(), DnsDiscError::kHashMismatch);
    // A shortened hash (12 bytes, 20 characters) names the entry as well.
    const std::string full = entry_hash("enrtree-branch:");
    EXPECT_TRUE(parse_entry_at("enrtree-branch:", full.substr(0, 20)));

    const std::string sig = std::string(kExampleRoot.substr(kExampleRoot.find(" sig=")));
    const struct {
        std::string text;
        DnsDiscError want;
    } roots[] = {
        {"enrtree-root:v1 e=" + h + " l=" + h + " seq=1", DnsDiscError::kBadRoot},
        {"enrtree-root:v1 e=" + h + " l=" + h + " seq=01" + sig, DnsDiscError::kBadRoot},
        {"enrtree-root:v1 e=" + h + " l=" + h + " seq=-1" + sig, DnsDiscError::kBadRoot},
        {"enrtree-root:v1 e=" + h + " l=" + h + " seq=18446744073709551616" + sig, DnsDiscError::kBadRoot},
        {"enrtree-root:v1  e=" + h + " l=" + h + " seq=1" + sig, DnsDiscError::kBadRoot},
        {"enrtree-root:v1 e=" + h + " l=" + h + " seq=1" + sig + " ", DnsDiscError::kBadRoot},
        {"enrtree-root:v2 e=" + h + " l=" + h + " seq=1" + sig, DnsDiscError::kBadRoot},
        {"enrtree-root:v1 e=SHORT l=" + h + " seq=1" + sig, DnsDiscError::kBadHash},
        {"enrtree-root:v1 e=" + h + " l=" + h + " seq=1 sig=AAAA", DnsDiscError::kBadSignature},
        {"enrtree-root:v1 e=" + h + " l=" + h + " seq=1" + sig + std::string(400, 'A'), DnsDiscError::kTooLong},
    };
    for (const auto& c : roots) {
        const auto root = parse_root(c.text);
        ASSERT_FALSE(root) << c.text;
        EXPECT_EQ(root.error(), c.want) << c.text << ": " << root.error().message();
    }

    EXPECT_EQ(parse_url("enrtree:/" + key + "@x").error(), DnsDiscError::kBadUrl);
    EXPECT_EQ(parse_url("https://" + key + "@x").error(), DnsDiscError::kBadUrl);
}

TEST(DnsDisc, ClientErrorsNameTheFailingName) {
    const auto enrs = loopback_enrs(2);
    const std::string url = LinkEntry{"d", tree_key().public_key()}.url();
    const auto sync = [&](MapResolver& r) { return DnsClient(r).sync_tree(url); };

    MapResolver none;  // the domain does not exist
    auto got = sync(none);
    ASSERT_FALSE(got);
    EXPECT_EQ(got.error().name, "d");
    EXPECT_EQ(got.error().error, ResolveError::kNotFound);
    EXPECT_EQ(got.error().message(), "d: no such name (NXDOMAIN)");

    MapResolver no_root;
    no_root.txt["d"] = {"v=spf1 -all"};
    got = sync(no_root);
    ASSERT_FALSE(got);
    EXPECT_EQ(got.error().error, DnsDiscError::kNoRoot);

    // A link in the ENR subtree, an ENR in the link subtree, a name with no entry, a bad leaf.
    const std::string link = LinkEntry{"x.test", key_of(0x44).public_key()}.url();
    const std::string leaf = enrs[0].text();
    const std::string empty = "enrtree-branch:";
    const struct {
        std::string e, l;
        std::string stored;  // the text the hash name holds instead, if any
        std::error_code want;
    } cases[] = {
        {entry_hash(link), entry_hash(empty), "", DnsDiscError::kLinkInEnrTree},
        {entry_hash(empty), entry_hash(leaf), "", DnsDiscError::kEnrInLinkTree},
        {entry_hash(leaf), entry_hash(empty), "v=spf1 -all", DnsDiscError::kNoEntry},
        {entry_hash("enr:-----"), entry_hash(empty), "enr:-----", EnrError::kBadText},
    };
    for (const auto& c : cases) {
        MapResolver r;
        r.txt["d"] = {root_text(c.e, c.l, 1, tree_key())};
        for (const auto& text : {link, leaf, empty}) r.txt[entry_hash(text) + ".d"] = {text};
        if (!c.stored.empty()) r.txt[c.e + ".d"] = {c.stored};
        got = sync(r);
        ASSERT_FALSE(got) << c.want.message();
        EXPECT_EQ(got.error().error, c.want) << got.error().message();
        EXPECT_EQ(got.error().name, (c.want == DnsDiscError::kEnrInLinkTree ? c.l : c.e) + ".d");
    }

    // A bad entry is reported once by next() and dropped from the walk; the rest still comes.
    DnsTree tree = make(enrs, {}, "d");
    const std::string victim = entry_hash(enrs[0].text()) + ".d";
    tree.records[victim] = "enr:-----";
    MapResolver r;
    r.add(tree.records);
    DnsClient client(r, DnsClientConfig{.seed = 5});
    ASSERT_TRUE(client.add_tree(tree.url));
    size_t failures = 0;
    std::set<std::string> found;
    for (int i = 0; i < 10; ++i) {
        auto n = client.next();
        if (!n) {
            ++failures;
            EXPECT_EQ(n.error().name, victim);
            EXPECT_EQ(n.error().error, DnsDiscError::kHashMismatch);
        } else if (*n) {
            found.insert((*n)->text());
        }
    }
    EXPECT_EQ(found, std::set<std::string>{enrs[1].text()});
    EXPECT_GE(failures, 1u);

    // The same domain with two keys.
    DnsClient conflict(r);
    ASSERT_TRUE(conflict.add_tree(tree.url));
    const auto added = conflict.add_tree(LinkEntry{"d", key_of(0x45).public_key()}.url());
    ASSERT_FALSE(added);
    EXPECT_EQ(added.error().error, DnsDiscError::kKeyConflict);
    EXPECT_EQ(DnsClient(r).add_tree("enrtree://nope").error().error, DnsDiscError::kBadUrl);
}

TEST(DnsDisc, CacheSavesLookups) {
    const DnsTree tree = make(loopback_enrs(5), {}, "n");
    MapResolver r;
    r.add(tree.records);
    DnsClient client(r);
    ASSERT_TRUE(client.sync_tree(tree.url));
    const size_t first = r.lookups;
    EXPECT_EQ(first, tree.records.size());
    ASSERT_TRUE(client.sync_tree(tree.url));
    EXPECT_EQ(r.lookups, first + 1);  // the root only

    DnsClient uncached(r, DnsClientConfig{.cache_limit = 0, .seed = std::nullopt});
    r.lookups = 0;
    ASSERT_TRUE(uncached.sync_tree(tree.url));
    ASSERT_TRUE(uncached.sync_tree(tree.url));
    EXPECT_EQ(r.lookups, 2 * tree.records.size());
}

// A DNS answer (RFC 1035) with one TXT record of the given character-strings and an A record.
Bytes answer_with(const std::vector<std::string>& strings) {
    Bytes m = {0x12, 0x34, 0x81, 0x80, 0, 1, 0, 2, 0, 0, 0, 0};  // id, flags, 1 question, 2 answers
    const Bytes name = {1, 'n', 0};
    append(m, name);
    append(m, Bytes{0, 16, 0, 1});  // TXT IN
    Bytes rdata;
    for (const auto& s : strings) {
        rdata.push_back(static_cast<uint8_t>(s.size()));
        append(rdata, as_bytes(s));
    }
    append(m, Bytes{0xc0, 12, 0, 16, 0, 1, 0, 0, 0, 60, static_cast<uint8_t>(rdata.size() >> 8),
                    static_cast<uint8_t>(rdata.size())});
    append(m, rdata);
    append(m, Bytes{0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 1});  // A 127.0.0.1
    return m;
}

TEST(DnsDisc, TxtAnswerStringsJoined) {
    const std::string a(200, 'a');
    const std::string b(150, 'b');
    const auto txt = txt_records_of_answer(answer_with({"enr:", a, b}));
    ASSERT_TRUE(txt) << txt.error().message();
    ASSERT_EQ(txt->size(), 1u);
    EXPECT_EQ((*txt)[0], "enr:" + a + b);

    Bytes broken = answer_with({"abc"});
    broken[broken.size() - 16 - 4] = 9;  // the string's length byte now runs past the record
    EXPECT_EQ(txt_records_of_answer(broken).error(), ResolveError::kMalformedAnswer);
    EXPECT_EQ(txt_records_of_answer(Bytes{1, 2, 3}).error(), ResolveError::kMalformedAnswer);
    EXPECT_EQ(UdpTxtResolver::create({.server = "localhost:53"}).error(), ResolveError::kBadServer);
    EXPECT_EQ(UdpTxtResolver::create({.server = "127.0.0.1:0"}).error(), ResolveError::kBadServer);
    EXPECT_EQ(UdpTxtResolver::create({.server = "127.0.0.1"}).error(), ResolveError::kBadServer);
}

}  // namespace
}  // namespace headerd::disc
