// Test tool of tests/dns_discovery_test.sh: makes DNS node lists (EIP-1459) for dnsmasq to serve and
// reads them back over DNS through the real resolver (disc/dns_resolver.hpp). Test-only: it has no
// key management; every key is a fixed test key, and every record is a loopback address (zone) or one the test
// gives (zone-of, the records of headerd nodes it started on 127.0.0.1).
//
//   dns_tree_tool zone CONF EXPECTED
//       Makes two trees, nodes.dnsdisc.test (30 records, 127.0.0.x, two levels of branches) linking
//       linked.dnsdisc.test (25 records, 127.0.1.x); writes dnsmasq txt-record lines of both to CONF
//       and every record's text to EXPECTED (sorted); prints the first tree's enrtree:// URL.
//   dns_tree_tool zone-of CONF DOMAIN ENR_FILE
//       Makes one tree at DOMAIN of the records in ENR_FILE (text forms, one per line), writes its
//       dnsmasq txt-record lines to CONF and prints its enrtree:// URL.
//   dns_tree_tool sync SERVER URL
//       Downloads the tree at URL and, through its links, every tree it reaches (each domain once),
//       from SERVER (IPv4:port) only. Prints "tree DOMAIN seq N enrs N links N" per tree, then
//       every record's text.
//   dns_tree_tool iterate SERVER URL CALLS SEED
//       Calls DnsClient::next() CALLS times (walk seeded by SEED) and prints the distinct records.
//
// Exit 0 on success, 1 with the failing name and reason on stderr.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "disc/dns_client.hpp"
#include "disc/dns_resolver.hpp"
#include "disc/dnsdisc.hpp"

using namespace headerd;
using namespace headerd::disc;

