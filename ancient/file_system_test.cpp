#include "ancient/file_system.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "ancient/test_util.hpp"

namespace headerd::ancient {
namespace {

using ::testing::HasSubstr;
using testing::read_file;
using testing::TempDir;
using ::testing::UnorderedElementsAre;

Bytes bytes_of(std::string_view s) { return Bytes(s.begin(), s.end()); }

std::unique_ptr<File> must_open(FileSystem& fs, const std::string& path, OpenMode mode) {
    auto f = fs.open(path, mode);
    EXPECT_TRUE(f) << (f ? "" : f.error().message);
    return f ? std::move(*f) : nullptr;
}

TEST(PosixFileSystem, WriteReadTruncateSize) {
    TempDir dir;
    PosixFileSystem fs;
    auto f = must_open(fs, dir / "a", OpenMode::kReadWrite);
    ASSERT_TRUE(f);
    ASSERT_TRUE(f->write_at(0, as_bytes("hello world")));
    ASSERT_TRUE(f->write_at(6, as_bytes("WORLD!")));
    ASSERT_TRUE(f->sync());
    EXPECT_EQ(f->size().value(), 12u);
    EXPECT_EQ(read_file(dir / "a"), bytes_of("hello WORLD!"));

    Bytes buf(5);
    auto n = f->read_at(6, buf);
    ASSERT_TRUE(n);
    EXPECT_EQ(*n, 5u);
    EXPECT_EQ(buf, bytes_of("WORLD"));
    // A read past the end returns what there is.
    n = f->read_at(10, buf);
    ASSERT_TRUE(n);
    EXPECT_EQ(*n, 2u);
    EXPECT_EQ(f->read_at(100, buf).value(), 0u);

    ASSERT_TRUE(f->truncate(5));
    EXPECT_EQ(f->size().value(), 5u);
    EXPECT_EQ(read_file(dir / "a"), bytes_of("hello"));
}

TEST(PosixFileSystem, OpenModes) {
    TempDir dir;
    PosixFileSystem fs;
    auto missing = fs.open(dir / "missing", OpenMode::kRead);
    ASSERT_FALSE(missing);
    EXPECT_THAT(missing.error().message, HasSubstr(dir / "missing"));
    EXPECT_THAT(missing.error().message, HasSubstr("No such file"));

    testing::write_file(dir / "b", as_bytes("keep"));
    auto rw = must_open(fs, dir / "b", OpenMode::kReadWrite);
    EXPECT_EQ(rw->size().value(), 4u);
    auto ro = must_open(fs, dir / "b", OpenMode::kRead);
    auto w = ro->write_at(0, as_bytes("x"));
    ASSERT_FALSE(w);
    EXPECT_THAT(w.error().message, HasSubstr(dir / "b"));
    EXPECT_THAT(w.error().message, HasSubstr("offset 0"));
    auto tr = must_open(fs, dir / "b", OpenMode::kTruncate);
    EXPECT_EQ(tr->size().value(), 0u);
    EXPECT_EQ(tr->path(), dir / "b");
}

TEST(PosixFileSystem, DirectoryOperations) {
    TempDir dir;
    PosixFileSystem fs;
    const std::string nested = dir / "x/y/z";
    ASSERT_TRUE(fs.mkdir(nested));
    ASSERT_TRUE(fs.mkdir(nested));  // existing is fine
    EXPECT_TRUE(fs.exists(nested).value());
    ASSERT_TRUE(must_open(fs, nested + "/one", OpenMode::kReadWrite));
    ASSERT_TRUE(must_open(fs, nested + "/two", OpenMode::kReadWrite));
    EXPECT_THAT(fs.list(nested).value(), UnorderedElementsAre("one", "two"));
    ASSERT_TRUE(fs.rename(nested + "/one", nested + "/three"));
    EXPECT_FALSE(fs.exists(nested + "/one").value());
    ASSERT_TRUE(fs.remove(nested + "/two"));
    EXPECT_THAT(fs.list(nested).value(), UnorderedElementsAre("three"));
    ASSERT_TRUE(fs.sync_dir(nested));
    auto gone = fs.remove(nested + "/two");
    ASSERT_FALSE(gone);
    EXPECT_THAT(gone.error().message, HasSubstr(nested + "/two"));
    EXPECT_FALSE(fs.list(dir / "nope"));
}

TEST(FaultInjectingFileSystem, CountsReadsWritesSyncs) {
    TempDir dir;
    PosixFileSystem posix;
    FaultInjectingFileSystem fs(posix);
    auto f = must_open(fs, dir / "a", OpenMode::kReadWrite);
    ASSERT_TRUE(f->write_at(0, as_bytes("abc")));
    ASSERT_TRUE(f->write_at(3, as_bytes("def")));
    ASSERT_TRUE(f->sync());
    ASSERT_TRUE(fs.sync_dir(dir.path()));
    Bytes buf(6);
    ASSERT_TRUE(f->read_at(0, buf));
    EXPECT_EQ(fs.reads(), 1u);
    EXPECT_EQ(fs.writes(), 2u);
    EXPECT_EQ(fs.syncs(), 2u);
    EXPECT_EQ(fs.mutations(), 5u);  // create, 2 writes, 2 syncs
    fs.reset_counters();
    EXPECT_EQ(fs.reads() + fs.writes() + fs.syncs() + fs.mutations(), 0u);
}

TEST(FaultInjectingFileSystem, FailWriteAndShortWrite) {
    TempDir dir;
    PosixFileSystem posix;
    FaultInjectingFileSystem fs(posix);
    auto f = must_open(fs, dir / "a", OpenMode::kReadWrite);
    fs.fail_write(fs.writes() + 2);
    ASSERT_TRUE(f->write_at(0, as_bytes("0123")));
    auto failed = f->write_at(4, as_bytes("4567"));
    ASSERT_FALSE(failed);
    EXPECT_THAT(failed.error().message, HasSubstr(dir / "a"));
    EXPECT_THAT(failed.error().message, HasSubstr("offset 4"));
    EXPECT_EQ(read_file(dir / "a"), bytes_of("0123"));  // nothing of the failed write

    fs.short_write(fs.writes() + 1, 2);
    auto short_write = f->write_at(4, as_bytes("4567"));
    ASSERT_FALSE(short_write);
    EXPECT_THAT(short_write.error().message, HasSubstr("2 of 4 bytes"));
    EXPECT_EQ(read_file(dir / "a"), bytes_of("012345"));
    ASSERT_TRUE(f->write_at(6, as_bytes("67")));  // faults fire once
    EXPECT_EQ(read_file(dir / "a"), bytes_of("01234567"));
}

TEST(FaultInjectingFileSystem, FailSync) {
    TempDir dir;
    PosixFileSystem posix;
    FaultInjectingFileSystem fs(posix);
    auto f = must_open(fs, dir / "a", OpenMode::kReadWrite);
    fs.fail_sync(fs.syncs() + 1);
    auto r = f->sync();
    ASSERT_FALSE(r);
    EXPECT_THAT(r.error().message, HasSubstr("fdatasync " + dir / "a"));
    EXPECT_TRUE(f->sync());
    fs.fail_sync(fs.syncs() + 1);
    EXPECT_FALSE(fs.sync_dir(dir.path()));
}

TEST(FaultInjectingFileSystem, CrashStopsEveryMutationButNotReads) {
    TempDir dir;
    PosixFileSystem posix;
    FaultInjectingFileSystem fs(posix);
    auto f = must_open(fs, dir / "a", OpenMode::kReadWrite);
    ASSERT_TRUE(f->write_at(0, as_bytes("abc")));
    fs.crash_at(fs.mutations() + 2);
    ASSERT_TRUE(f->write_at(3, as_bytes("d")));
    EXPECT_FALSE(fs.crashed());
    EXPECT_FALSE(f->write_at(4, as_bytes("e")));
    EXPECT_TRUE(fs.crashed());
    EXPECT_FALSE(f->sync());
    EXPECT_FALSE(f->truncate(0));
    EXPECT_FALSE(fs.open(dir / "b", OpenMode::kReadWrite));
    EXPECT_FALSE(fs.remove(dir / "a"));
    EXPECT_FALSE(fs.mkdir(dir / "sub"));
    EXPECT_FALSE(fs.sync_dir(dir.path()));
    Bytes buf(4);
    EXPECT_EQ(f->read_at(0, buf).value(), 4u);
    EXPECT_EQ(read_file(dir / "a"), bytes_of("abcd"));
    EXPECT_FALSE(fs.exists(dir / "b").value());
}

TEST(FaultInjectingFileSystem, DropUnsyncedDataModelsAPowerCut) {
    TempDir dir;
    PosixFileSystem posix;
    testing::write_file(dir / "old", as_bytes("old content"));
    testing::write_file(dir / "doomed", as_bytes("doomed"));
    FaultInjectingFileSystem fs(posix);

    // A file synced, then written again: back to the synced bytes.
    auto a = must_open(fs, dir / "a", OpenMode::kReadWrite);
    ASSERT_TRUE(a->write_at(0, as_bytes("synced")));
    ASSERT_TRUE(a->sync());
    ASSERT_TRUE(fs.sync_dir(dir.path()));
    ASSERT_TRUE(a->write_at(6, as_bytes(" and not")));
    // A file created and synced, but its directory not: gone.
    auto b = must_open(fs, dir / "b", OpenMode::kReadWrite);
    ASSERT_TRUE(b->write_at(0, as_bytes("b")));
    ASSERT_TRUE(b->sync());
    // A file that existed before, truncated without sync: the truncation is undone.
    auto old = must_open(fs, dir / "old", OpenMode::kReadWrite);
    ASSERT_TRUE(old->truncate(3));
    // A removal without a directory sync: the file comes back.
    ASSERT_TRUE(fs.remove(dir / "doomed"));
    fs.crash_at(fs.mutations() + 1);
    EXPECT_FALSE(a->sync());
    a.reset();
    b.reset();
    old.reset();

    ASSERT_TRUE(fs.drop_unsynced_data());
    EXPECT_FALSE(fs.crashed());
    EXPECT_EQ(read_file(dir / "a"), bytes_of("synced"));
    EXPECT_FALSE(posix.exists(dir / "b").value());
    EXPECT_EQ(read_file(dir / "old"), bytes_of("old content"));
    EXPECT_EQ(read_file(dir / "doomed"), bytes_of("doomed"));
}

}  // namespace
}  // namespace headerd::ancient
