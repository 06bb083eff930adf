// Keccak-256 implementations on this machine (issue: lower the serving floor, of which keccak is
// the largest part): each absorbs the same bytes, at the sizes headerd hashes (a 16-byte RLPx MAC
// step, a 540-byte header, a 4 KiB and a 64 KiB frame), and the RLPx MAC pattern (16 bytes in,
// then the running digest read without finishing the state).
//
//   cryptopp   Crypto++'s Keccak_256 (what core/keccak.cpp used)
//   own        our lane-complementing keccak-f[1600] (core/keccak_f1600.cpp) in KeccakSponge
//   plain      ours without lane complementing
//   nettle     nettle's sha3_permute (x86-64 assembly in Debian's build) in the same KeccakSponge
//   openssl    OpenSSL 3.0's SHA3-256 (EVP): the same permutation, but FIPS-202 padding, so not
//              Keccak-256; 3.0 exposes neither its permutation nor Keccak's padding (speed only)
//   gcrypt     libgcrypt's SHA3-256: the same, speed only
//
// Before measuring, every implementation that computes Keccak-256 is checked against the Keccak
// team's vectors and against Crypto++ on random inputs of every length up to 600 bytes, split at
// random points (a wrong one aborts the run).

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <cryptopp/keccak.h>
#include <gcrypt.h>
#include <nettle/sha3.h>
#include <openssl/evp.h>

#include "core/hex.hpp"
#include "core/keccak.hpp"
#include "core/keccak_f1600.hpp"

namespace {

using namespace headerd;

void nettle_permute(KeccakState& s) noexcept {
    static_assert(sizeof(sha3_state) == sizeof(KeccakState));
    sha3_permute(reinterpret_cast<sha3_state*>(s.data()));
}

using OwnSponge = KeccakSponge<keccak_f1600_lc>;
using PlainSponge = KeccakSponge<keccak_f1600_plain>;
using NettleSponge = KeccakSponge<nettle_permute>;

Hash32 with_cryptopp(ByteView data) {
    CryptoPP::Keccak_256 h;
    Hash32 out;
    h.CalculateDigest(out.data(), data.data(), data.size());
    return out;
}

template <class Sponge>
Hash32 with_sponge(ByteView data) {
    Sponge s;
    s.update(data);
    return s.digest();
}

void check(bool ok, const std::string& what) {
    if (ok) return;
    std::fprintf(stderr, "keccak_benchmark: %s\n", what.c_str());
    std::exit(1);
}

// The Keccak team's Keccak-256 vectors (ShortMsgKAT_256 of the submission, r = 1088, c = 512):
// the empty message, one byte 0xCC, and "abc" (the vector every Ethereum library checks).
void check_vectors() {
    struct Vector {
        Bytes msg;
        const char* digest;
    };
    const std::vector<Vector> vectors = {
        {{}, "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"},
        {{0xcc}, "eead6dbfc7340a56caedc044696a168870549a6a7f6f56961e84a54bd9970b8a"},
        {{'a', 'b', 'c'}, "4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45"},
    };
    for (const auto& v : vectors) {
        check(to_hex(with_cryptopp(v.msg)) == v.digest, "cryptopp fails a vector");
        check(to_hex(with_sponge<OwnSponge>(v.msg)) == v.digest, "own fails a vector");
        check(to_hex(with_sponge<NettleSponge>(v.msg)) == v.digest, "nettle fails a vector");
        check(to_hex(with_sponge<PlainSponge>(v.msg)) == v.digest, "plain fails a vector");
        check(to_hex(keccak256(v.msg)) == v.digest, "core/keccak.hpp fails a vector");
    }
    std::mt19937_64 rng(1);
    for (size_t len = 0; len <= 600; ++len) {
        Bytes msg(len);
        for (auto& b : msg) b = static_cast<uint8_t>(rng());
        const Hash32 want = with_cryptopp(msg);
        const size_t cut = len == 0 ? 0 : rng() % len;
        OwnSponge own;
        NettleSponge nettle;
        Keccak256 ours;
        for (ByteView part : {ByteView(msg).first(cut), ByteView(msg).subspan(cut)}) {
            own.update(part);
            nettle.update(part);
            ours.update(part);
        }
        check(own.digest() == want, "own differs from Crypto++ at length " + std::to_string(len));
        check(nettle.digest() == want, "nettle differs from Crypto++ at length " + std::to_string(len));
        check(ours.digest() == want, "core/keccak.hpp differs from Crypto++ at length " + std::to_string(len));
    }
}

Bytes input(size_t n) {
    Bytes b(n);
    for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(i * 31 + 7);
    return b;
}

void set_bytes(benchmark::State& state, size_t n) {
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(n));
}

