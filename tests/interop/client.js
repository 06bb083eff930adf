#!/usr/bin/env node
'use strict'
// An @ethereumjs/devp2p peer that checks a header server (headerd serve, or server.js) against
// the mainnet headers 0..8191 in tests/data.
//
//   node client.js ENODE [--eth 68|69|68,69] [--timeout SECONDS]
//
// ENODE is enode://<128 hex>@127.0.0.1:PORT (loopback only). --eth lists the versions offered
// (default 68, the newest the library speaks; 69 is the harness's own extension, see README);
// the server must pick the highest one. Prints one "ok: ..." or "FAIL: ..." line per check and
// exits 0 only if every check passed; --timeout (default 60) bounds the whole run.
//
// Connection 1: handshake, Status (checked byte for byte), GetBlockHeaders of every kind (each
// reply compared byte for byte with the chain), a pipelined batch, empty replies to bodies,
// receipts and pooled transactions. Connections 2..4: a Status with a wrong genesis, network
// id or fork id; the server must drop us within 5 s.

const { RLP } = require('@ethereumjs/rlp')
const { keccak256 } = require('ethereum-cryptography/keccak.js')
const {
  loadChain,
  expectedNumbers,
  listElements,
  bytesEqual,
  bytesToUint,
  uintBytes,
  hex,
  UINT64_MAX,
  MAX_HEADERS_SERVE,
} = require('./chain.js')
const {
  CODES,
  statusList,
  statusOpts,
  reasonName,
} = require('./eth.js')
const { connect, exchangeStatus, closeText, withErrors, ok, fail, finish, startRun } = require('./session.js')

const USAGE = 'usage: node client.js ENODE [--eth 68|69|68,69] [--timeout SECONDS]'
const REJECT_TIMEOUT_MS = 5000

// ---------------------------------------------------------------------------------------------
// The checks

const seq = (from, count, step = 1) => Array.from({ length: count }, (_, i) => from + i * step)

