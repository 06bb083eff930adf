#include "db/era_store.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "core/block_body.hpp"
#include "core/chain_config.hpp"
#include "core/era1.hpp"
#include "core/hex.hpp"
#include "db/import.hpp"
#include "db/test_fixture.hpp"
#include "tests/data_dir.hpp"

namespace headerd::db {
namespace {

namespace fs = std::filesystem;
using testing::TempDatadir;

const std::string kMainnet = headerd::testing::data_dir() + "/mainnet-00000-5ec1ffb8.era1";
const std::string kSepolia = headerd::testing::data_dir() + "/sepolia-00021-b8814b14.era1";

void write_file(const fs::path& path, const Bytes& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// A copy of the mainnet epoch with the body records of two blocks swapped: both records stay whole
// (their own CRCs), each now under the other's header.
struct SwappedBodies {
    Bytes file;
    uint64_t first{0};  // the lower of the two blocks
};

SwappedBodies swap_two_bodies() {
    SwappedBodies out{headerd::testing::read_file(kMainnet)};
    auto archive = era1::Archive::parse(out.file);
    std::map<size_t, size_t> by_size;  // compressed body size -> first block with that size and uncles
    for (size_t i = 0; i < archive->count(); ++i) {
        const ByteView body = archive->entries()[i].compressed_body;
        if (body.size() < 100) continue;  // no uncle
        auto [it, fresh] = by_size.emplace(body.size(), i);
        if (fresh) continue;
        const ByteView other = archive->entries()[it->second].compressed_body;
        if (std::equal(body.begin(), body.end(), other.begin())) continue;
        const auto at_other = other.data() - out.file.data();
        const auto at_body = body.data() - out.file.data();
        const Bytes a(other.begin(), other.end()), b(body.begin(), body.end());
        std::copy(b.begin(), b.end(), out.file.begin() + at_other);
        std::copy(a.begin(), a.end(), out.file.begin() + at_body);
        out.first = it->second;
        return out;
    }
    ADD_FAILURE() << "no two distinct bodies of the same compressed size";
    return out;
}

class EraStoreTest : public ::testing::Test {
  protected:
    void SetUp() override {
        datadir_.emplace("era-store");
        ChainDbOptions opts;
        opts.create_if_missing = true;
        auto db = ChainDb::open(datadir_->path().string(), opts);
        ASSERT_TRUE(db) << db.error().message;
        db_ = std::move(*db);
        auto imported = import_file(*db_, mainnet_config(), kMainnet);
        ASSERT_TRUE(imported) << imported.error().message;
        history_dir_ = (datadir_->path() / "history").string();
        auto store = EraStore::open(history_dir_);
        ASSERT_TRUE(store) << store.error().message;
        store_ = std::move(*store);
    }
    std::optional<TempDatadir> datadir_;
    std::unique_ptr<ChainDb> db_;
    std::string history_dir_;
    std::unique_ptr<EraStore> store_;
};

TEST_F(EraStoreTest, ImportedEpochIsLinkedUnderItsCanonicalNameAndServedByteForByte) {
    auto h = import_history(*db_, *store_, kMainnet);
    ASSERT_TRUE(h) << h.error().message;
    EXPECT_EQ(h->epoch, 0u);
    EXPECT_EQ(h->blocks, 8192u);
    EXPECT_EQ(h->transactions, 0u);  // mainnet's first transaction is in block 46,147
    EXPECT_FALSE(h->already_held);
    EXPECT_TRUE(fs::exists(fs::path(history_dir_) / "mainnet-00000-5ec1ffb8.era1"));
    EXPECT_EQ(store_->range(), (BlockRange{0, 8191}));

    // Reopened: the same epoch, and every body and receipt list as the archive has it.
    auto reopened = EraStore::open(history_dir_);
    ASSERT_TRUE(reopened) << reopened.error().message;
    EXPECT_EQ((*reopened)->range(), (BlockRange{0, 8191}));
    const Bytes file = headerd::testing::read_file(kMainnet);
    auto archive = era1::Archive::parse(file);
    Bytes expected, got;
    for (uint64_t n : {0ull, 1ull, 4000ull, 8191ull}) {
        got.assign({0xaa});  // appended after what is there
        ASSERT_EQ((*reopened)->append_body(n, got).value(), true);
        ASSERT_TRUE(archive->body(static_cast<size_t>(n), expected));
        EXPECT_EQ(Bytes(got.begin() + 1, got.end()), expected) << n;
        got.clear();
        ASSERT_EQ((*reopened)->append_receipts(n, got).value(), true);
        EXPECT_EQ(got, (Bytes{0xc0})) << n;
    }
    got.clear();
    EXPECT_EQ((*reopened)->append_body(8192, got).value(), false);
    EXPECT_TRUE(got.empty());

    // Importing it again changes nothing.
    auto again = import_history(*db_, *store_, kMainnet);
    ASSERT_TRUE(again);
    EXPECT_TRUE(again->already_held);
}

TEST_F(EraStoreTest, ABodyUnderTheWrongHeaderIsRefusedWithTheBlockAndFieldAndNothingStored) {
    const SwappedBodies swapped = swap_two_bodies();
    const fs::path bad = datadir_->path() / "swapped.era1";
    write_file(bad, swapped.file);
    auto h = import_history(*db_, *store_, bad.string());
    ASSERT_FALSE(h);
    EXPECT_NE(h.error().message.find("block " + std::to_string(swapped.first) +
                                     ": uncles do not match the header's "
                                     "ommers hash"),
              std::string::npos)
        << h.error().message;
    EXPECT_TRUE(store_->epochs().empty());
    EXPECT_TRUE(fs::is_empty(history_dir_));
}

TEST_F(EraStoreTest, AnEpochWhoseHeadersTheDatadirLacksIsRefused) {
    auto h = import_history(*db_, *store_, kSepolia);
    ASSERT_FALSE(h);
    EXPECT_NE(h.error().message.find("block 172032: its header is not in the datadir"), std::string::npos)
        << h.error().message;
    EXPECT_TRUE(fs::is_empty(history_dir_));
}

// The scrubber's check: a file in the store whose bodies were swapped (each record intact, its CRC
// sound) is found block by block against the headers, and neither body is served from then on.
TEST_F(EraStoreTest, ScrubFindsBodiesThatDoNotMatchTheirHeadersAndTheyAreNotServed) {
    const SwappedBodies swapped = swap_two_bodies();
    write_file(fs::path(history_dir_) / "mainnet-00000-5ec1ffb8.era1", swapped.file);  // not through import
    auto store = EraStore::open(history_dir_);
    ASSERT_TRUE(store) << store.error().message;
    Bytes out;
    ASSERT_TRUE((*store)->append_body(swapped.first, out).value());  // served until a scrub looks

    auto found = (*store)->scrub(*db_, 0, 8192);
    ASSERT_TRUE(found) << found.error().message;
    ASSERT_EQ(found->size(), 2u);
    EXPECT_EQ(found->front(), swapped.first);
    EXPECT_EQ((*store)->damaged_blocks(), *found);
    EXPECT_NE((*store)->damage(swapped.first).find("uncles do not match the header's ommers hash"), std::string::npos)
        << (*store)->damage(swapped.first);
    for (uint64_t b : *found) {
        out.clear();
        auto body = (*store)->append_body(b, out);
        ASSERT_FALSE(body);
        EXPECT_EQ(body.error().kind, ErrorKind::kCorrupt);
        EXPECT_NE(body.error().message.find("failed the scrubber's check"), std::string::npos) << body.error().message;
        EXPECT_TRUE(out.empty());
        EXPECT_FALSE((*store)->append_receipts(b, out));
    }
    out.clear();
    EXPECT_TRUE((*store)->append_body(swapped.first + 1, out).value());  // the rest is served as before
    // Blocks outside the held epochs are not judged.
    auto beyond = (*store)->scrub(*db_, 8192, 100);
    ASSERT_TRUE(beyond);
    EXPECT_TRUE(beyond->empty());
}

// A flipped byte inside a compressed record fails its CRC: found, and not served.
TEST_F(EraStoreTest, ScrubFindsARecordThatNoLongerDecompresses) {
    Bytes file = headerd::testing::read_file(kMainnet);
    auto archive = era1::Archive::parse(file);
    ASSERT_TRUE(archive);
    const ByteView body = archive->entries()[7000].compressed_body;
    file[static_cast<size_t>(body.data() - file.data()) + body.size() / 2] ^= 0x40;
    write_file(fs::path(history_dir_) / "mainnet-00000-5ec1ffb8.era1", file);
    auto store = EraStore::open(history_dir_);
    ASSERT_TRUE(store) << store.error().message;
    auto found = (*store)->scrub(*db_, 6000, 2000);
    ASSERT_TRUE(found) << found.error().message;
    EXPECT_EQ(*found, std::vector<uint64_t>{7000});
    EXPECT_NE((*store)->damage(7000).find("the body does not decompress intact"), std::string::npos)
        << (*store)->damage(7000);
}

TEST_F(EraStoreTest, TruncatedFileIsRefused) {
    Bytes file = headerd::testing::read_file(kMainnet);
    file.resize(file.size() / 2);
    const fs::path bad = datadir_->path() / "half.era1";
    write_file(bad, file);
    auto h = import_history(*db_, *store_, bad.string());
    ASSERT_FALSE(h);
    EXPECT_NE(h.error().message.find("not a valid era1 archive"), std::string::npos) << h.error().message;
    EXPECT_TRUE(fs::is_empty(history_dir_));
}

// Sepolia's epoch 21 (blocks 172032..180223) into an empty datadir: only with its accumulator root
// named, which anchors the chain at block 172032; then its bodies and receipts as for any epoch.
TEST(EraStoreLaterEpoch, AnEmptyDatadirStartsAtALaterEpochOnlyWithItsTrustedRoot) {
    TempDatadir datadir("era-later");
    ChainDbOptions opts;
    opts.create_if_missing = true;
    auto db = ChainDb::open(datadir.path().string(), opts);
    ASSERT_TRUE(db) << db.error().message;
    // geth names the file after the first 4 bytes of this root: sepolia-00021-b8814b14.era1.
    const Hash32 root = *hash_from_hex("b8814b146889489efd392d80c7ca4e418d39302e25323a55882ca8cc0ef013e3");

    auto untrusted = import_file(**db, sepolia_config(), kSepolia);
    ASSERT_FALSE(untrusted);
    EXPECT_NE(untrusted.error().message.find("block 172032: the database is empty and this epoch does not start at "
                                             "the genesis"),
              std::string::npos)
        << untrusted.error().message;
    Hash32 other = root;
    other[31] ^= 1;
    auto wrong = import_file(**db, sepolia_config(), kSepolia, {}, ImportOptions{other});
    ASSERT_FALSE(wrong);
    EXPECT_NE(wrong.error().message.find("is not the trusted root"), std::string::npos) << wrong.error().message;
    EXPECT_FALSE((*db)->head());
    EXPECT_EQ((*db)->config(), nullptr);  // nothing written, not even the network

    auto imported = import_file(**db, sepolia_config(), kSepolia, {}, ImportOptions{root});
    ASSERT_TRUE(imported) << imported.error().message;
    EXPECT_EQ(imported->imported, 8192u);
    EXPECT_EQ((*db)->first_block(), 172032u);
    EXPECT_EQ((*db)->head()->number, 180223u);
    ASSERT_TRUE(verify_chain(**db));

    auto store = EraStore::open((datadir.path() / "history").string());
    ASSERT_TRUE(store) << store.error().message;
    auto h = import_history(**db, **store, kSepolia);
    ASSERT_TRUE(h) << h.error().message;
    EXPECT_EQ(h->transactions, 93u);
    EXPECT_EQ(h->receipts, 93u);
    EXPECT_EQ((*store)->range(), (BlockRange{172032, 180223}));
    EXPECT_TRUE(fs::exists(datadir.path() / "history" / "sepolia-00021-b8814b14.era1"));
}

TEST(EraStore, RangeIsTheRunOfWholeEpochsEndingAtTheHighestAndTheOpenFilesAreBounded) {
    TempDatadir dir("era-store-range");
    fs::create_directories(dir.path());
    fs::copy_file(kMainnet, dir.path() / "mainnet-00000-5ec1ffb8.era1");
    fs::copy_file(kSepolia, dir.path() / "sepolia-00021-b8814b14.era1");
    EraStoreOptions options;
    options.max_open_files = 1;
    auto store = EraStore::open(dir.path().string(), options);
    ASSERT_TRUE(store) << store.error().message;
    EXPECT_EQ((*store)->epochs().size(), 2u);
    // Epochs 0 and 21 are not consecutive: the range is the highest alone.
    EXPECT_EQ((*store)->range(), (BlockRange{172032, 180223}));
    Bytes out;
    EXPECT_EQ((*store)->append_body(5, out).value(), true);
    EXPECT_EQ((*store)->append_body(172040, out).value(), true);
    EXPECT_EQ((*store)->append_receipts(172040, out).value(), true);
    EXPECT_EQ((*store)->append_body(8192, out).value(), false);  // epoch 1 is not held
    EXPECT_EQ((*store)->open_files(), 1u);
}

TEST(EraStore, FilesThatAreNotEra1NamesAreRefusedByName) {
    TempDatadir dir("era-store-names");
    fs::create_directories(dir.path());
    write_file(dir.path() / "notes.txt", Bytes{1, 2, 3});
    auto store = EraStore::open(dir.path().string());
    ASSERT_FALSE(store);
    EXPECT_NE(store.error().message.find("notes.txt: not an era1 file name"), std::string::npos)
        << store.error().message;
    EXPECT_EQ(era1_file_name("mainnet", 0, Hash32{0x5e, 0xc1, 0xff, 0xb8}), "mainnet-00000-5ec1ffb8.era1");
    EXPECT_EQ(era1_file_name("sepolia", 1896, Hash32{}), "sepolia-01896-00000000.era1");
}

TEST(EraStore, ADamagedRecordIsReportedWithItsBlockAndNothingAppended) {
    TempDatadir dir("era-store-damaged");
    fs::create_directories(dir.path());
    Bytes file = headerd::testing::read_file(kSepolia);
    auto archive = era1::Archive::parse(file);
    const uint64_t number = 172032 + 100;
    const ByteView body = archive->entries()[100].compressed_body;
    file[static_cast<size_t>(body.data() - file.data()) + body.size() - 1] ^= 0x20;
    write_file(dir.path() / "sepolia-00021-b8814b14.era1", file);
    auto store = EraStore::open(dir.path().string());
    ASSERT_TRUE(store) << store.error().message;
    Bytes out;
    auto r = (*store)->append_body(number, out);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().kind, ErrorKind::kCorrupt);
    EXPECT_EQ(r.error().block, number);
    EXPECT_NE(r.error().message.find("block 172132: the body does not decompress intact"), std::string::npos)
        << r.error().message;
    EXPECT_TRUE(out.empty());
    EXPECT_EQ((*store)->append_body(number + 1, out).value(), true);  // its neighbours are intact
}

}  // namespace
}  // namespace headerd::db
