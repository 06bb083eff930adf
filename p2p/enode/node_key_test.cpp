#include "p2p/enode/node_key.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "core/hex.hpp"

namespace headerd::p2p {
namespace {

namespace fs = std::filesystem;

class NodeKeyTest : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("headerd-nodekey-" + std::to_string(::getpid()));
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    fs::path dir_;
};

TEST_F(NodeKeyTest, CreatedOnceWithMode0600AndReused) {
    auto first = load_or_create_node_key(dir_.string());
    ASSERT_TRUE(first) << first.error().message;
    struct stat st {};
    ASSERT_EQ(::stat((dir_ / "nodekey").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    auto second = load_or_create_node_key(dir_.string());
    ASSERT_TRUE(second);
    EXPECT_EQ(first->bytes(), second->bytes());
}

TEST_F(NodeKeyTest, AnInvalidKeyFileIsAnErrorAndIsKept) {
    std::ofstream(dir_ / "nodekey") << "not a key\n";
    auto key = load_or_create_node_key(dir_.string());
    ASSERT_FALSE(key);
    EXPECT_NE(key.error().message.find((dir_ / "nodekey").string()), std::string::npos);
    std::ifstream in(dir_ / "nodekey");
    std::string text;
    std::getline(in, text);
    EXPECT_EQ(text, "not a key");
}

TEST(Enode, FormatsAndParsesBack) {
    auto key = rlpx::PrivateKey::generate();
    ASSERT_TRUE(key);
    const std::string url = enode_url(key->public_key(), "127.0.0.1", 30303);
    EXPECT_EQ(url, "enode://" + to_hex(key->public_key().bytes()) + "@127.0.0.1:30303");
    auto parsed = parse_enode(url + "?discport=0");
    ASSERT_TRUE(parsed) << parsed.error().message;
    EXPECT_EQ(parsed->key, key->public_key());
    EXPECT_EQ(parsed->host, "127.0.0.1");
    EXPECT_EQ(parsed->port, 30303);
    EXPECT_EQ(parsed->udp_port(), 30303);
    auto disc = parse_enode(url + "?discport=30301");
    ASSERT_TRUE(disc) << disc.error().message;
    EXPECT_EQ(disc->port, 30303);
    EXPECT_EQ(disc->udp_port(), 30301);
    auto discovery_only = parse_enode(enode_url(key->public_key(), "127.0.0.1", 0) + "?discport=30301");
    ASSERT_TRUE(discovery_only) << discovery_only.error().message;
    EXPECT_EQ(discovery_only->port, 0);
    EXPECT_EQ(discovery_only->udp_port(), 30301);
}

TEST(Enode, RejectsMalformedUrlsWithAReason) {
    const std::string id = to_hex(rlpx::PrivateKey::generate().value().public_key().bytes());
    const std::pair<std::string, std::string> cases[] = {
        {"http://x", "must start with enode://"},
        {"enode://" + id, "missing @HOST:PORT"},
        {"enode://abcd@127.0.0.1:1", "128 hex characters"},
        {"enode://" + id + "@127.0.0.1", "missing :PORT"},
        {"enode://" + id + "@127.0.0.1:0", "bad port"},
        {"enode://" + id + "@127.0.0.1:65536", "bad port"},
        {"enode://" + id + "@127.0.0.1:12x", "bad port"},
        {"enode://" + id + "@127.0.0.1:1?discport=x", "bad discport"},
        {"enode://" + id + "@127.0.0.1:1?x=1", "?discport=N"},
    };
    for (const auto& [url, why] : cases) {
        auto r = parse_enode(url);
        ASSERT_FALSE(r) << url;
        EXPECT_NE(r.error().message.find(why), std::string::npos) << url << ": " << r.error().message;
    }
}

}  // namespace
}  // namespace headerd::p2p
