#include "rpc/json_rpc.hpp"

#include <gtest/gtest.h>

#include <string>

#include <boost/json.hpp>

#include "core/hex.hpp"
#include "core/keccak.hpp"
#include "db/era_store.hpp"
#include "db/import.hpp"
#include "db/test_fixture.hpp"
#include "rpc/block_json.hpp"
#include "tests/data_dir.hpp"

namespace headerd::rpc {
namespace {

namespace json = boost::json;
using db::ChainDb;
using db::EraStore;

const std::string kSepolia = headerd::testing::data_dir() + "/sepolia-00021-b8814b14.era1";
const std::string kMainnetHeaders = headerd::testing::data_dir() + "/mainnet-headers-0-8191.rlp";
constexpr const char* kSepoliaRoot = "b8814b146889489efd392d80c7ca4e418d39302e25323a55882ca8cc0ef013e3";

// A datadir: Sepolia's epoch 21 with its history, or mainnet's first 8192 headers alone.
class RpcTest : public ::testing::Test {
  protected:
    void open(bool sepolia) {
        datadir_.emplace("rpc");
        db::ChainDbOptions opts;
        opts.create_if_missing = true;
        auto chain = ChainDb::open(datadir_->path().string(), opts);
        ASSERT_TRUE(chain) << chain.error().message;
        db_ = std::move(*chain);
        if (!sepolia) {
            auto imported = db::import_file(*db_, mainnet_config(), kMainnetHeaders);
            ASSERT_TRUE(imported) << imported.error().message;
            handler_.emplace(*db_, nullptr, 0, "headerd/test", limits_);
            return;
        }
        db::ImportOptions options;
        options.trusted_root = hash_from_hex(kSepoliaRoot);
        auto imported = db::import_file(*db_, sepolia_config(), kSepolia, {}, options);
        ASSERT_TRUE(imported) << imported.error().message;
        auto store = EraStore::open((datadir_->path() / "history").string());
        ASSERT_TRUE(store) << store.error().message;
        store_ = std::move(*store);
        auto history = db::import_history(*db_, *store_, kSepolia);
        ASSERT_TRUE(history) << history.error().message;
        handler_.emplace(*db_, store_.get(), db_->first_block(), "headerd/test", limits_);
    }

    json::value ask(const std::string& body) const { return json::parse(handler_->answer(body)); }
    json::value call(const std::string& method, const std::string& params) const {
        return ask(R"({"jsonrpc":"2.0","id":1,"method":")" + method + R"(","params":)" + params + "}");
    }
    static int64_t error_code(const json::value& reply) { return reply.at("error").at("code").as_int64(); }

