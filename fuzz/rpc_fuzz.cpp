// libFuzzer target for serve --rpc (rpc/json_rpc.cpp, rpc/block_json.cpp). The first byte picks:
//   even: the rest is a request body for rpc::Handler::answer over 64 synthetic headers held in
//         memory (every Cancun-era field present), with small batch and reply limits;
//   odd:  the rest is one transaction as a body lists it, for rpc::transaction_json.
//
// It asserts: a reply is empty (notifications only) or JSON: one object, or an array of objects no
// longer than the batch limit, each with "jsonrpc": "2.0", an "id" and exactly one of "result" and
// "error" (an error with an integer code and a string message); a transaction that decodes names
// the hash of its canonical bytes.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include <boost/json.hpp>

#include "core/block_body.hpp"
#include "core/hex.hpp"
#include "core/keccak.hpp"
#include "core/synthetic.hpp"
#include "rpc/block_json.hpp"
#include "rpc/json_rpc.hpp"

namespace {

using namespace headerd;
namespace json = boost::json;

[[noreturn]] void fail(const std::string& what) {
    std::fprintf(stderr, "rpc_fuzz: %s\n", what.c_str());
    std::abort();
}

// The synthetic chain, in memory: what the handler reads headers from.
class MemorySource final : public HeaderSource {
  public:
    MemorySource() : generator_(64, 1) {
        Bytes rlp;
        while (!generator_.done()) {
            rlp.clear();
            const auto p = generator_.next(rlp);
            by_number_.push_back({p.hash, rlp});
            numbers_[p.hash] = p.number;
            head_ = Head{p.number, p.hash, p.total_difficulty, p.timestamp};
        }
    }
    const ChainConfig* config() const noexcept override { return &generator_.config(); }
    std::optional<Head> head() const override { return head_; }
    Outcome<void> append_header_range(uint64_t from, uint64_t count, Order order, ItemBuffer& out,
                                      size_t) const override {
        for (uint64_t i = 0; i < count; ++i) {
            const uint64_t n = order == Order::kAscending ? from + i : from - i;
            if (n >= by_number_.size() || (order == Order::kDescending && i > from)) break;
            out.push(by_number_[n].second);
        }
        return {};
    }
    Outcome<std::optional<uint64_t>> number_by_hash(const Hash32& hash) const override {
        const auto it = numbers_.find(hash);
        return it == numbers_.end() ? std::nullopt : std::optional<uint64_t>(it->second);
    }
    Outcome<std::optional<Hash32>> canonical_hash(uint64_t number) const override {
        return number < by_number_.size() ? std::optional<Hash32>(by_number_[number].first) : std::nullopt;
    }
    Outcome<bool> header_by_hash(const Hash32& hash, Bytes& out) const override {
        const auto it = numbers_.find(hash);
        if (it == numbers_.end()) return false;
        out = by_number_[it->second].second;
        return true;
    }

  private:
    synthetic::Generator generator_;
    std::vector<std::pair<Hash32, Bytes>> by_number_;
    std::map<Hash32, uint64_t> numbers_;
    std::optional<Head> head_;
};

constexpr size_t kBatch = 8;

const rpc::Handler& handler() {
    static const MemorySource source;
    static const rpc::Handler h(source, nullptr, 0, "headerd/fuzz", rpc::RpcLimits{1 << 16, kBatch, 4096});
    return h;
}

void check_reply(const json::value& v) {
    const auto* o = v.if_object();
    if (o == nullptr) fail("a reply is not an object");
    const auto* version = o->if_contains("jsonrpc");
    if (version == nullptr || *version != "2.0") fail("a reply without jsonrpc 2.0");
    if (!o->contains("id")) fail("a reply without id");
    const bool result = o->contains("result"), error = o->contains("error");
    if (result == error) fail("a reply needs exactly one of result and error");
    if (error) {
        const auto* e = o->at("error").if_object();
        if (e == nullptr || !e->contains("code") || !e->at("code").is_int64() || !e->contains("message") ||
            !e->at("message").is_string()) {
            fail("a malformed error object");
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const ByteView rest(data + 1, size - 1);
    if (data[0] % 2 == 1) {
        auto tx = rpc::transaction_json(rest, {{}, 1, 0, U256(7)});
        if (tx) {
            auto value = trie_value(rest);
            if (!value) fail("a transaction that is no trie value decoded");
            if (tx->at("hash").as_string() != to_hex0x(keccak256(*value)))
                fail("a transaction's hash is not of its bytes");
        }
        return 0;
    }
    const std::string reply =
        handler().answer(std::string_view(reinterpret_cast<const char*>(rest.data()), rest.size()));
    if (reply.empty()) return 0;
    boost::system::error_code ec;
    const json::value v = json::parse(reply, ec);
    if (ec) fail("a reply that is not JSON: " + reply);
    if (const auto* batch = v.if_array()) {
        if (batch->empty() || batch->size() > kBatch) fail("a batch reply of the wrong size");
        for (const auto& r : *batch) check_reply(r);
    } else {
        check_reply(v);
    }
    return 0;
}