void BM_Cryptopp(benchmark::State& state) {
    const Bytes data = input(static_cast<size_t>(state.range(0)));
    for (auto _ : state) benchmark::DoNotOptimize(with_cryptopp(data));
    set_bytes(state, data.size());
}

template <class Sponge>
void BM_Sponge(benchmark::State& state) {
    const Bytes data = input(static_cast<size_t>(state.range(0)));
    for (auto _ : state) benchmark::DoNotOptimize(with_sponge<Sponge>(data));
    set_bytes(state, data.size());
}

void BM_Core(benchmark::State& state) {
    const Bytes data = input(static_cast<size_t>(state.range(0)));
    for (auto _ : state) benchmark::DoNotOptimize(keccak256(data));
    set_bytes(state, data.size());
}

void BM_OpensslSha3(benchmark::State& state) {
    const Bytes data = input(static_cast<size_t>(state.range(0)));
    EVP_MD* md = EVP_MD_fetch(nullptr, "SHA3-256", nullptr);
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    Hash32 out;
    for (auto _ : state) {
        unsigned len = 0;
        EVP_DigestInit_ex(ctx, md, nullptr);
        EVP_DigestUpdate(ctx, data.data(), data.size());
        EVP_DigestFinal_ex(ctx, out.data(), &len);
        benchmark::DoNotOptimize(out);
    }
    EVP_MD_CTX_free(ctx);
    EVP_MD_free(md);
    set_bytes(state, data.size());
}

void BM_GcryptSha3(benchmark::State& state) {
    const Bytes data = input(static_cast<size_t>(state.range(0)));
    Hash32 out;
    for (auto _ : state) {
        gcry_md_hash_buffer(GCRY_MD_SHA3_256, out.data(), data.data(), data.size());
        benchmark::DoNotOptimize(out);
    }
    set_bytes(state, data.size());
}

// RLPx's MAC step (p2p/rlpx/frame.cpp): 16 bytes in, then the running digest, the state kept.
void BM_MacStepCryptopp(benchmark::State& state) {
    CryptoPP::Keccak_256 mac;
    const Bytes block = input(16);
    Hash32 out;
    for (auto _ : state) {
        mac.Update(block.data(), block.size());
        CryptoPP::Keccak_256 copy = mac;
        copy.Final(out.data());
        benchmark::DoNotOptimize(out);
    }
}

template <class Sponge>
void BM_MacStep(benchmark::State& state) {
    Sponge mac;
    const Bytes block = input(16);
    for (auto _ : state) {
        mac.update(block);
        benchmark::DoNotOptimize(mac.digest());
    }
}

void BM_MacStepCore(benchmark::State& state) {
    Keccak256 mac;
    const Bytes block = input(16);
    for (auto _ : state) {
        mac.update(block);
        benchmark::DoNotOptimize(mac.digest());
    }
}

#define SIZES Arg(16)->Arg(540)->Arg(4096)->Arg(65536)
BENCHMARK(BM_Cryptopp)->Name("keccak256/cryptopp")->SIZES;
BENCHMARK(BM_Sponge<OwnSponge>)->Name("keccak256/own")->SIZES;
BENCHMARK(BM_Sponge<PlainSponge>)->Name("keccak256/plain")->SIZES;
BENCHMARK(BM_Sponge<NettleSponge>)->Name("keccak256/nettle")->SIZES;
BENCHMARK(BM_Core)->Name("keccak256/core")->SIZES;
BENCHMARK(BM_OpensslSha3)->Name("sha3_256/openssl")->SIZES;
BENCHMARK(BM_GcryptSha3)->Name("sha3_256/gcrypt")->SIZES;
BENCHMARK(BM_MacStepCryptopp)->Name("mac_step/cryptopp");
BENCHMARK(BM_MacStep<OwnSponge>)->Name("mac_step/own");
BENCHMARK(BM_MacStep<PlainSponge>)->Name("mac_step/plain");
BENCHMARK(BM_MacStep<NettleSponge>)->Name("mac_step/nettle");
BENCHMARK(BM_MacStepCore)->Name("mac_step/core");

}  // namespace

int main(int argc, char** argv) {
    check_vectors();
    if (!gcry_check_version(GCRYPT_VERSION)) return 1;
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
