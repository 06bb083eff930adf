// One @chainsafe/discv5 node of tests/discovery_net_test.sh's mixed network. Loopback only: it
// binds 127.0.0.1 and starts from the one bootnode record given (which must name 127.0.0.1).
//
//   node discv5_net_node.mjs PRIVATE_KEY_HEX PORT BOOT_ENR OUT_FILE PEERS_FILE SECONDS
//
// Writes its own record (text form) to OUT_FILE once started, then runs random lookups, one after
// another with 300 ms between them, and after each writes every record in its table to PEERS_FILE
// (one per line; written to a temporary file and renamed, so a reader never sees half of it). Stops
// after SECONDS or at SIGTERM. Exit status 0 unless it could not start.
import { writeFileSync, renameSync } from "node:fs";
import { Discv5 } from "@chainsafe/discv5";
import { ENR, SignableENR } from "@chainsafe/enr";
import { privateKeyFromRaw } from "@libp2p/crypto/keys";
import { multiaddr } from "@multiformats/multiaddr";

const [keyHex, port, bootText, outFile, peersFile, seconds = "30"] = process.argv.slice(2);
if (!keyHex || !port || !bootText || !outFile || !peersFile) {
  console.error("usage: node discv5_net_node.mjs PRIVATE_KEY_HEX PORT BOOT_ENR OUT_FILE PEERS_FILE [SECONDS]");
  process.exit(2);
}
const boot = ENR.decodeTxt(bootText);
if (boot.ip !== "127.0.0.1") {
  console.error(`the bootnode's record names ${boot.ip}, not 127.0.0.1`);
  process.exit(2);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const write = (file, text) => {
  writeFileSync(file + ".tmp", text);
  renameSync(file + ".tmp", file);
};

const privateKey = privateKeyFromRaw(Buffer.from(keyHex, "hex"));
const enr = SignableENR.createFromPrivateKey(privateKey);
const addr = multiaddr(`/ip4/127.0.0.1/udp/${port}`);
enr.setLocationMultiaddr(addr); // ChainSafe's automatic update needs 10 votes
const d = Discv5.create({
  enr,
  privateKey,
  bindAddrs: { ip4: addr },
  config: { enrUpdate: false, requestTimeout: 1000, lookupTimeout: 5000 },
});
try {
  await d.start();
} catch (e) {
  console.error(`cannot start: ${e?.message ?? e}`);
  process.exit(1);
}
d.addEnr(boot);
write(outFile, d.enr.encodeTxt() + "\n");
// The test ends each node with SIGTERM: a clean stop, exit status 0.
process.on("SIGTERM", async () => {
  console.error(`stopped: ${d.kadValues().length} nodes in the table`);
  await d.stop().catch(() => {});
  process.exit(0);
});

const deadline = Date.now() + Number(seconds) * 1000;
let lookups = 0;
while (Date.now() < deadline) {
  try {
    await d.findRandomNode();
    lookups++;
  } catch (e) {
    console.error(`lookup: ${e?.message ?? e}`);
  }
  write(peersFile, d.kadValues().map((e) => e.encodeTxt() + "\n").join(""));
  await sleep(300);
}
console.error(`${lookups} lookups, ${d.kadValues().length} nodes in the table`);
await d.stop();
process.exit(0);