namespace {

int usage() {
    std::cerr << "usage: dns_tree_tool zone CONF EXPECTED | zone-of CONF DOMAIN ENR_FILE | sync SERVER URL | iterate "
                 "SERVER URL CALLS SEED\n";
    return 2;
}

rlpx::PrivateKey test_key(uint8_t tag, uint8_t n) {
    Bytes b(32, tag);
    b[31] = n;
    return *rlpx::PrivateKey::from_bytes(b);
}

std::vector<Enr> records(uint8_t subnet, size_t count) {
    std::vector<Enr> out;
    for (size_t i = 0; i < count; ++i) {
        const auto n = static_cast<uint8_t>(i + 1);
        out.push_back(*EnrBuilder(1).ip({127, 0, subnet, n}).tcp(30303).udp(30303).sign(test_key(subnet + 1, n)));
    }
    return out;
}

// One dnsmasq txt-record line. Quoted, so that the commas of a branch stay in one string (dnsmasq
// splits unquoted text at commas); dnsmasq cuts a string above 255 characters into several
// character-strings itself, which the resolver joins again.
std::string txt_record_line(const std::string& name, const std::string& text) {
    return "txt-record=" + name + ",\"" + text + "\"\n";
}

int zone(const char* conf_path, const char* expected_path) {
    const auto linked_enrs = records(1, 25);
    const auto linked = make_tree(linked_enrs, {}, 1, test_key(0x70, 2), "linked.dnsdisc.test");
    if (!linked) return std::cerr << "make_tree: " << linked.error().message() << "\n", 1;
    const auto main_enrs = records(0, 30);
    const std::vector<std::string> links{linked->url};
    const auto main_tree = make_tree(main_enrs, links, 3, test_key(0x70, 1), "nodes.dnsdisc.test");
    if (!main_tree) return std::cerr << "make_tree: " << main_tree.error().message() << "\n", 1;

    std::ofstream conf(conf_path);
    for (const DnsTree* tree : {&*main_tree, &*linked}) {
        for (const auto& [name, text] : tree->records) conf << txt_record_line(name, text);
    }
    std::set<std::string> expected;
    for (const auto* list : {&main_enrs, &linked_enrs}) {
        for (const Enr& e : *list) expected.insert(e.text());
    }
    std::ofstream out(expected_path);
    for (const auto& text : expected) out << text << "\n";
    if (!conf || !out) return std::cerr << "cannot write the files\n", 1;
    std::cout << main_tree->url << "\n";
    return 0;
}

// One tree of the records in ENR_FILE (their text forms, one per line), for a test that lists real
// nodes (tests/dns_sync_test.sh).
int zone_of(const char* conf_path, const char* domain, const char* enr_file) {
    std::ifstream in(enr_file);
    std::vector<Enr> enrs;
    for (std::string line; std::getline(in, line);) {
        if (line.empty()) continue;
        auto e = Enr::from_text(line);
        if (!e) return std::cerr << "record '" << line << "': " << e.error().message() << "\n", 1;
        enrs.push_back(*e);
    }
    if (enrs.empty()) return std::cerr << "no records in " << enr_file << "\n", 1;
    const auto tree = make_tree(enrs, {}, 1, test_key(0x70, 3), domain);
    if (!tree) return std::cerr << "make_tree: " << tree.error().message() << "\n", 1;
    std::ofstream conf(conf_path);
    for (const auto& [name, text] : tree->records) conf << txt_record_line(name, text);
    if (!conf) return std::cerr << "cannot write " << conf_path << "\n", 1;
    std::cout << tree->url << "\n";
    return 0;
}

std::unique_ptr<UdpTxtResolver> resolver_for(const char* server) {
    // Short tries: the server is on this machine, and a test waiting for it polls with this tool.
    auto resolver =
        UdpTxtResolver::create({.server = std::string(server), .timeout = std::chrono::seconds(1), .attempts = 2});
    if (!resolver) {
        std::cerr << "resolver: " << resolver.error().message() << "\n";
        return nullptr;
    }
    return std::move(*resolver);
}

int sync(const char* server, const char* url) {
    auto resolver = resolver_for(server);
    if (!resolver) return 1;
    DnsClient client(*resolver);
    std::vector<std::string> todo{url};
    std::set<std::string> domains;
    std::vector<std::string> enrs;
    while (!todo.empty()) {
        const std::string next = todo.back();
        todo.pop_back();
        auto tree = client.sync_tree(next);
        if (!tree) return std::cerr << "sync: " << tree.error().message() << "\n", 1;
        if (!domains.insert(tree->location.domain).second) continue;
        std::cout << "tree " << tree->location.domain << " seq " << tree->root.seq << " enrs " << tree->enrs.size()
                  << " links " << tree->links.size() << "\n";
        for (const Enr& e : tree->enrs) enrs.push_back(e.text());
        for (const LinkEntry& link : tree->links) {
            if (!domains.contains(link.domain)) todo.push_back(link.url());
        }
    }
    for (const auto& text : enrs) std::cout << text << "\n";
    return 0;
}

int iterate(const char* server, const char* url, const char* calls_text, const char* seed_text) {
    auto resolver = resolver_for(server);
    if (!resolver) return 1;
    DnsClient client(*resolver, DnsClientConfig{.seed = std::strtoull(seed_text, nullptr, 10)});
    if (auto added = client.add_tree(url); !added)
        return std::cerr << "add_tree: " << added.error().message() << "\n", 1;
    const unsigned long calls = std::strtoul(calls_text, nullptr, 10);
    std::set<std::string> seen;
    for (unsigned long i = 0; i < calls; ++i) {
        auto got = client.next();
        if (!got) return std::cerr << "next: " << got.error().message() << "\n", 1;
        if (*got) seen.insert((*got)->text());
    }
    std::cerr << "trees " << client.tree_count() << "\n";
    for (const auto& text : seen) std::cout << text << "\n";
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string_view command = argc > 1 ? argv[1] : "";
    if (command == "zone" && argc == 4) return zone(argv[2], argv[3]);
    if (command == "zone-of" && argc == 5) return zone_of(argv[2], argv[3], argv[4]);
    if (command == "sync" && argc == 4) return sync(argv[2], argv[3]);
    if (command == "iterate" && argc == 6) return iterate(argv[2], argv[3], argv[4], argv[5]);
    return usage();
}
