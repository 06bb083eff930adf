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
    for (std::string_view m : mentions) EXPECT_NE(r.error().message.find(m), std::string::npos) << r.error().message;
}

TEST(MakeStatus, Eth68CarriesHeadTotalDifficultyAndForkId) {
    const Head head{8191, kHeadHash, U256("56000000000000000"), 1438300000};
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
    const Head head{kTipNumber, kHeadHash, U256(1), kTipTime};
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

TEST(MakeStatus, Eth69AnnouncesTheHistoryOnlyWhenItReachesTheHead) {
    const Head head{8191, kHeadHash, U256(1), 1438300000};
    // No history, or history that stops below the head: the head alone.
    EXPECT_EQ(announced_earliest(head, std::nullopt), 8191u);
    EXPECT_EQ(announced_earliest(head, BlockRange{0, 8190}), 8191u);
    EXPECT_EQ(announced_earliest(head, BlockRange{8192, 16383}), 8191u);
    // History through the head: from its first block.
    EXPECT_EQ(announced_earliest(head, BlockRange{0, 8191}), 0u);
    EXPECT_EQ(announced_earliest(head, BlockRange{0, 16383}), 0u);
    const StatusMessage69 s = make_status69(mainnet_config(), head, 0);
    EXPECT_EQ(s.earliest, 0u);
    EXPECT_EQ(s.latest, 8191u);
    EXPECT_TRUE(validate_status(s, mainnet_config(), 8191, 1438300000, 69));
    EXPECT_EQ(make_block_range_update(head, 0), (BlockRangeUpdate{0, 8191, kHeadHash}));
    // An earliest above the head is never sent.
    EXPECT_EQ(make_status69(mainnet_config(), head, 9000).earliest, 8191u);
    Bytes out;
    encode_status(69, mainnet_config(), head, out, 0);
    EXPECT_EQ(*StatusMessage69::decode(out), s);
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

// ---- version-generic pair ----------------------------------------------------------------------

TEST(EncodeStatus, PicksTheLayoutOfTheNegotiatedVersion) {
    const Head head{kTipNumber, kHeadHash, U256("58750003716598352816469"), kTipTime};
    Bytes out;
    encode_status(68, mainnet_config(), head, out);
    Bytes want;
    make_status68(mainnet_config(), head).encode(want);
    EXPECT_EQ(to_hex(out), to_hex(want));

    for (uint64_t v : {69, 70, 71, 72}) {
        SCOPED_TRACE(v);
        out.clear();
        encode_status(v, mainnet_config(), head, out);
        StatusMessage69 s = make_status69(mainnet_config(), head);
        s.version = static_cast<uint32_t>(v);
        want.clear();
        s.encode(want);
        EXPECT_EQ(to_hex(out), to_hex(want));
        // [v, 1, genesis, ...]: only the first field differs between 69 and later.
        EXPECT_EQ(to_hex(out).substr(0, 8), "f855" + to_hex(Bytes{static_cast<uint8_t>(v)}) + "01");
        auto back = StatusMessage69::decode(out);
        ASSERT_TRUE(back);
        EXPECT_EQ(back->version, v);
        EXPECT_EQ(back->earliest, kTipNumber);
        // What we send passes our own check at that version.
        EXPECT_TRUE(check_status(v, out, mainnet_config(), kTipNumber, kTipTime));
    }
    // encode_status appends.
    out = {0x01};
    encode_status(72, mainnet_config(), head, out);
    EXPECT_EQ(out[0], 0x01);
    EXPECT_EQ(out[1], 0xf8);
}

Bytes encoded69(uint32_t version) {
    StatusMessage69 s = good69();
    s.version = version;
    Bytes out;
    s.encode(out);
    return out;
}

TEST(CheckStatus, AcceptsEachVersionsStatusAtThatVersionOnly) {
    for (uint32_t v : {69u, 70u, 71u, 72u}) {
        SCOPED_TRACE(v);
        EXPECT_TRUE(check_status(v, encoded69(v), mainnet_config(), kTipNumber, kTipTime));
        for (uint32_t other : {68u, 69u, 70u, 71u, 72u}) {
            if (other == v || other == 68) continue;
            // The version field must equal the negotiated version, not just be eth/69-shaped.
            auto r = check_status(other, encoded69(v), mainnet_config(), kTipNumber, kTipTime);
            expect_rejected(r, StatusError::kVersionMismatch,
                            {"remote " + std::to_string(v), "negotiated " + std::to_string(other)});
        }
    }
    Bytes s68;
    good68().encode(s68);
    EXPECT_TRUE(check_status(68, s68, mainnet_config(), kTipNumber, kTipTime));
}

TEST(CheckStatus, ChecksTheRangeFromEth69On) {
    for (uint32_t v : {69u, 70u, 71u, 72u}) {
        StatusMessage69 s = good69();
        s.version = v;
        s.earliest = s.latest + 1;
        Bytes out;
        s.encode(out);
        expect_rejected(check_status(v, out, mainnet_config(), kTipNumber, kTipTime), StatusError::kInvalidBlockRange,
                        {"earliest"});
        s = good69();
        s.version = v;
        s.network_id = 5;
        out.clear();
        s.encode(out);
        expect_rejected(check_status(v, out, mainnet_config(), kTipNumber, kTipTime), StatusError::kNetworkIdMismatch,
                        {"remote 5"});
    }
}

TEST(CheckStatus, AStatusThatDoesNotDecodeIsAProtocolBreach) {
    Bytes s68;
    good68().encode(s68);
    struct Case {
        uint64_t version;
        Bytes payload;
    };
    Bytes trailing = encoded69(72);
    trailing.push_back(0x80);
    const Case kCases[] = {
        {70, s68},                    // the eth/68 layout on eth/70
        {72, s68},                    //
        {68, encoded69(68)},          // the eth/69 layout on eth/68
        {71, Bytes{0xc0}},            // no field at all
        {72, trailing},               // bytes after the list
        {69, Bytes{}},                // nothing
        {70, *from_hex("c3808080")},  // a 0-byte genesis hash
    };
    for (const Case& c : kCases) {
        SCOPED_TRACE(::testing::Message() << c.version << " " << to_hex(c.payload));
        auto r = check_status(c.version, c.payload, mainnet_config(), kTipNumber, kTipTime);
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error().reason, DisconnectReason::kProtocolBreach);
        EXPECT_NE(r.error().code.category(), status_category());
        EXPECT_NE(r.error().message.find("Status"), std::string::npos) << r.error().message;
    }
}

}  // namespace
}  // namespace headerd::eth
