// libFuzzer target for DNS node lists (disc/dnsdisc.hpp, disc/dns_resolver.hpp, EIP-1459): the input
// is tried as an enrtree:// URL (parse_url), as a root (parse_root), as a tree entry (parse_entry,
// and parse_entry_at under its own hash and under a wrong one), and as a DNS answer message whose
// TXT records are read (txt_records_of_answer). Signatures cannot be forged by a fuzzer, so a root
// is checked for syntax only.
//
// It asserts: whatever parses is the one text form of what it parsed (URL, root and entry texts are
// made again byte for byte), at most 512 characters for an entry or root; an entry parses under its
// own hash exactly when it parses, and never under a hash it does not have; the TXT strings of an
// answer are no longer than the answer.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "disc/dns_resolver.hpp"
#include "disc/dnsdisc.hpp"

using namespace headerd;

namespace {

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "dnsdisc_fuzz: %s\n", what);
    std::abort();
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
    return 0;
}
