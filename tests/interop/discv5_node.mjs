// Two @chainsafe/discv5 nodes (an independent discv5.1 implementation) against a headerd node, for
// tests/discv5_interop_test.sh. Loopback only: both bind 127.0.0.1 and talk to nobody but each
// other and the headerd record given (which must name 127.0.0.1).
//
//   node discv5_node.mjs HEADERD_ENR PORT_A PORT_B [SECONDS]
//
// Node A adds headerd's record, pings it (A starts the handshake), asks it FINDNODE at distance 0,
// 256 and A's own distance from headerd (A must be in the answer) and sends it a TALKREQ. Node B is known to A only (A.addEnr(B)), at distance 256 from A,
// so headerd can learn B's record only from A's NODES answers during its own lookups; the script
// then waits until headerd has contacted B (a session from headerd's side: the handshake the other
// way). Every result is one JSON line on stdout: {"event": ..., ...}; the last is "done" (or
// "error"). Exit status 0 when every step worked.
import { Discv5 } from "@chainsafe/discv5";
import { ENR, SignableENR } from "@chainsafe/enr";
import { generateKeyPair } from "@libp2p/crypto/keys";
import { multiaddr } from "@multiformats/multiaddr";

const [headerdText, portA, portB, seconds = "30"] = process.argv.slice(2);
if (!headerdText || !portA || !portB) {
  console.error("usage: node discv5_node.mjs HEADERD_ENR PORT_A PORT_B [SECONDS]");
  process.exit(2);
}
const emit = (event, fields = {}) => console.log(JSON.stringify({ event, ...fields }));
const hex = (b) => Buffer.from(b).toString("hex");

const headerd = ENR.decodeTxt(headerdText);
if (headerd.ip !== "127.0.0.1") {
  emit("error", { message: `headerd's record names ${headerd.ip}, not 127.0.0.1` });
  process.exit(1);
}

// log2 distance of two node ids (hex strings), 0 for equal ones.
const logDistance = (a, b) => {
  const x = BigInt("0x" + a) ^ BigInt("0x" + b);
  return x === 0n ? 0 : x.toString(2).length;
};

async function makeNode(port, accept = () => true) {
  for (;;) {
    const privateKey = await generateKeyPair("secp256k1");
    const enr = SignableENR.createFromPrivateKey(privateKey);
    if (!accept(enr.nodeId)) continue;
    const addr = multiaddr(`/ip4/127.0.0.1/udp/${port}`);
    // Our address set explicitly: ChainSafe's automatic update needs 10 votes.
    enr.setLocationMultiaddr(addr);
    const d = Discv5.create({
      enr,
      privateKey,
      bindAddrs: { ip4: addr },
      config: { enrUpdate: false, requestTimeout: 2000, lookupTimeout: 5000 },
    });
    await d.start();
    return d;
  }
}

const deadline = Date.now() + Number(seconds) * 1000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let a, b;
try {
  a = await makeNode(Number(portA));
  b = await makeNode(Number(portB), (id) => logDistance(id, a.enr.nodeId) === 256);
  emit("started", { a: a.enr.encodeTxt(), b: b.enr.encodeTxt(), a_id: a.enr.nodeId, headerd: headerd.nodeId });
  a.addEnr(b.enr.toENR());
  a.addEnr(headerd);

  const pong = await a.sendPing(headerd);
  const ip = pong.addr.ip.type === 4 ? Array.from(pong.addr.ip.octets).join(".") : hex(pong.addr.ip.octets);
  emit("pong", { enrSeq: pong.enrSeq.toString(), ip, port: pong.addr.port });

  const self = await a.sendFindNode(headerd, [0]);
  emit("findnode0", { records: self.map((e) => e.encodeTxt()), ids: self.map((e) => e.nodeId) });

  const far = await a.sendFindNode(headerd, [256]);
  emit("findnode256", {
    ids: far.map((e) => e.nodeId),
    distances: far.map((e) => logDistance(e.nodeId, headerd.nodeId)),
  });

  // The distance A is at from headerd: headerd has A in its table since the handshake.
  const own = logDistance(a.enr.nodeId, headerd.nodeId);
  const near = await a.sendFindNode(headerd, [own]);
  emit("findnode_own", { distance: own, ids: near.map((e) => e.nodeId) });

  const talk = await a.sendTalkReq(headerd, new Uint8Array([1, 2, 3]), "headerd-test");
  emit("talkresp", { payload: hex(talk) });

  // headerd's refresh lookups ask A, learn B from A's NODES and contact B.
  let seen = false;
  while (!seen && Date.now() < deadline) {
    seen = b.kadValues().some((e) => e.nodeId === headerd.nodeId) || b.findEnr(headerd.nodeId) !== undefined;
    if (!seen) await sleep(100);
  }
  emit("b_contacted_by_headerd", { ok: seen });
  emit("a_table", { ids: a.kadValues().map((e) => e.nodeId) });
  emit("done", { ok: seen });
  await a.stop();
  await b.stop();
  process.exit(seen ? 0 : 1);
} catch (e) {
  emit("error", { message: String(e?.message ?? e) });
  if (a) await a.stop().catch(() => {});
  if (b) await b.stop().catch(() => {});
  process.exit(1);
}