// Every GetBlockHeaders case: what we ask and, spelled out independently of chain.js's model,
// what a correct server answers. Ids cover the RLP integer edge cases (0, 0x7f/0x80 boundary,
// full 64 bits); the server must echo them exactly.
function headerCases(chain) {
  const H = (n) => chain.headers[n].hash
  const unknownHash = keccak256(new TextEncoder().encode('headerd interop: no such block'))
  const head = chain.head.number
  return [
    { name: 'number 0 amount 192 -> 0..191', origin: 0n, amount: 192n, expect: seq(0, 192) },
    { name: 'number 8000 amount 192 -> 8000..8191', origin: 8000n, amount: 192n, expect: seq(8000, 192) },
    { name: 'number 8100 amount 192 -> best effort 8100..8191 (92)', origin: 8100n, amount: 192n, expect: seq(8100, 92) },
    { name: 'number 8191 amount 1 -> head', origin: BigInt(head), amount: 1n, expect: [head] },
    { name: 'number 8192 (past head) -> empty', origin: 8192n, amount: 10n, expect: [] },
    { name: 'reverse 191 amount 192 -> 191..0', origin: 191n, amount: 192n, reverse: true, expect: seq(191, 192, -1) },
    { name: 'reverse 5 amount 10 -> 5..0 (6)', origin: 5n, amount: 10n, reverse: true, expect: seq(5, 6, -1) },
    { name: 'reverse 0 amount 2 -> [0]', origin: 0n, amount: 2n, reverse: true, expect: [0] },
    { name: 'skip 1 from 0 amount 10', origin: 0n, amount: 10n, skip: 1n, expect: seq(0, 10, 2) },
    { name: 'skip 7 from 100 amount 20', origin: 100n, amount: 20n, skip: 7n, expect: seq(100, 20, 8) },
    { name: 'skip 7 from 8000 amount 100 -> stops at head (24)', origin: 8000n, amount: 100n, skip: 7n, expect: seq(8000, 24, 8) },
    { name: 'skip 7 reverse from 8191 amount 50', origin: 8191n, amount: 50n, skip: 7n, reverse: true, expect: seq(8191, 50, -8) },
    { name: 'skip 7 reverse from 20 amount 10 -> 20,12,4', origin: 20n, amount: 10n, skip: 7n, reverse: true, expect: [20, 12, 4] },
    // 7192 is the ancient/LevelDB boundary of a datadir frozen with --keep 1000.
    { name: 'number 7100 amount 192 -> 7100..7291', origin: 7100n, amount: 192n, expect: seq(7100, 192) },
    { name: 'reverse 7291 amount 192 -> 7291..7100', origin: 7291n, amount: 192n, reverse: true, expect: seq(7291, 192, -1) },
    { name: 'hash of 7191 skip 1 amount 10', origin: H(7191), amount: 10n, skip: 1n, expect: seq(7191, 10, 2) },
    { name: 'amount 0 -> empty', origin: 0n, amount: 0n, expect: [] },
    { name: 'amount 0 by hash -> empty', origin: H(10), amount: 0n, expect: [] },
    { name: 'amount 1025 -> capped at 1024', origin: 0n, amount: 1025n, expect: seq(0, MAX_HEADERS_SERVE) },
    { name: 'amount 2^64-1 from 0 -> capped at 1024', origin: 0n, amount: UINT64_MAX, expect: seq(0, MAX_HEADERS_SERVE) },
    { name: 'amount 2^64-1 from 8000 -> 8000..8191', origin: 8000n, amount: UINT64_MAX, expect: seq(8000, 192) },
    { name: 'hash of 0 (genesis) amount 192 -> 0..191', origin: H(0), amount: 192n, expect: seq(0, 192) },
    { name: 'hash of 1000 skip 2 amount 5', origin: H(1000), amount: 5n, skip: 2n, expect: seq(1000, 5, 3) },
    { name: 'hash of 8191 (head) amount 5 -> [8191]', origin: H(head), amount: 5n, expect: [head] },
    { name: 'hash of 8191 reverse amount 192 -> 8191..8000', origin: H(head), amount: 192n, reverse: true, expect: seq(8191, 192, -1) },
    { name: 'hash of 4000 reverse skip 9 amount 10', origin: H(4000), amount: 10n, skip: 9n, reverse: true, expect: seq(4000, 10, -10) },
    { name: 'hash of 3 reverse amount 10 -> 3..0', origin: H(3), amount: 10n, reverse: true, expect: seq(3, 4, -1) },
    { name: 'unknown hash -> empty', origin: unknownHash, amount: 10n, expect: [] },
    { name: 'unknown hash reverse -> empty', origin: unknownHash, amount: 10n, reverse: true, expect: [] },
    { name: 'origin 2^64-1 -> empty', origin: UINT64_MAX, amount: 10n, expect: [] },
    { name: 'origin 2^64-1 reverse -> empty', origin: UINT64_MAX, amount: 10n, reverse: true, expect: [] },
    { name: 'skip 2^64-1 from 5 -> just the origin', origin: 5n, amount: 3n, skip: UINT64_MAX, expect: [5] },
    { name: 'skip 2^64-1 reverse from 8191 -> just the origin', origin: 8191n, amount: 3n, skip: UINT64_MAX, reverse: true, expect: [8191] },
    { name: 'skip 2^64-2 from 1 -> just the origin', origin: 1n, amount: 3n, skip: UINT64_MAX - 1n, expect: [1] },
    { name: 'skip 2^63 from 0 -> just the origin', origin: 0n, amount: 2n, skip: 1n << 63n, expect: [0] },
    { name: 'hash of 100 skip 2^64-1 -> just the origin', origin: H(100), amount: 2n, skip: UINT64_MAX, expect: [100] },
    { name: 'hash of 8000 reverse skip 2^64-1 -> just the origin', origin: H(8000), amount: 2n, skip: UINT64_MAX, reverse: true, expect: [8000] },
  ].map((c, i) => ({
    skip: 0n,
    reverse: false,
    id: [0n, 1n, 0x7fn, 0x80n, 0xffn, 0x100n, UINT64_MAX, 0xdeadbeefn][i] ?? BigInt(1000 + i * 7919),
    ...c,
  }))
}

function describeNumbers(nums) {
  if (nums.length === 0) return 'none'
  return nums.length <= 4 ? nums.join(',') : `${nums[0]},${nums[1]}..${nums[nums.length - 1]}`
}

// Compares a BlockHeaders response with the expected block numbers, byte for byte.
function checkHeadersReply(chain, c, raw) {
  const [idRaw, listRaw] = listElements(raw)
  const id = bytesToUint(RLP.decode(idRaw))
  if (id !== c.id) return `request id ${id}, expected ${c.id}`
  const got = listElements(listRaw)
  if (BigInt(got.length) > c.amount) return `${got.length} headers for amount ${c.amount}`
  const numberOf = (h) => {
    try {
      return String(bytesToUint(RLP.decode(h)[8]))
    } catch {
      return '?'
    }
  }
  for (let i = 0; i < Math.min(got.length, c.expect.length); i++) {
    if (!bytesEqual(got[i], chain.headers[c.expect[i]].raw)) {
      const what = `${got[i].length} bytes (block ${numberOf(got[i])}, hash ${hex(keccak256(got[i]))})`
      return `header #${i}: expected block ${c.expect[i]}, got ${what}`
    }
  }
  if (got.length !== c.expect.length) {
    return `${got.length} headers (${describeNumbers(got.map(numberOf))}), expected ${c.expect.length} (${describeNumbers(c.expect)})`
  }
  return null
}

