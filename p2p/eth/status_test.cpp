#include "p2p/eth/status.hpp"

#include <gtest/gtest.h>

#include <string>

#include "core/hex.hpp"
#include "core/rlp.hpp"
#include "p2p/wire/snappy_codec.hpp"

namespace headerd::eth {
namespace {

using p2p::DisconnectReason;

const Hash32 kGenesis = *hash_from_hex("d4e56740f876aef8c010b86a40d5f56745a118d0906a34e69aec8c0db1cb8fa3");
const Hash32 kHeadHash =
    *hash_from_hex("0x2ec5e7bb1bcb4d8d3dc2a4b5ee4c2c7e4b1d2f5a9c2f8ab7e0a4e6d4c0b7b1a1");  // any non-zero hash

// A head past every mainnet fork of the config (after BPO2): forkid 07c9462e/0.
constexpr uint64_t kTipNumber = 24'000'000;
constexpr uint64_t kTipTime = 1'770'000'000;

ForkId fork(uint32_t hash, uint64_t next) {
    ForkId id;
    store_be32(id.hash.data(), hash);
    id.next = next;
    return id;
}

StatusMessage69 good69() {
    StatusMessage69 s;
    s.network_id = 1;
    s.genesis_hash = kGenesis;
    s.fork_id = fork(0x07c9462e, 0);
    s.earliest = 0;
    s.latest = kTipNumber;
    s.latest_hash = kHeadHash;
    return s;
}

StatusMessage68 good68() {
    StatusMessage68 s;
    s.network_id = 1;
    s.total_difficulty = U256("58750003716598352816469");
    s.head_hash = kHeadHash;
    s.genesis_hash = kGenesis;
    s.fork_id = fork(0x07c9462e, 0);
    return s;
}

void expect_rejected(const StatusCheck& r, StatusError code, std::initializer_list<std::string_view> mentions) {
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, code);
    EXPECT_EQ(r.error().reason, DisconnectReason::kSubprotocolError);
    EXPECT_EQ(disconnect_reason_for(r.error().code), DisconnectReason::kSubprotocolError);
    for (std::string_view m : mentions) EXPECT_NE(r.error().message.find(m), std::string::npos) << r.error().message;
}

TEST(MakeStatus, Eth68CarriesHeadTotalDifficultyAndForkId) {
    const db::Head head{8191, kHeadHash, U256("56000000000000000"), 1438300000};
    const StatusMessage68 s = make_status68(mainnet_config(), head);
    EXPECT_EQ(s.version, 68u);
    EXPECT_EQ(s.network_id, 1u);
    EXPECT_EQ(s.total_difficulty, head.total_difficulty);
    EXPECT_EQ(s.head_hash, kHeadHash);
    EXPECT_EQ(s.genesis_hash, kGenesis);
    EXPECT_EQ(s.fork_id, fork(0xfc64ec04, 1150000));  // Frontier, Homestead next
    // What we send must pass our own check.
    EXPECT_TRUE(validate_status(s, mainnet_config(), 8191, 1438300000, 68));
}

TEST(MakeStatus, Eth69AdvertisesHeadOnlyRange) {
    const db::Head head{kTipNumber, kHeadHash, U256(1), kTipTime};
    const StatusMessage69 s = make_status69(mainnet_config(), head);
    EXPECT_EQ(s.version, 69u);
    EXPECT_EQ(s.earliest, kTipNumber);
    EXPECT_EQ(s.latest, kTipNumber);
    EXPECT_EQ(s.latest_hash, kHeadHash);
    EXPECT_EQ(s.fork_id, fork(0x07c9462e, 0));
    // At this head the encoding is test-vectors.md G's with the range filled in.
    Bytes out;
    s.encode(out);
    EXPECT_EQ(to_hex(out).substr(0, 80),
              "f8554501a0d4e56740f876aef8c010b86a40d5f56745a118d0906a34e69aec8c0db1cb8fa3c68407");
    EXPECT_TRUE(validate_status(s, mainnet_config(), kTipNumber, kTipTime, 69));

    const BlockRangeUpdate u = make_block_range_update(head);
    EXPECT_EQ(u, (BlockRangeUpdate{kTipNumber, kTipNumber, kHeadHash}));
    EXPECT_TRUE(u.validate());
}

TEST(ValidateStatus, AcceptsMatchingPeersOnEitherSideOfOurForks) {
    EXPECT_TRUE(validate_status(good69(), mainnet_config(), kTipNumber, kTipTime, 69));
    EXPECT_TRUE(validate_status(good68(), mainnet_config(), kTipNumber, kTipTime, 68));
    // We hold only early history (head 8191): a peer at the tip is ahead of us, which is fine.
    EXPECT_TRUE(validate_status(good69(), mainnet_config(), 8191, 1438300000, 69));
    // A peer still syncing in Frontier that knows Homestead is next.
    StatusMessage69 behind = good69();
    behind.fork_id = fork(0xfc64ec04, 1150000);
    EXPECT_TRUE(validate_status(behind, mainnet_config(), kTipNumber, kTipTime, 69));
}

TEST(ValidateStatus, EachMismatchHasItsCodeAndNamesBothValues) {
    StatusMessage69 s = good69();
    s.network_id = 5;
    expect_rejected(validate_status(s, mainnet_config(), kTipNumber, kTipTime, 69), StatusError::kNetworkIdMismatch,
                    {"network id", "remote 5", "local 1"});

    s = good69();
    expect_rejected(validate_status(s, mainnet_config(), kTipNumber, kTipTime, 68), StatusError::kVersionMismatch,
                    {"version", "remote 69", "negotiated 68"});
    StatusMessage68 s68 = good68();
    s68.version = 69;
    expect_rejected(validate_status(s68, mainnet_config(), kTipNumber, kTipTime, 68), StatusError::kVersionMismatch,
                    {"remote 69", "negotiated 68"});

    s = good69();
    s.genesis_hash[31] ^= 1;
    expect_rejected(validate_status(s, mainnet_config(), kTipNumber, kTipTime, 69), StatusError::kGenesisMismatch,
                    {"genesis", to_hex0x(s.genesis_hash), to_hex0x(kGenesis)});

    s = good69();
    s.fork_id = fork(0xdeadbeef, 0);
    expect_rejected(validate_status(s, mainnet_config(), kTipNumber, kTipTime, 69), StatusError::kForkIdRejected,
                    {"fork id", "local incompatible", "remote 0xdeadbeef/0", "local 0x07c9462e/0"});

    // Frontier without knowing Homestead comes next: remote stale.
    s = good69();
    s.fork_id = fork(0xfc64ec04, 0);
    expect_rejected(validate_status(s, mainnet_config(), kTipNumber, kTipTime, 69), StatusError::kForkIdRejected,
                    {"remote needs update", "remote 0xfc64ec04/0"});

    s68 = good68();
    s68.fork_id = fork(0xdeadbeef, 0);
    expect_rejected(validate_status(s68, mainnet_config(), kTipNumber, kTipTime, 68), StatusError::kForkIdRejected,
                    {"remote 0xdeadbeef/0"});
}

TEST(ValidateStatus, Eth69RangeMustBeOrderedWithNonZeroHash) {
    StatusMessage69 s = good69();
    s.earliest = 10;
    s.latest = 9;
    expect_rejected(validate_status(s, mainnet_config(), kTipNumber, kTipTime, 69), StatusError::kInvalidBlockRange,
                    {"earliest 10", "latest 9"});
    s = good69();
    s.latest_hash = Hash32{};
    expect_rejected(validate_status(s, mainnet_config(), kTipNumber, kTipTime, 69), StatusError::kInvalidBlockRange,
                    {"latest hash is zero"});
    // earliest == latest is fine (what headerd itself sends).
    s = good69();
    s.earliest = s.latest;
    EXPECT_TRUE(validate_status(s, mainnet_config(), kTipNumber, kTipTime, 69));
}

TEST(DisconnectReasonFor, MalformedInputIsProtocolBreach) {
    EXPECT_EQ(disconnect_reason_for(rlp::DecodeError::kTrailingBytes), DisconnectReason::kProtocolBreach);
    EXPECT_EQ(disconnect_reason_for(MessageError::kBadOrigin), DisconnectReason::kProtocolBreach);
    EXPECT_EQ(disconnect_reason_for(p2p::SnappyError::kTooLarge), DisconnectReason::kProtocolBreach);
    EXPECT_EQ(disconnect_reason_for(StatusError::kGenesisMismatch), DisconnectReason::kSubprotocolError);
}

}  // namespace
}  // namespace headerd::eth
