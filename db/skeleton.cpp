// The skeleton of a sync: headers verified downwards from a trusted head that do not link to the
// canonical chain yet (docs/sync.md, docs/db_schema.md). They live under geth's skeleton keys,
// "S" + be64(number), apart from every key a reader of the canonical chain looks at, and move into
// the canonical chain only once they link to it.

#include <algorithm>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <leveldb/write_batch.h>

#include "core/block_header.hpp"
#include "core/hex.hpp"
#include "core/rlp.hpp"
#include "db/chain_db.hpp"
#include "db/chain_db_impl.hpp"
#include "db/schema.hpp"

namespace headerd::db {
namespace {

Bytes encode_skeleton(const Skeleton& s) {
    Bytes payload;
    rlp::encode(payload, s.head);
    rlp::encode(payload, s.head_hash);
    rlp::encode(payload, s.tail);
    rlp::encode(payload, s.tail_parent);
    Bytes out;
    rlp::encode_header(out, {true, payload.size()});
    out.insert(out.end(), payload.begin(), payload.end());
    return out;
}

Result<Skeleton> decode_skeleton(ByteView in) {
    auto list = rlp::decode_list(in);
    if (!list) return list.error();
    if (!in.empty()) return rlp::DecodeError::kTrailingBytes;
    ByteView p = *list;
    auto head = rlp::decode_uint64(p);
    if (!head) return head.error();
    auto head_hash = rlp::decode_hash(p);
    if (!head_hash) return head_hash.error();
    auto tail = rlp::decode_uint64(p);
    if (!tail) return tail.error();
    auto tail_parent = rlp::decode_hash(p);
    if (!tail_parent) return tail_parent.error();
    if (!p.empty()) return rlp::DecodeError::kTrailingBytes;
    return Skeleton{*head, *head_hash, *tail, *tail_parent};
}

leveldb::WriteOptions synced() {
    leveldb::WriteOptions wo;
    wo.sync = true;
    return wo;
}

}  // namespace

Outcome<void> ChainDb::Impl::load_skeleton() {
    auto v = get(slice(schema::kSkeletonKey));
    if (!v) return v.error();
    if (!*v) return {};
    auto s = decode_skeleton(view(**v));
    if (!s || s->tail > s->head) {
        return make_error(
            fmt::format("{}: the stored skeleton bounds are unreadable ({}); delete the datadir's "
                        "skeleton with a new sync target or start from an empty datadir",
                        chaindata, s ? "tail above head" : s.error().message()));
    }
    skeleton = *s;
    return {};
}

Outcome<void> ChainDb::Impl::write_skeleton(leveldb::WriteBatch& batch, const std::optional<Skeleton>& next,
                                            bool durable) {
    leveldb::WriteOptions wo;
    wo.sync = durable;
    leveldb::Status st = write(wo, &batch);
    if (!st.ok()) return make_error(fmt::format("LevelDB write in {}: {}", chaindata, st.ToString()));
    std::unique_lock lock(mu);
    skeleton = next;
    return {};
}

std::optional<Skeleton> ChainDb::skeleton() const {
    std::shared_lock lock(impl_->mu);
    return impl_->skeleton;
}

namespace {

// Deletes "S" keys [lo, hi] into `batch`.
void delete_skeleton_range(leveldb::WriteBatch& batch, uint64_t lo, uint64_t hi) {
    for (uint64_t n = lo; n <= hi; ++n) {
        batch.Delete(slice(schema::skeleton_key(n)));
        if (n == hi) break;  // hi may be UINT64_MAX
    }
}

}  // namespace

Outcome<void> ChainDb::skeleton_begin(const SkeletonHeader& head) {
    auto peek = peek_header(head.rlp);
    if (!peek) return make_error(fmt::format("skeleton head {}: {}", head.number, peek.error().message()));
    if (peek->number != head.number) {
        return make_error(fmt::format("skeleton head says block {}, expected {}", peek->number, head.number));
    }
    leveldb::WriteBatch batch;
    if (impl_->skeleton) delete_skeleton_range(batch, impl_->skeleton->tail, impl_->skeleton->head);
    const Skeleton s{head.number, head.hash, head.number, peek->parent_hash};
    batch.Put(slice(schema::skeleton_key(head.number)), slice(head.rlp));
    batch.Put(slice(schema::kSkeletonKey), slice(encode_skeleton(s)));
    return impl_->write_skeleton(batch, s);
}

Outcome<void> ChainDb::skeleton_extend(std::span<const SkeletonHeader> headers, bool durable) {
    if (headers.empty()) return {};
    if (!impl_->skeleton) return make_error("skeleton_extend: there is no skeleton");
    Skeleton s = *impl_->skeleton;
    if (s.tail == 0) return make_error("skeleton_extend: the skeleton already reaches the genesis");
    leveldb::WriteBatch batch;
    uint64_t expect_number = s.tail - 1;
    Hash32 expect_hash = s.tail_parent;
    for (const SkeletonHeader& h : headers) {
        if (h.number != expect_number || h.hash != expect_hash) {
            return make_error(fmt::format("skeleton_extend: got block {} {}, expected block {} {}", h.number,
                                          to_hex0x(h.hash), expect_number, to_hex0x(expect_hash)));
        }
        auto peek = peek_header(h.rlp);
        if (!peek || peek->number != h.number) {
            return make_error(fmt::format("skeleton_extend: block {} is not a header of that number", h.number));
        }
        // The hash is the caller's; the bytes stored must be what it was computed from.
        if (header_hash(h.rlp) != h.hash) {
            return make_error(fmt::format("skeleton_extend: block {} does not hash to {}", h.number, to_hex0x(h.hash)));
        }
        batch.Put(slice(schema::skeleton_key(h.number)), slice(h.rlp));
        s.tail = h.number;
        s.tail_parent = peek->parent_hash;
        if (h.number == 0) {
            if (&h != &headers.back()) return make_error("skeleton_extend: headers below the genesis");
            break;
        }
        expect_number = h.number - 1;
        expect_hash = peek->parent_hash;
    }
    batch.Put(slice(schema::kSkeletonKey), slice(encode_skeleton(s)));
    return impl_->write_skeleton(batch, s, durable);
}

Outcome<SkeletonLink> ChainDb::skeleton_link_point() const {
    const std::optional<Skeleton> s = skeleton();
    if (!s) return make_error("there is no skeleton to link");
    const std::optional<Head> head = this->head();
    if (const auto anchor = this->anchor(); anchor && s->tail <= anchor->number) {
        return make_error(
            fmt::format("the skeleton reaches block {}, at or below block {} where this datadir's chain starts (it "
                        "was imported from a trusted epoch; docs/history.md): headerd does not extend such a chain "
                        "downwards",
                        s->tail, anchor->number));
    }
    if (s->tail == 0) {
        std::string rlp;
        leveldb::Status st = impl_->ldb->Get(leveldb::ReadOptions(), slice(schema::skeleton_key(0)), &rlp);
        if (!st.ok()) {
            return make_error(
                fmt::format("LevelDB read of skeleton block 0 in {}: {}", impl_->chaindata, st.ToString()));
        }
        const Hash32 genesis = header_hash(view(rlp));
        if (impl_->config && genesis != impl_->config->genesis_hash) {
            return make_error(
                fmt::format("the headers below the trusted head lead to genesis {}, but network {} has "
                            "genesis {}: the head is not on this network",
                            to_hex0x(genesis), impl_->config->name, to_hex0x(impl_->config->genesis_hash)));
        }
        if (head && ancient_items() > 0) {
            return make_error(
                "the skeleton replaces the whole chain, whose start is frozen; headerd never rewrites "
                "the freezer");
        }
        return SkeletonLink{true, head ? head->number + 1 : 0};
    }
    const uint64_t link = s->tail - 1;
    if (!head || link > head->number) return SkeletonLink{};
    auto canonical = canonical_hash(link);
    if (!canonical) return canonical.error();
    if (!*canonical || **canonical != s->tail_parent) return SkeletonLink{};
    if (s->tail < ancient_items()) {
        return make_error(
            fmt::format("the new chain forks from the stored one at block {}, below the freezer's head "
                        "{}; headerd never rewrites the freezer",
                        link, ancient_items() - 1));
    }
    return SkeletonLink{true, head->number - link};
}

Outcome<Head> ChainDb::skeleton_link(const LinkOptions& options) {
    auto point = skeleton_link_point();
    if (!point) return point.error();
    if (!point->linked) return make_error("the skeleton does not link to the canonical chain yet");
    const Skeleton s = *skeleton();
    const std::optional<Head> old_head = head();

    // Total difficulty at the link point: the head's, less the difficulty of what is replaced.
    U256 td = 0;
    if (s.tail > 0) {
        td = old_head->total_difficulty;
        if (point->replaced > 0) {
            ItemBuffer replaced;
            if (auto r = header_range(s.tail, point->replaced, Order::kAscending, replaced); !r) return r.error();
            for (size_t i = 0; i < replaced.size(); ++i) {
                auto h = decode_block_header(replaced.item(i));
                if (!h) return make_error(fmt::format("stored header {} is corrupt", s.tail + i));
                td -= h->difficulty;
            }
        }
    }

    const uint64_t batch_size = std::max<uint64_t>(1, options.batch);
    const uint64_t total = s.head - s.tail + 1;
    std::vector<std::string> rlps;
    std::vector<Hash32> hashes;
    Head new_head;
    bool first_batch = true;
    for (uint64_t from = s.tail; from <= s.head;) {
        const uint64_t to = std::min(s.head, from + batch_size - 1);
        // Read [from, to] and the header above `to`, whose parent hash is `to`'s hash.
        rlps.clear();
        {
            std::unique_ptr<leveldb::Iterator> it(impl_->ldb->NewIterator(leveldb::ReadOptions()));
            const uint64_t last = to == s.head ? to : to + 1;
            uint64_t n = from;
            for (it->Seek(slice(schema::skeleton_key(from))); it->Valid() && n <= last; it->Next(), ++n) {
                const leveldb::Slice k = it->key();
                if (k.size() != schema::SkeletonKey{}.size() ||
                    static_cast<uint8_t>(k[0]) != schema::kSkeletonHeaderPrefix ||
                    load_be64(reinterpret_cast<const uint8_t*>(k.data()) + 1) != n) {
                    break;
                }
                rlps.emplace_back(it->value().data(), it->value().size());
            }
            if (!it->status().ok()) {
                return make_error(fmt::format("LevelDB scan in {}: {}", impl_->chaindata, it->status().ToString()));
            }
            if (rlps.size() != last - from + 1) {
                return make_error(
                    fmt::format("LevelDB in {}: skeleton header {} is missing", impl_->chaindata, from + rlps.size()));
            }
        }
        hashes.assign(to - from + 1, Hash32{});
        for (uint64_t n = from; n <= to; ++n) {
            if (n == s.head) {
                hashes[n - from] = s.head_hash;
            } else {
                auto above = peek_header(view(rlps[n - from + 1]));
                if (!above) return make_error(fmt::format("skeleton header {} is corrupt", n + 1));
                hashes[n - from] = above->parent_hash;
            }
        }

        leveldb::WriteBatch batch;
        uint8_t numbuf[8];
        uint64_t timestamp = 0;
        for (uint64_t n = from; n <= to; ++n) {
            const ByteView rlp = view(rlps[n - from]);
            auto h = decode_block_header(rlp);
            if (!h || h->number != n) return make_error(fmt::format("skeleton header {} is corrupt", n));
            td += h->difficulty;
            timestamp = h->timestamp;
            const Hash32& hash = hashes[n - from];
            store_be64(numbuf, n);
            batch.Put(slice(schema::header_key(n, hash)), slice(rlp));
            batch.Put(slice(schema::canonical_key(n)), slice(hash));
            batch.Put(slice(schema::number_key(hash)), leveldb::Slice(reinterpret_cast<const char*>(numbuf), 8));
            batch.Delete(slice(schema::skeleton_key(n)));
        }
        const bool reorg = first_batch && point->replaced > 0;
        if (reorg && old_head->number > to) {
            // The replaced chain's canonical entries above the new head go; its headers stay.
            for (uint64_t n = to + 1; n <= old_head->number; ++n) batch.Delete(slice(schema::canonical_key(n)));
        }
        new_head = Head{to, hashes.back(), td, timestamp};
        Bytes td_rlp;
        rlp::encode(td_rlp, td);
        batch.Put(slice(schema::kLastHeaderKey), slice(new_head.hash));
        batch.Put(slice(schema::kHeadTdKey), slice(td_rlp));
        std::optional<Skeleton> rest;
        if (to == s.head) {
            batch.Delete(slice(schema::kSkeletonKey));
        } else {
            rest = Skeleton{s.head, s.head_hash, to + 1, new_head.hash};
            batch.Put(slice(schema::kSkeletonKey), slice(encode_skeleton(*rest)));
        }
        // A reorg overwrites canonical entries readers may be scanning: they wait for it. Extending
        // the chain writes only above the head, so readers go on while it is written.
        std::unique_lock lock(impl_->mu, std::defer_lock);
        if (reorg) lock.lock();
        leveldb::Status st = impl_->write(synced(), &batch);
        if (!st.ok()) return make_error(fmt::format("LevelDB write in {}: {}", impl_->chaindata, st.ToString()));
        if (!reorg) lock.lock();
        if (!impl_->head) impl_->kv_low = from;
        impl_->head = new_head;
        impl_->skeleton = rest;
        // What readers kept of the replaced chain is not to be used again.
        if (reorg) impl_->generation.fetch_add(1, std::memory_order_acq_rel);
        lock.unlock();
        if (options.on_progress) options.on_progress(to - s.tail + 1, total);
        first_batch = false;
        from = to + 1;
    }
    return new_head;
}

Outcome<void> ChainDb::skeleton_drop() {
    if (!impl_->skeleton) return {};
    leveldb::WriteBatch batch;
    delete_skeleton_range(batch, impl_->skeleton->tail, impl_->skeleton->head);
    batch.Delete(slice(schema::kSkeletonKey));
    return impl_->write_skeleton(batch, std::nullopt);
}

}  // namespace headerd::db