function headersRequestBody(c) {
  const origin = c.origin instanceof Uint8Array ? c.origin : uintBytes(c.origin)
  return [origin, uintBytes(c.amount), uintBytes(c.skip), c.reverse ? Uint8Array.from([1]) : new Uint8Array()]
}

async function runHeaderCase(session, chain, c, label = '') {
  try {
    const raw = await session.request(CODES.GET_BLOCK_HEADERS, CODES.BLOCK_HEADERS, c.id, headersRequestBody(c))
    const problem = checkHeadersReply(chain, c, raw)
    if (problem === null) ok(`GetBlockHeaders ${label}${c.name} (id ${c.id}, ${c.expect.length} headers, byte-exact)`)
    else fail(`GetBlockHeaders ${label}${c.name}: ${problem}`)
  } catch (err) {
    fail(`GetBlockHeaders ${label}${c.name}: ${err.message}`)
  }
}

// Status as the server sent it. eth/68 is fully determined by the chain, so compare bytes;
// eth/69's earliest block is the server's choice (headerd: earliest = latest = head).
function checkStatus(version, chain, session) {
  const raw = session.eth.peerStatusRaw
  if (version < 69) {
    const want = RLP.encode(statusList(version, chain))
    if (bytesEqual(raw, want)) {
      const head = `${chain.head.number} ${chain.head.hashHex.slice(0, 12)}..`
      ok(`server Status eth/${version}: network 1, TD ${chain.head.td}, head ${head}, mainnet genesis, forkid [0xfc64ec04, 1150000] (byte-exact)`)
    } else {
      fail(`server Status eth/${version} is ${hex(raw)}, expected ${hex(want)}`)
    }
    return
  }
  const problems = []
  let f
  try {
    f = RLP.decode(raw)
  } catch (err) {
    fail(`server Status eth/69 undecodable: ${err.message}`)
    return
  }
  if (!bytesEqual(RLP.encode(f), raw)) problems.push('not canonical RLP')
  if (f.length !== 7) problems.push(`${f.length} fields, expected 7`)
  else {
    const want = statusList(69, chain)
    const names = ['version', 'network id', 'genesis', 'forkid']
    for (let i = 0; i < 4; i++) {
      if (!bytesEqual(RLP.encode(f[i]), RLP.encode(want[i]))) problems.push(`${names[i]} ${hex(RLP.encode(f[i]))}`)
    }
    if (bytesToUint(f[5]) !== BigInt(chain.head.number)) problems.push(`latest ${bytesToUint(f[5])}, expected ${chain.head.number}`)
    if (!bytesEqual(f[6], chain.head.hash)) problems.push(`latestHash ${hex(f[6])}`)
    if (bytesToUint(f[4]) > bytesToUint(f[5])) problems.push('earliest > latest')
  }
  if (problems.length === 0) {
    const range = `${bytesToUint(f[4])}..${bytesToUint(f[5])}`
    ok(`server Status eth/69: network 1, mainnet genesis, forkid [0xfc64ec04, 1150000], range ${range}, latestHash = block ${chain.head.number}`)
  } else {
    fail(`server Status eth/69: ${problems.join('; ')}`)
  }
}

