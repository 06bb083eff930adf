#pragma once

// One era1 epoch of tests/data held in memory, as the history tests need it: each block's header
// RLP, body and receipt list (the consensus form era1 stores), by block number from `start`.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/bytes.hpp"
#include "core/era1.hpp"
#include "tests/data_dir.hpp"
#include "tests/reference_chain.hpp"  // read_file

namespace headerd::testing {

struct EraEpoch {
    Bytes file;
    std::vector<Bytes> headers, bodies, receipts;
    uint64_t start{0};

    // `name`: a file of tests/data. A file that does not parse fails the test using it.
    explicit EraEpoch(const std::string& name) : file(read_file(data_dir() + "/" + name)) {
        auto archive = era1::Archive::parse(file);
        EXPECT_TRUE(archive) << name;
        if (!archive) return;
        start = archive->start_number();
        for (size_t i = 0; i < archive->count(); ++i) {
            Bytes h, b, r;
            EXPECT_TRUE(archive->header(i, h) && archive->body(i, b) && archive->receipts(i, r)) << name << " " << i;
            headers.push_back(std::move(h));
            bodies.push_back(std::move(b));
            receipts.push_back(std::move(r));
        }
    }
    uint64_t head() const { return start + headers.size() - 1; }
    size_t at(uint64_t number) const { return static_cast<size_t>(number - start); }
};

}  // namespace headerd::testing
