// libFuzzer target for DNS node lists (disc/dnsdisc.hpp, disc/dns_resolver.hpp, EIP-1459): the input
// is tried as an enrtree:// URL (parse_url), as a root (parse_root), as a tree entry (parse_entry,
// and parse_entry_at under its own hash and under a wrong one), as a DNS answer message whose TXT
// records are read (txt_records_of_answer), and as a zone for DnsClient: its lines are the TXT
// records of the domain "f", each at every name whose hash it matches, under a root this target
// signs (a fuzzer cannot forge one) with e= the hash of the first line and l= of the second; the
// client downloads the tree (sync_tree) and pulls 64 records from it (next()).
//
// It asserts: whatever parses is the one text form of what it parsed (URL, root and entry texts are
// made again byte for byte), at most 512 characters for an entry or root; an entry parses under its
// own hash exactly when it parses, and never under a hash it does not have; the TXT strings of an
// answer are no longer than the answer; the client ends (every walk is finite, whatever the
// branches repeat), finds no more records than the zone has lines, and every record it gives is
// one of the lines.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/keccak.hpp"
#include "disc/dns_client.hpp"
#include "disc/dns_resolver.hpp"
#include "disc/dnsdisc.hpp"
#include "disc/text_codec.hpp"

using namespace headerd;

namespace {

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "dnsdisc_fuzz: %s\n", what);
    std::abort();
}

const rlpx::PrivateKey& zone_key() {
    static const rlpx::PrivateKey key = *rlpx::PrivateKey::from_bytes(Bytes(32, 0x22));
    return key;
}

// The domain "f": a root signed by zone_key() over the first two lines' hashes, and at HASH.f every
// line whose keccak256 starts with HASH's bytes.
class ZoneResolver final : public disc::TxtResolver {
  public:
    explicit ZoneResolver(std::vector<std::string> lines) : lines_(std::move(lines)) {
        disc::RootEntry root{disc::entry_hash(lines_[0]), disc::entry_hash(lines_[1]), 1, {}};
        root.signature = *rlpx::sign_recoverable(zone_key(), root.signing_hash());
        root_ = root.text();
    }
    Result<std::vector<std::string>> lookup_txt(std::string_view name) override {
        if (name == "f") return std::vector<std::string>{root_};
        if (!name.ends_with(".f")) return make_error_code(disc::ResolveError::kNotFound);
        const auto want = disc::base32_decode(name.substr(0, name.size() - 2), false);
        if (!want || want->size() > 32) return make_error_code(disc::ResolveError::kNotFound);
        std::vector<std::string> out;
        for (const auto& line : lines_) {
            const Hash32 h = keccak256(as_bytes(line));
            if (std::equal(want->begin(), want->end(), h.begin())) out.push_back(line);
        }
        if (out.empty()) return make_error_code(disc::ResolveError::kNotFound);
        return out;
    }

  private:
    std::vector<std::string> lines_;
    std::string root_;
};

void drive_client(std::string_view text) {
    std::vector<std::string> lines;
    for (size_t at = 0; at <= text.size();) {
        const size_t end = std::min(text.find('\n', at), text.size());
        lines.emplace_back(text.substr(at, end - at));
        at = end + 1;
    }
    if (lines.size() < 2) return;
    const std::set<std::string> known(lines.begin(), lines.end());
    ZoneResolver resolver(lines);
    const std::string url = disc::LinkEntry{"f", zone_key().public_key()}.url();
    disc::DnsClient client(resolver, disc::DnsClientConfig{.max_steps_per_next = 256, .seed = 1});
    if (auto tree = client.sync_tree(url)) {
        if (tree->enrs.size() > lines.size()) fail("sync_tree found more records than the zone has lines");
        for (const auto& enr : tree->enrs) {
            if (!known.contains(enr.text())) fail("sync_tree found a record that is no line of the zone");
        }
    }
    if (!client.add_tree(url)) fail("add_tree refused a valid URL");
    for (int i = 0; i < 64; ++i) {
        auto got = client.next();
        if (got && *got && !known.contains((*got)->text())) fail("next() gave a record that is no line of the zone");
        if (got && !*got) break;
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);

    if (auto link = disc::parse_url(text)) {
        if (link->url() != text) fail("a parsed URL has another text form");
        if (!disc::is_valid_domain(link->domain)) fail("a parsed URL has an invalid domain");
    }
    if (auto root = disc::parse_root(text)) {
        if (root->text() != text) fail("a parsed root has another text form");
        if (text.size() > disc::kMaxEntryTextSize) fail("a root above 512 characters parsed");
        if (!disc::is_valid_hash(root->enr_root) || !disc::is_valid_hash(root->link_root)) {
            fail("a parsed root has an invalid hash");
        }
    }
    const auto entry = disc::parse_entry(text);
    if (entry) {
        if (disc::entry_text(*entry) != text) fail("a parsed entry has another text form");
        if (text.size() > disc::kMaxEntryTextSize) fail("an entry above 512 characters parsed");
        if (const auto* branch = std::get_if<disc::BranchEntry>(&*entry)) {
            for (const auto& child : branch->children) {
                if (!disc::is_valid_hash(child)) fail("a parsed branch has an invalid child");
            }
        }
    }
    const std::string hash = disc::entry_hash(text);
    const auto at = disc::parse_entry_at(text, hash);
    if (static_cast<bool>(at) != static_cast<bool>(entry)) fail("parse_entry_at under its own hash differs");
    if (!at && at.error() != entry.error()) fail("parse_entry_at under its own hash fails differently");
    std::string wrong = hash;
    wrong[0] = wrong[0] == 'A' ? 'B' : 'A';
    const auto mismatch = disc::parse_entry_at(text, wrong);
    if (mismatch || mismatch.error() != disc::DnsDiscError::kHashMismatch) fail("an entry parsed under a wrong hash");

    if (auto txt = disc::txt_records_of_answer(ByteView{data, size})) {
        size_t total = 0;
        for (const auto& record : *txt) total += record.size();
        if (total > size) fail("TXT strings longer than the answer");
    }
    drive_client(text);
    return 0;
}