// Connection 1.
async function mainSession(args, chain) {
  const want = Math.max(...args.versions)
  let session
  try {
    session = await connect(args.target, args.versions)
  } catch (err) {
    fail(`connect: ${err.message}`)
    return false
  }
  const hello = session.peer.getHelloMessage()
  const caps = hello.capabilities.map((c) => `${c.name}/${c.version}`).join(',')
  ok(`RLPx EIP-8 handshake + Hello with "${hello.clientId}" p2p/${hello.protocolVersion} caps ${caps}`)
  if (hello.protocolVersion >= 5) ok(`server speaks p2p/${hello.protocolVersion} (snappy)`)
  else fail(`server p2p version ${hello.protocolVersion} < 5`)
  const version = session.eth.getVersion()
  if (version === want) ok(`negotiated eth/${version} (offered eth/${args.versions.join(',eth/')})`)
  else fail(`negotiated eth/${version}, expected eth/${want}`)

  try {
    await exchangeStatus(session, statusOpts(version, chain))
    ok(`Status exchange eth/${version} accepted by both sides`)
  } catch (err) {
    fail(`Status exchange: ${err.message}`)
    session.close()
    return true
  }
  checkStatus(version, chain, session)

  // Header requests one at a time, so a failure is pinned to one request.
  const cases = headerCases(chain)
  for (const c of cases) {
    // The table above is written out by hand; chain.js's model (which server.js serves from)
    // must agree with it, or the harness itself is wrong.
    const model = expectedNumbers(chain, c)
    if (model.join() !== c.expect.join()) throw new Error(`harness bug: case "${c.name}" disagrees with chain.js`)
    if (session.closed !== null) {
      fail(`GetBlockHeaders ${c.name}: connection closed (reason ${reasonName(session.closed.reason)})`)
      continue
    }
    await runHeaderCase(session, chain, c)
  }

  // Several requests in flight at once: replies must still carry the right ids.
  const pick = (name) => cases.find((c) => c.name.startsWith(name))
  const batch = [pick('number 0 amount 192'), pick('reverse 191'), pick('skip 7 from 100'), pick('hash of 8191 reverse')]
    .map((c, i) => ({ ...c, id: 0x5000n + BigInt(i) }))
  await Promise.all(batch.map((c) => runHeaderCase(session, chain, c, '(pipelined) ')))

  // Requests a header server cannot serve: an empty list with the same request id.
  const empties = [
    ['GetBlockBodies', CODES.GET_BLOCK_BODIES, CODES.BLOCK_BODIES, [chain.headers[1].hash, chain.headers[2].hash]],
    ['GetReceipts', CODES.GET_RECEIPTS, CODES.RECEIPTS, [chain.headers[3].hash]],
    ['GetPooledTransactions', CODES.GET_POOLED_TRANSACTIONS, CODES.POOLED_TRANSACTIONS, [keccak256(Uint8Array.from([1]))]],
  ]
  let id = 0x7000n
  for (const [name, code, respCode, body] of empties) {
    id += 1n
    try {
      const raw = await session.request(code, respCode, id, body)
      const want = RLP.encode([uintBytes(id), []])
      if (bytesEqual(raw, want)) ok(`${name} -> empty reply, id ${id} echoed`)
      else fail(`${name}: reply ${hex(raw)}, expected ${hex(want)}`)
    } catch (err) {
      fail(`${name}: ${err.message}`)
    }
  }

  // Give stray responses a moment to show up before judging.
  await new Promise((r) => setTimeout(r, 200))
  if (session.unexpected.length === 0) ok('no unsolicited or undecodable responses')
  else for (const u of session.unexpected) fail(u)
  if (session.closed === null) ok('connection still up after all requests')
  else fail(`connection closed during the run (${closeText(session.closed.reason, session.closed.byUs)})`)
  session.close()
  return true
}

// Connections 2..4: the server must reject a Status that does not match its chain.
async function rejectSession(args, chain, what, tweak) {
  const version = Math.max(...args.versions)
  let session
  try {
    session = await connect(args.target, args.versions, { lenient: true })
  } catch (err) {
    fail(`Status with ${what}: ${err.message}`)
    return
  }
  const start = Date.now()
  const gone = new Promise((resolve) => {
    const poll = setInterval(() => {
      if (session.remoteDisconnect !== null || session.remoteEnded || session.closed !== null) {
        clearInterval(poll)
        resolve(true)
      }
    }, 5)
    setTimeout(() => {
      clearInterval(poll)
      resolve(false)
    }, REJECT_TIMEOUT_MS)
  })
  session.eth.sendStatus({ raw: statusList(version, chain, tweak) })
  const dropped = await gone
  const ms = Date.now() - start
  if (!dropped) {
    fail(`Status with ${what}: server did not disconnect within ${REJECT_TIMEOUT_MS / 1000}s`)
  } else if (session.remoteDisconnect !== null) {
    const d = session.remoteDisconnect
    ok(`Status with ${what}: server sent Disconnect ${reasonName(d.reason)} (${d.form}) after ${ms} ms`)
  } else if (session.remoteEnded || (session.closed && !session.closed.byUs)) {
    ok(`Status with ${what}: server closed the connection after ${ms} ms (no Disconnect message)`)
  } else {
    fail(withErrors(`Status with ${what}: we disconnected first (reason ${reasonName(session.closed.reason)})`, session.errors))
  }
  session.close()
}

async function main() {
  const args = startRun('client.js', USAGE, { eth: '68', timeout: '60' })

  const chain = loadChain()
  ok(`loaded ${chain.headers.length} mainnet headers, head ${chain.head.number} TD ${chain.head.td}`)

  if (!(await mainSession(args, chain))) finish() // nothing listening: the rest cannot run either
  const wrongGenesis = keccak256(new TextEncoder().encode('headerd interop: not mainnet'))
  await rejectSession(args, chain, 'wrong genesis', { genesis: wrongGenesis })
  await rejectSession(args, chain, 'wrong network id 5', { networkId: uintBytes(5) })
  const unknownForkId = [Uint8Array.from([0xde, 0xad, 0xbe, 0xef]), new Uint8Array()]
  await rejectSession(args, chain, 'unknown fork id [0xdeadbeef, 0]', { forkId: unknownForkId })
  finish()
}

main().catch((err) => {
  fail(`harness error: ${err.stack || err.message}`)
  finish()
})
