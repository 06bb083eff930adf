#include "core/forkid.hpp"

#include <gtest/gtest.h>

#include <array>
#include <iterator>
#include <limits>
#include <string_view>

#include "core/hex.hpp"
#include "core/rlp.hpp"

namespace headerd {
namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

std::array<uint8_t, 4> h4(uint32_t v) {
    std::array<uint8_t, 4> out;
    store_be32(out.data(), v);
    return out;
}

// CRC32 (IEEE, reflected polynomial 0xedb88320) continued from a finished checksum, written out
// bit by bit as an independent check of the table-driven boost::crc in forkid.cpp.
constexpr uint32_t checksum_update(uint32_t crc, uint64_t fork) {
    crc = ~crc;
    for (int shift = 56; shift >= 0; shift -= 8) {
        crc ^= static_cast<uint8_t>(fork >> shift);
        for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}
static_assert(checksum_update(0xfc64ec04, 1150000) == 0x97c2c34c);  // mainnet genesis + Homestead

struct CreationCase {
    uint64_t head;
    uint64_t time;
    uint32_t hash;
    uint64_t next;
};

// test-vectors.md section H1, mainnet.
constexpr CreationCase kMainnetCreation[] = {
    {0, 0, 0xfc64ec04, 1150000},
    {1149999, 0, 0xfc64ec04, 1150000},
    {1150000, 0, 0x97c2c34c, 1920000},
    {1919999, 0, 0x97c2c34c, 1920000},
    {1920000, 0, 0x91d1f948, 2463000},
    {2462999, 0, 0x91d1f948, 2463000},
    {2463000, 0, 0x7a64da13, 2675000},
    {2674999, 0, 0x7a64da13, 2675000},
    {2675000, 0, 0x3edd5b10, 4370000},
    {4369999, 0, 0x3edd5b10, 4370000},
    {4370000, 0, 0xa00bc324, 7280000},
    {7279999, 0, 0xa00bc324, 7280000},
    {7280000, 0, 0x668db0af, 9069000},
    {9068999, 0, 0x668db0af, 9069000},
    {9069000, 0, 0x879d6e30, 9200000},
    {9199999, 0, 0x879d6e30, 9200000},
    {9200000, 0, 0xe029e991, 12244000},
    {12243999, 0, 0xe029e991, 12244000},
    {12244000, 0, 0x0eb440f6, 12965000},
    {12964999, 0, 0x0eb440f6, 12965000},
    {12965000, 0, 0xb715077d, 13773000},
    {13772999, 0, 0xb715077d, 13773000},
    {13773000, 0, 0x20c327fc, 15050000},
    {15049999, 0, 0x20c327fc, 15050000},
    {15050000, 0, 0xf0afd0e3, 1681338455},
    {20000000, 1681338454, 0xf0afd0e3, 1681338455},
    {20000000, 1681338455, 0xdce96c2d, 1710338135},
    {30000000, 1710338134, 0xdce96c2d, 1710338135},
    {30000000, 1710338135, 0x9f3d2254, 1746612311},
    {30000000, 1746022486, 0x9f3d2254, 1746612311},
    {30000000, 1746612311, 0xc376cf8b, 1764798551},
    {30000000, 1764798550, 0xc376cf8b, 1764798551},
    {30000000, 1764798551, 0x5167e2a6, 1765290071},
    {30000000, 1765290070, 0x5167e2a6, 1765290071},
    {30000000, 1765290071, 0xcba2a1c0, 1767747671},
    {30000000, 1767747670, 0xcba2a1c0, 1767747671},
    {30000000, 1767747671, 0x07c9462e, 0},
    {50000000, 2000000000, 0x07c9462e, 0},
};

// Section H1, Sepolia.
constexpr CreationCase kSepoliaCreation[] = {
    {0, 0, 0xfe3366e7, 1735371},
    {1735370, 0, 0xfe3366e7, 1735371},
    {1735371, 0, 0xb96cbd13, 1677557088},
    {1735372, 1677557087, 0xb96cbd13, 1677557088},
    {1735372, 1677557088, 0xf7f9bc08, 1706655072},
    {1735372, 1706655071, 0xf7f9bc08, 1706655072},
    {1735372, 1706655072, 0x88cf81d9, 1741159776},
    {1735372, 1741159775, 0x88cf81d9, 1741159776},
    {1735372, 1741159776, 0xed88b5fd, 1760427360},
    {1735372, 1760427359, 0xed88b5fd, 1760427360},
    {1735372, 1760427360, 0xe2ae4999, 1761017184},
    {1735372, 1761017183, 0xe2ae4999, 1761017184},
    {1735372, 1761017184, 0x56078a1e, 1761607008},
    {1735372, 1761607007, 0x56078a1e, 1761607008},
    {1735372, 1761607008, 0x268956b6, 0},
    {1735372, 2000000000, 0x268956b6, 0},
};

// Section H2: the original EIP-2124 table, when Petersburg was the last scheduled fork.
constexpr CreationCase kPetersburgEraCreation[] = {
    {0, 0, 0xfc64ec04, 1150000},       {1149999, 0, 0xfc64ec04, 1150000}, {1150000, 0, 0x97c2c34c, 1920000},
    {1919999, 0, 0x97c2c34c, 1920000}, {1920000, 0, 0x91d1f948, 2463000}, {2462999, 0, 0x91d1f948, 2463000},
    {2463000, 0, 0x7a64da13, 2675000}, {2674999, 0, 0x7a64da13, 2675000}, {2675000, 0, 0x3edd5b10, 4370000},
    {4369999, 0, 0x3edd5b10, 4370000}, {4370000, 0, 0xa00bc324, 7280000}, {7279999, 0, 0xa00bc324, 7280000},
    {7280000, 0, 0x668db0af, 0},       {7987396, 0, 0x668db0af, 0},
};

ChainConfig legacy_config() {
    ChainConfig c = mainnet_config();
    c.time_forks.clear();
    return c;
}

ChainConfig petersburg_era_config() {
    ChainConfig c = legacy_config();
    c.block_forks = {1150000, 1920000, 2463000, 2675000, 4370000, 7280000};
    return c;
}

void check_creation(const ChainConfig& c, const CreationCase* begin, const CreationCase* end) {
    for (const CreationCase* t = begin; t != end; ++t) {
        SCOPED_TRACE(::testing::Message() << c.name << " head " << t->head << " time " << t->time);
        const ForkId id = compute_fork_id(c, t->head, t->time);
        EXPECT_EQ(to_hex(id.hash), to_hex(h4(t->hash)));
        EXPECT_EQ(id.next, t->next);
    }
}

TEST(ForkId, MainnetCreation) {
    check_creation(mainnet_config(), std::begin(kMainnetCreation), std::end(kMainnetCreation));
}

TEST(ForkId, SepoliaCreation) {
    check_creation(sepolia_config(), std::begin(kSepoliaCreation), std::end(kSepoliaCreation));
}

TEST(ForkId, PetersburgEraCreation) {
    check_creation(petersburg_era_config(), std::begin(kPetersburgEraCreation), std::end(kPetersburgEraCreation));
}

TEST(ForkId, ChecksumChainMatchesBitwiseCrc) {
    const ChainConfig& c = mainnet_config();
    uint32_t crc = 0xfc64ec04;
    EXPECT_EQ(compute_fork_id(c, 0, 0).hash, h4(crc));
    // Advance one fork at a time: every head exactly at a fork passes it.
    for (uint64_t fork : c.block_forks) {
        crc = checksum_update(crc, fork);
        EXPECT_EQ(compute_fork_id(c, fork, 0).hash, h4(crc)) << fork;
    }
    for (uint64_t fork : c.time_forks) {
        crc = checksum_update(crc, fork);
        EXPECT_EQ(compute_fork_id(c, kMax, fork).hash, h4(crc)) << fork;
    }
    EXPECT_EQ(crc, 0x07c9462eu);
}

TEST(ForkId, DuplicateZeroAndGenesisTimeForksCountNothing) {
    ChainConfig messy = mainnet_config();
    messy.block_forks.insert(messy.block_forks.begin(), {0, 0});
    messy.block_forks.insert(messy.block_forks.begin() + 5, 2675000);  // a second fork at Spurious Dragon
    messy.genesis_time = 1600000000;
    messy.time_forks.insert(messy.time_forks.begin(), {1500000000, 1600000000});
    for (const CreationCase& t : kMainnetCreation) {
        EXPECT_EQ(compute_fork_id(messy, t.head, t.time), compute_fork_id(mainnet_config(), t.head, t.time))
            << t.head << " " << t.time;
    }
}

// ---- validation (section H3) --------------------------------------------------------------------

enum class Expect { kAccept, kRemoteStale, kIncompatible };

struct ValidationCase {
    bool legacy;
    uint64_t head;
    uint64_t time;
    uint32_t hash;
    uint64_t next;
    Expect expect;
};

using enum Expect;
constexpr ValidationCase kValidationCases[] = {
    // Legacy (mainnet without time forks).
    {true, 15050000, 0, 0xf0afd0e3, 0, kAccept},
    {true, 15050000, 0, 0xf0afd0e3, kMax, kAccept},
    {true, 7279999, 0, 0xa00bc324, 0, kAccept},
    {true, 7279999, 0, 0xa00bc324, 7280000, kAccept},
    {true, 7279999, 0, 0xa00bc324, kMax, kAccept},
    {true, 7280000, 0, 0xa00bc324, 7280000, kAccept},
    {true, 7987396, 0, 0xa00bc324, 7280000, kAccept},
    {true, 7987396, 0, 0x3edd5b10, 4370000, kAccept},
    {true, 7279999, 0, 0x668db0af, 0, kAccept},
    {true, 4369999, 0, 0xa00bc324, 0, kAccept},
    {true, 7987396, 0, 0xa00bc324, 0, kRemoteStale},
    {true, 7987396, 0, 0x5cddc0e1, 0, kIncompatible},
    {true, 7279999, 0, 0x5cddc0e1, 0, kIncompatible},
    {true, 7987396, 0, 0xafec6b27, 0, kIncompatible},
    {true, 88888888, 0, 0xf0afd0e3, 88888888, kIncompatible},
    {true, 7279999, 0, 0xa00bc324, 7279999, kIncompatible},
    // Mainnet.
    {false, 15050000, 0, 0xf0afd0e3, 0, kAccept},
    {false, 15050000, 0, 0xf0afd0e3, 1681338455, kAccept},
    {false, 15050000, 0, 0xf0afd0e3, kMax, kAccept},
    {false, 20000000, 1681338455, 0xf0afd0e3, 1681338455, kAccept},
    {false, 20123456, 1681338456, 0xf0afd0e3, 1681338455, kAccept},
    {false, 20000000, 1681338455, 0x20c327fc, 15050000, kAccept},
    {false, 15050000, 0, 0xdce96c2d, 0, kAccept},
    {false, 13773000, 0, 0xf0afd0e3, 0, kAccept},
    {false, 20000000, 1681338455, 0xf0afd0e3, 0, kRemoteStale},
    {false, 15050000, 0, checksum_update(0xf0afd0e3, kMax), 0, kIncompatible},
    {false, 15050000, 0, checksum_update(0xdce96c2d, kMax), 0, kIncompatible},
    {false, 888888888, 1660000000, 0xf0afd0e3, 1660000000, kIncompatible},
    {false, 19999999, 1667999999, 0xf0afd0e3, 1667999999, kIncompatible},
    {false, 20000000, 1681338455, 0xdce96c2d, 0, kAccept},
    {false, 20000000, 1681338455, 0xdce96c2d, kMax, kAccept},
    {false, 20000000, 1668000000, 0xdce96c2d, 0, kAccept},
    {false, 20000000, 1668000000, 0xdce96c2d, 1710338135, kAccept},
    {false, 20000000, 1668000000, 0xdce96c2d, kMax, kAccept},
    {false, 21000000, 1710338135, 0xdce96c2d, 1710338135, kAccept},
    {false, 21123456, 1710338136, 0xdce96c2d, 1710338135, kAccept},
    {false, 0, 0, 0x3edd5b10, 1710338135, kAccept},
    {false, 21000000, 1700000000, 0x9f3d2254, 0, kAccept},
    {false, 21000000, 1678000000, 0xc376cf8b, 0, kAccept},
    {false, 21000000, 1710338135, 0xdce96c2d, 0, kRemoteStale},
    {false, 20000000, 1681338455, checksum_update(0xdce96c2d, kMax), 0, kIncompatible},
    {false, 20000000, 1668000000, checksum_update(0x9f3d2254, kMax), 0, kIncompatible},
    {false, 20000000, 1681338455, 0x12345678, 0, kIncompatible},
    {false, 88888888, 8888888888, 0x07c9462e, 8888888888, kIncompatible},
    {false, 20999999, 1699999999, 0x71147644, 1700000000, kIncompatible},
};

TEST(ForkId, Validation) {
    const ChainConfig legacy = legacy_config();
    static_assert(std::size(kValidationCases) == 45);
    for (const ValidationCase& t : kValidationCases) {
        SCOPED_TRACE(::testing::Message()
                     << (t.legacy ? "legacy" : "mainnet") << " head " << t.head << " time " << t.time << " remote "
                     << std::hex << t.hash << std::dec << " next " << t.next);
        auto r = validate_fork_id(t.legacy ? legacy : mainnet_config(), t.head, t.time, ForkId{h4(t.hash), t.next});
        switch (t.expect) {
            case Expect::kAccept:
                EXPECT_TRUE(r) << r.error().message();
                break;
            case Expect::kRemoteStale:
                ASSERT_FALSE(r);
                EXPECT_EQ(r.error(), make_error_code(ForkIdError::kRemoteStale));
                break;
            case Expect::kIncompatible:
                ASSERT_FALSE(r);
                EXPECT_EQ(r.error(), make_error_code(ForkIdError::kLocalIncompatibleOrStale));
                break;
        }
    }
}

TEST(ForkId, OwnIdIsAlwaysAccepted) {
    for (const CreationCase& t : kMainnetCreation) {
        const ForkId id = compute_fork_id(mainnet_config(), t.head, t.time);
        EXPECT_TRUE(validate_fork_id(mainnet_config(), t.head, t.time, id)) << t.head << " " << t.time;
    }
    const ChainConfig synthetic = synthetic_config(1000, Hash32{}, 1700000000);
    for (uint64_t block = 0; block < 1000; block += 50) {
        const uint64_t time = 1700000000 + 12 * block;
        EXPECT_TRUE(validate_fork_id(synthetic, block, time, compute_fork_id(synthetic, block, time))) << block;
        // A synthetic chain and mainnet never accept each other.
        EXPECT_FALSE(validate_fork_id(mainnet_config(), 0, 0, compute_fork_id(synthetic, block, time)));
    }
}

TEST(ForkId, ErrorCategory) {
    EXPECT_STREQ(forkid_category().name(), "forkid");
    EXPECT_EQ(std::error_code(ForkIdError::kRemoteStale).category(), forkid_category());
    EXPECT_NE(make_error_code(ForkIdError::kRemoteStale).message(),
              make_error_code(ForkIdError::kLocalIncompatibleOrStale).message());
}

// ---- RLP (section H4) ---------------------------------------------------------------------------

TEST(ForkId, Encoding) {
    const struct {
        ForkId id;
        std::string_view rlp;
    } cases[] = {
        {{h4(0x00000000), 0}, "c6840000000080"},
        {{h4(0xdeadbeef), 0xbaddcafe}, "ca84deadbeef84baddcafe"},
        {{h4(0xffffffff), kMax}, "ce84ffffffff88ffffffffffffffff"},
        {{h4(0x07c9462e), 0}, "c68407c9462e80"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.rlp);
        Bytes out;
        encode(out, c.id);
        EXPECT_EQ(to_hex(out), c.rlp);

        // Decoding consumes exactly one list.
        out.push_back(0xc0);
        ByteView in{out};
        auto back = decode_fork_id(in);
        ASSERT_TRUE(back) << back.error().message();
        EXPECT_EQ(*back, c.id);
        EXPECT_EQ(to_hex(in), "c0");
    }
    EXPECT_EQ(compute_fork_id(mainnet_config(), 30000000, 1767747671), (ForkId{h4(0x07c9462e), 0}));
}

TEST(ForkId, DecodeRejectsMalformed) {
    const struct {
        std::string_view rlp;
        rlp::DecodeError error;
    } cases[] = {
        {"c58300000080", rlp::DecodeError::kUnexpectedLength},        // 3-byte hash
        {"c785000000000080", rlp::DecodeError::kUnexpectedLength},    // 5-byte hash
        {"c784000000008080", rlp::DecodeError::kTrailingBytes},       // a third element
        {"c58400000000", rlp::DecodeError::kInputTooShort},           // no next
        {"c6840000000000", rlp::DecodeError::kLeadingZeroInInteger},  // next as 0x00
        {"cf84ffffffff89ffffffffffffffffff", rlp::DecodeError::kIntegerOverflow},
        {"c2c080", rlp::DecodeError::kUnexpectedList},
        {"840000000080", rlp::DecodeError::kUnexpectedString},
        {"", rlp::DecodeError::kInputTooShort},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.rlp);
        auto bytes = from_hex(c.rlp);
        ASSERT_TRUE(bytes);
        ByteView in{*bytes};
        auto r = decode_fork_id(in);
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error(), make_error_code(c.error)) << r.error().message();
    }
}

}  // namespace
}  // namespace headerd
