// Node records made by an independent implementation, @chainsafe/enr, for headerd's ENR tests
// (disc/enr_test.cpp reads tests/data/enr-chainsafe.json): each record with the private key that
// signed it and the values @chainsafe/enr reads back from it. Deterministic (RFC 6979 signatures,
// fixed keys), so running it again writes the same file:
//
//   node tests/interop/enr_vectors.mjs > tests/data/enr-chainsafe.json
//
// The addresses below are record contents only (loopback ones even so): the script opens no
// socket and sends nothing.
import { SignableENR, ENR } from "@chainsafe/enr";

const hex = (b) => Buffer.from(b).toString("hex");
const key = (i) => Buffer.from(i.toString(16).padStart(2, "0").repeat(32), "hex");

const cases = [
  { seq: 1n },
  { seq: 1n, ip: "127.0.0.1", udp: 30303 },
  { seq: 2n, ip: "127.0.0.1", tcp: 30303, udp: 30303 },
  { seq: 7n, ip: "127.1.2.3", tcp: 1, udp: 65535, ip6: "::1", tcp6: 30304, udp6: 30305 },
  { seq: 1000n, ip6: "::1", udp6: 9000 },
  { seq: 18446744073709551615n, ip: "127.0.0.2", tcp: 30303, extra: { zz: "6869" } },
];

const out = cases.map((c, i) => {
  const privateKey = key(i + 1);
  const enr = SignableENR.createV4(privateKey);
  for (const k of ["ip", "tcp", "udp", "ip6", "tcp6", "udp6"]) if (c[k] !== undefined) enr[k] = c[k];
  for (const [k, v] of Object.entries(c.extra ?? {})) enr.set(k, Buffer.from(v, "hex"));
  enr.seq = c.seq;
  const text = enr.encodeTxt();
  const read = ENR.decodeTxt(text);
  const field = (k) => (read[k] === undefined ? null : read[k]);
  return {
    private_key: hex(privateKey),
    seq: read.seq.toString(),
    text,
    rlp: hex(read.encode()),
    node_id: read.nodeId,
    ip: field("ip"),
    tcp: field("tcp"),
    udp: field("udp"),
    ip6: field("ip6"),
    tcp6: field("tcp6"),
    udp6: field("udp6"),
    extra: c.extra ?? {},
  };
});
process.stdout.write(JSON.stringify(out, null, 2) + "\n");