    RpcLimits limits_;
    std::optional<db::testing::TempDatadir> datadir_;
    std::unique_ptr<ChainDb> db_;
    std::unique_ptr<EraStore> store_;
    std::optional<Handler> handler_;
};

TEST(Quantity, HasNoLeadingZeroDigits) {
    EXPECT_EQ(quantity(uint64_t{0}), "0x0");
    EXPECT_EQ(quantity(uint64_t{0x2a000}), "0x2a000");
    EXPECT_EQ(quantity(Bytes{0x00, 0x0f, 0xff}), "0xfff");
    EXPECT_EQ(quantity(Bytes{}), "0x0");
    EXPECT_EQ(quantity(U256(1) << 255), "0x8" + std::string(63, '0'));
}

// Block 174010 of Sepolia holds one EIP-1559 transaction; its hash and sender as Sepolia's explorers
// and ethers (tests/interop/rpc_client.js) give them.
TEST_F(RpcTest, BlockWithTransactionsNamesTheirHashAndRecoveredSender) {
    open(true);
    const auto reply = call("eth_getBlockByNumber", R"(["0x2a7ba", true])");
    const auto& block = reply.at("result").as_object();
    EXPECT_EQ(block.at("number"), "0x2a7ba");
    EXPECT_EQ(block.at("baseFeePerGas"), "0x7");
    const auto& tx = block.at("transactions").as_array().at(0).as_object();
    EXPECT_EQ(tx.at("hash"), "0x1e7dbef1d524d7fc09b2cffe011ef7b7196b9308e2c392c0bc97d8d3edc16cc6");
    EXPECT_EQ(tx.at("from"), "0xea1b261fb7ec1c4f2beea2476f17017537b4b507");
    EXPECT_EQ(tx.at("type"), "0x2");
    EXPECT_EQ(tx.at("gasPrice"), "0x1007");  // base fee 7 + tip 0x1000, under the fee cap
    EXPECT_EQ(tx.at("blockHash"), block.at("hash"));

    // Without full transactions: their hashes; the raw block hashes to the same header.
    const auto hashes = call("eth_getBlockByNumber", R"(["0x2a7ba", false])");
    EXPECT_EQ(hashes.at("result").at("transactions").as_array().at(0), tx.at("hash"));
    const auto raw = call("debug_getRawHeader", R"(["0x2a7ba"])");
    const auto bytes = from_hex(std::string_view(raw.at("result").as_string()));
    ASSERT_TRUE(bytes);
    EXPECT_EQ(to_hex0x(keccak256(*bytes)), block.at("hash").as_string());
    const auto receipts = call("debug_getRawReceipts", R"(["0x2a7ba"])");
    EXPECT_EQ(receipts.at("result").as_array().size(), 1u);
}

TEST_F(RpcTest, TagsAndBlocksNotHeld) {
    open(true);
    EXPECT_EQ(call("eth_blockNumber", "[]").at("result"), "0x2bfff");
    EXPECT_EQ(call("eth_chainId", "[]").at("result"), "0xaa36a7");
    EXPECT_EQ(call("net_version", "[]").at("result"), "11155111");
    EXPECT_EQ(call("eth_getHeaderByNumber", R"(["earliest"])").at("result").at("number"), "0x2a000");
    EXPECT_EQ(call("eth_getHeaderByNumber", R"(["latest"])").at("result").at("number"), "0x2bfff");
    EXPECT_TRUE(call("eth_getBlockByNumber", R"(["0x29fff", false])").at("result").is_null());
    EXPECT_TRUE(call("eth_getBlockByNumber", R"(["0x2c000", false])").at("result").is_null());
    EXPECT_EQ(error_code(call("debug_getRawHeader", R"(["0x2c000"])")), kServerError);
    EXPECT_EQ(error_code(call("eth_getBlockByNumber", R"(["finalized", false])")), kServerError);
}

TEST_F(RpcTest, HeadersOnlyNodeServesEmptyBodiesFromTheRootsAndRefusesOthersWith4444) {
    open(false);
    // Block 1 has no transactions and no uncles: its body is known from its header.
    const auto one = call("eth_getBlockByNumber", R"(["0x1", true])");
    EXPECT_EQ(one.at("result").at("hash"), "0x88e96d4537bea4d9c05d12549907b32561d3bf31f45aae734cdc119f13406cb6");
    EXPECT_TRUE(one.at("result").at("transactions").as_array().empty());
    // Block 3 has an uncle: its body is not held.
    const auto three = call("eth_getBlockByNumber", R"(["0x3", false])");
    EXPECT_EQ(error_code(three), kPrunedHistory);
    EXPECT_EQ(three.at("error").at("message"), "pruned history unavailable");
    EXPECT_EQ(error_code(call("debug_getRawBlock", R"(["0x3"])")), kPrunedHistory);
    EXPECT_EQ(call("debug_getRawReceipts", R"(["0x3"])").at("result").as_array().size(), 0u);
}

TEST_F(RpcTest, MalformedRequestsGetTheSpecificationsErrors) {
    open(false);
    EXPECT_EQ(error_code(ask("{")), kParseError);
    EXPECT_EQ(error_code(ask("[]")), kInvalidRequest);
    EXPECT_EQ(error_code(ask("42")), kInvalidRequest);
    EXPECT_EQ(error_code(ask(R"({"id":1,"method":"eth_blockNumber"})")), kInvalidRequest);
    EXPECT_EQ(error_code(ask(R"({"jsonrpc":"2.0","id":[1],"method":"eth_blockNumber"})")), kInvalidRequest);
    EXPECT_EQ(error_code(ask(R"({"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":{}})")), kInvalidParams);
    EXPECT_EQ(error_code(call("eth_getBalance", "[]")), kMethodNotFound);
    EXPECT_EQ(error_code(call("eth_blockNumber", "[1]")), kInvalidParams);
    for (const char* bad : {R"(["0x01", false])", R"(["12", false])", R"(["0x", false])", R"(["0xg", false])",
                            R"([1, false])", R"(["0x1"])", R"(["0x1", "yes"])", R"(["0x11111111111111111", false])"}) {
        EXPECT_EQ(error_code(call("eth_getBlockByNumber", bad)), kInvalidParams) << bad;
    }
    EXPECT_EQ(error_code(call("eth_getBlockByHash", R"(["0x12", false])")), kInvalidParams);
    EXPECT_EQ(error_code(call("debug_getRawHeader", R"([{"blockNumber":"0x1","blockHash":"0x12"}])")), kInvalidParams);
    // An id too large for a double (it would come back as Infinity, which is no JSON) is refused.
    EXPECT_TRUE(ask(R"({"jsonrpc":"2.0","id":1e400,"method":"eth_chainId"})").at("id").is_null());
    // The id comes back as sent.
    EXPECT_EQ(ask(R"({"jsonrpc":"2.0","id":"a","method":"eth_chainId"})").at("id"), "a");
}

TEST_F(RpcTest, BatchesNotificationsAndTheirLimits) {
    limits_.max_batch = 3;
    limits_.max_response_bytes = 2000;
    open(false);
    EXPECT_EQ(handler_->answer(R"({"jsonrpc":"2.0","method":"eth_blockNumber"})"), "");
    const auto batch =
        ask(R"([{"jsonrpc":"2.0","method":"eth_chainId"},{"jsonrpc":"2.0","id":2,"method":"eth_chainId"},7])");
    ASSERT_EQ(batch.as_array().size(), 2u);
    EXPECT_EQ(batch.as_array()[0].at("result"), "0x1");
    EXPECT_EQ(error_code(batch.as_array()[1]), kInvalidRequest);
    // Over the batch limit: one error, with the first call's id.
    const auto large =
        ask(R"([{"jsonrpc":"2.0","method":"eth_chainId"},{"jsonrpc":"2.0","id":5,"method":"eth_chainId"},)"
            R"({"jsonrpc":"2.0","id":6,"method":"eth_chainId"},{"jsonrpc":"2.0","id":7,"method":"eth_chainId"}])");
    ASSERT_EQ(large.as_array().size(), 1u);
    EXPECT_EQ(large.as_array()[0].at("id"), 5);
    EXPECT_EQ(large.as_array()[0].at("error").at("message"), "batch too large");
    // Past the reply limit (a header is about 1.1 kB of JSON), the calls fail with -32003.
    const std::string header = R"({"jsonrpc":"2.0","id":1,"method":"eth_getHeaderByNumber","params":["0x1"]})";
    const auto heavy = ask("[" + header + "," + header + "," + header + "]").as_array();
    ASSERT_EQ(heavy.size(), 3u);
    EXPECT_TRUE(heavy[0].as_object().contains("result"));
    EXPECT_TRUE(heavy[1].as_object().contains("result"));
    EXPECT_EQ(error_code(heavy[2]), kResponseTooLarge);
}

TEST_F(RpcTest, HttpSideTakesPostOfJsonFromLocalHostsOnly) {
    open(false);
    const auto http = handler_->http_handler();
    const std::string body = R"({"jsonrpc":"2.0","id":1,"method":"eth_chainId"})";
    auto reply = http({"POST", "/", "127.0.0.1:8545", "application/json; charset=utf-8", body});
    EXPECT_EQ(reply.status, 200u);
    EXPECT_EQ(reply.content_type, "application/json");
    EXPECT_EQ(json::parse(reply.body).at("result"), "0x1");
    EXPECT_EQ(http({"POST", "/", "localhost:8545", "application/json", body}).status, 200u);
    EXPECT_EQ(http({"POST", "/", "[::1]:8545", "application/json", body}).status, 200u);
    EXPECT_EQ(http({"POST", "/", "attacker.example:8545", "application/json", body}).status, 403u);
    EXPECT_EQ(http({"POST", "/", "127.0.0.1", "text/plain", body}).status, 415u);
    EXPECT_EQ(http({"GET", "/", "127.0.0.1", "", ""}).status, 405u);
    EXPECT_EQ(http({"POST", "/eth", "127.0.0.1", "application/json", body}).status, 404u);
    // Through the HTTP server's parser: a body over the limit is 413, before any JSON is read.
    metrics::HttpOptions options;
    options.max_body_bytes = 64;
    const auto replies = metrics::detail::answer_bytes(
        "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 65\r\n\r\n" +
            std::string(65, ' '),
        http, options);
    ASSERT_EQ(replies.size(), 1u);
    EXPECT_EQ(replies[0].substr(0, 12), "HTTP/1.1 413");
}

TEST(TransactionJson, MalformedTransactionsAreNamed) {
    const TransactionPlace place{{}, 7, 2, std::nullopt};
    // Type 0x05 is no transaction type; a typed transaction whose list is short; a legacy
    // transaction whose v is neither 27/28 nor EIP-155's.
    const Bytes unknown_type{0x82, 0x05, 0xc0};
    auto r = transaction_json(unknown_type, place);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, "transaction 2 of block 7: transaction type 0x5 is not one headerd knows");
    const Bytes short_list{0x83, 0x02, 0xc1, 0x01};
    r = transaction_json(short_list, place);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, "transaction 2 of block 7: not a type-2 transaction of 12 fields");
    const Bytes bad_v{0xc9, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x1a, 0x01, 0x01};
    r = transaction_json(bad_v, place);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, "transaction 2 of block 7: its v (26) is neither 27/28 nor EIP-155's");
}

}  // namespace
}  // namespace headerd::rpc
