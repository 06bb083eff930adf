// libFuzzer target for node records (disc/enr.hpp, EIP-778): the input is tried as a record's RLP
// (Enr::decode), as its text form (Enr::from_text), and as a run of RLP items read as key, value,
// key, value, ... that EnrBuilder signs (a fuzzer cannot forge signatures, so this is how mutated
// entries get past the signature check to the rest of decode and to the accessors).
//
// It asserts, for a record that decodes: it is at most 300 bytes and its encoding is the input;
// its keys are sorted and unique and include id and secp256k1; it decodes again to the same
// record; its text form reads back to the same bytes, and is the input when the input was text
// (one text form per record); every known entry's accessor answers without failing; and a record
// signed with another key from the same entries (EnrBuilder) decodes with the same values and a
// seq one higher, unless it would exceed 300 bytes. Signing entries fails only for size
// (kTooBig), and what it signs holds each entry.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/rlp.hpp"
#include "disc/enr.hpp"

using namespace headerd;

namespace {

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "enr_fuzz: %s\n", what);
    std::abort();
}

const rlpx::PrivateKey& other_key() {
    static const rlpx::PrivateKey key = *rlpx::PrivateKey::from_bytes(Bytes(32, 0x11));
    return key;
}

void check(const disc::Enr& enr) {
    if (enr.encoded().size() > disc::kEnrMaxSize) fail("a record above 300 bytes decoded");
    if (!enr.value("id") || !enr.value("secp256k1")) fail("a record without id or secp256k1 decoded");
    auto again = disc::Enr::decode(enr.encoded());
    if (!again || again->pairs() != enr.pairs() || again->seq() != enr.seq()) fail("a record does not decode again");
    auto text = disc::Enr::from_text(enr.text());
    if (!text || !std::ranges::equal(text->encoded(), enr.encoded())) fail("the text form does not read back");
    (void)enr.ip();
    (void)enr.ip6();
    (void)enr.tcp6();
    (void)enr.udp6();
    (void)enr.eth();
    if (enr.seq() == UINT64_MAX) return;
    disc::EnrBuilder builder(enr.seq() + 1);
    for (const auto& [key, value] : enr.pairs()) {
        if (key != "id" && key != "secp256k1") builder.set(key, value);
    }
    auto resigned = builder.sign(other_key());
    if (!resigned) {
        if (resigned.error() != disc::EnrError::kTooBig) fail("re-signing the entries failed other than by size");
        return;
    }
    if (resigned->seq() != enr.seq() + 1 || resigned->pairs().size() != enr.pairs().size()) {
        fail("the re-signed record differs");
    }
    for (const auto& [key, value] : enr.pairs()) {
        if (key == "secp256k1") continue;
        const auto v = resigned->value(key);
        if (!v || !std::ranges::equal(*v, value)) fail("a re-signed entry differs");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const ByteView bytes{data, size};
    if (auto enr = disc::Enr::decode(bytes)) {
        if (!std::ranges::equal(enr->encoded(), bytes)) fail("the encoding of a decoded record is not its input");
        check(*enr);
    }
    // Entries: key, value, key, value, ... (a key is an RLP string; a value any item).
    {
        ByteView in = bytes;
        disc::EnrBuilder builder(1);
        std::map<std::string, Bytes, std::less<>> set;
        bool whole = !in.empty();
        while (!in.empty() && whole) {
            auto key = rlp::decode_string(in);
            if (!key) {
                whole = false;
                break;
            }
            auto value = rlp::next_item(in);
            if (!value) {
                whole = false;
                break;
            }
            std::string k(reinterpret_cast<const char*>(key->data()), key->size());
            set[k] = Bytes(value->begin(), value->end());
            builder.set(std::move(k), Bytes(value->begin(), value->end()));
        }
        if (whole) {
            auto enr = builder.sign(other_key());
            if (enr) {
                for (const auto& [k, v] : set) {
                    const auto got = enr->value(k);
                    if (k != "id" && k != "secp256k1" && (!got || !std::ranges::equal(*got, v))) {
                        fail("a signed entry does not read back");
                    }
                }
                check(*enr);
            } else if (enr.error() != disc::EnrError::kTooBig) {
                fail("signing entries failed other than by size");
            }
        }
    }
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    if (auto enr = disc::Enr::from_text(text)) {
        if (enr->text() != text) fail("a record read from text has another text form");
        check(*enr);
    }
    return 0;
}
