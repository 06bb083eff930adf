'use strict'
// The reference chain both sides of the interop harness work from: real mainnet headers 0..8191
// from tests/data, checked on load (hashes, parent links, numbers, total difficulty), plus the
// model of what a correct GetBlockHeaders answer is. Also a small CLI for shell tests:
//
//   node chain.js info                       genesis, head, TD, fork id
//   node chain.js expect --origin NUM|0xHASH --amount N [--skip K] [--reverse]
//                        [--format hashes|numbers|rlp] [--out FILE]
//       prints the headers a correct peer returns ("number 0xhash" lines by default, the same
//       format as tests/data/*.hashes.txt); --format rlp writes the concatenated header RLP
//       (to --out FILE, or stdout) so `headerd get` output can be compared byte for byte.

const fs = require('node:fs')
const path = require('node:path')
const zlib = require('node:zlib')
const { RLP } = require('@ethereumjs/rlp')
const { keccak256 } = require('ethereum-cryptography/keccak.js')
const { Common, Mainnet, Hardfork } = require('@ethereumjs/common')

const DATA_DIR = path.resolve(__dirname, '..', 'data')
const BASE = path.join(DATA_DIR, 'mainnet-headers-0-8191')

const NETWORK_ID = 1n
const GENESIS_HASH_HEX = '0xd4e56740f876aef8c010b86a40d5f56745a118d0906a34e69aec8c0db1cb8fa3'
// EIP-2124 fork id of a mainnet node whose head is below Homestead (1150000).
const FORK_ID = { hash: '0xfc64ec04', next: 1150000n }
// geth's maxHeadersServe; both our server and the expectations cap here.
const MAX_HEADERS_SERVE = 1024
const UINT64_MAX = (1n << 64n) - 1n

// ---------------------------------------------------------------------------------------------
// Byte helpers

function hex(bytes) {
  return '0x' + Buffer.from(bytes).toString('hex')
}

function fromHex(str) {
  const s = str.startsWith('0x') ? str.slice(2) : str
  if (s.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(s)) throw new Error(`bad hex: ${str}`)
  return Uint8Array.from(Buffer.from(s, 'hex'))
}

function bytesEqual(a, b) {
  return a.length === b.length && Buffer.compare(Buffer.from(a), Buffer.from(b)) === 0
}

// Canonical RLP integer bytes: minimal big-endian, zero is the empty string. The ethereumjs
// helpers (intToBytes/bigIntToBytes) turn 0 into [0x00], which RLP-encodes as the
// non-canonical 0x00 that geth and headerd reject — so never use them for wire integers.
function uintBytes(value) {
  let v = BigInt(value)
  if (v < 0n) throw new Error('negative integer')
  const out = []
  while (v > 0n) {
    out.unshift(Number(v & 0xffn))
    v >>= 8n
  }
  return Uint8Array.from(out)
}

// Strict RLP integer decoding (canonical: no leading zero byte, at most 8 bytes for uint64).
function bytesToUint(bytes, maxBytes = 8) {
  if (!(bytes instanceof Uint8Array)) throw new Error('integer expected, got a list')
  if (bytes.length > maxBytes) throw new Error(`integer longer than ${maxBytes} bytes`)
  if (bytes.length > 0 && bytes[0] === 0) throw new Error('integer with leading zero byte')
  let v = 0n
  for (const b of bytes) v = (v << 8n) | BigInt(b)
  return v
}

// ---------------------------------------------------------------------------------------------
// Raw RLP walking. @ethereumjs/rlp only gives decoded values; the harness needs the exact bytes
// of each item (headers must match byte for byte, and the server splices stored header RLP).

// Returns { start, end, payloadStart, isList } of the item at `offset`; rejects non-canonical
// length prefixes so a sloppy encoder on the other side is noticed.
function rlpItem(buf, offset = 0) {
  if (offset >= buf.length) throw new Error('RLP: unexpected end of input')
  const b = buf[offset]
  let payloadStart
  let length
  let isList
  if (b < 0x80) return { start: offset, payloadStart: offset, end: offset + 1, isList: false }
  if (b < 0xb8 || (b >= 0xc0 && b < 0xf8)) {
    isList = b >= 0xc0
    length = b - (isList ? 0xc0 : 0x80)
    payloadStart = offset + 1
    if (!isList && length === 1 && buf[payloadStart] < 0x80) {
      throw new Error('RLP: single byte < 0x80 must not be prefixed')
    }
  } else {
    isList = b >= 0xf8
    const lenOfLen = b - (isList ? 0xf7 : 0xb7)
    if (offset + 1 + lenOfLen > buf.length) throw new Error('RLP: truncated length')
    if (buf[offset + 1] === 0) throw new Error('RLP: length with leading zero')
    length = 0
    for (let i = 0; i < lenOfLen; i++) length = length * 256 + buf[offset + 1 + i]
    if (length < 56) throw new Error('RLP: long form used for a short item')
    payloadStart = offset + 1 + lenOfLen
  }
  const end = payloadStart + length
  if (end > buf.length) throw new Error('RLP: item runs past the end of input')
  return { start: offset, payloadStart, end, isList }
}

// Raw bytes of every item in a concatenation of RLP items (e.g. a .rlp file of headers).
function splitConcatenated(buf) {
  const items = []
  let off = 0
  while (off < buf.length) {
    const it = rlpItem(buf, off)
    items.push(buf.subarray(it.start, it.end))
    off = it.end
  }
  return items
}

// Raw bytes of the elements of the RLP list `buf` (which must be exactly one list).
function listElements(buf) {
  const outer = rlpItem(buf, 0)
  if (!outer.isList) throw new Error('RLP: list expected')
  if (outer.end !== buf.length) throw new Error('RLP: trailing bytes after list')
  return splitConcatenated(buf.subarray(outer.payloadStart, outer.end))
}

// ---------------------------------------------------------------------------------------------
// Chain loading

function readLines(file) {
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
}

let cached = null

// verify (default on) recomputes every hash, parent link, number and total difficulty: about
// 2 s of pure-JS keccak and RLP decoding. The `expect` CLI turns it off and trusts the files.
function loadChain({ verify = true } = {}) {
  if (cached !== null && (cached.verified || !verify)) return cached
  const rlpFile = `${BASE}.rlp`
  const raws = splitConcatenated(new Uint8Array(fs.readFileSync(rlpFile)))

  const hashLines = readLines(`${BASE}.hashes.txt`)
  const tdLines = readLines(`${BASE}.td.txt`)
  if (raws.length !== hashLines.length || raws.length !== tdLines.length) {
    throw new Error(
      `${rlpFile}: ${raws.length} headers but ${hashLines.length} hashes and ${tdLines.length} TDs`,
    )
  }

  const headers = []
  const byHash = new Map()
  for (let n = 0; n < raws.length; n++) {
    const raw = raws[n]
    const [hn, hh] = hashLines[n].split(/\s+/)
    const [tn, th, ttd, tlen] = tdLines[n].split(/\s+/)
    const where = `${rlpFile}: header ${n}`
    if (Number(hn) !== n || Number(tn) !== n || th.toLowerCase() !== hh.toLowerCase()) {
      throw new Error(`${where}: hash/td files out of order or disagreeing`)
    }
    if (Number(tlen) !== raw.length) throw new Error(`${where}: length ${raw.length} != ${tlen}`)
    const h = new Header(n, raw, fromHex(hh), BigInt(ttd))
    if (verify) verifyHeader(h, n > 0 ? headers[n - 1] : null, where)
    headers.push(h)
    byHash.set(h.hashHex, h)
  }

  if (headers[0].hashHex !== GENESIS_HASH_HEX) throw new Error(`${rlpFile}: not mainnet genesis`)
  const head = headers[headers.length - 1]
  checkForkId(head.number)

  cached = {
    verified: verify,
    headers,
    first: 0,
    at: (n) => headers[n],
    head,
    genesisHash: headers[0].hash,
    networkId: NETWORK_ID,
    forkId: { hash: fromHex(FORK_ID.hash), next: FORK_ID.next },
    byHash: (hash) => byHash.get(hex(hash)),
  }
  return cached
}

class Header {
  constructor(number, raw, hash, td) {
    this.number = number
    this.raw = raw
    this.hash = hash
    this.hashHex = hex(hash)
    this.td = td
    this._fields = null
  }

  // Decoded RLP fields, decoded on first use (the server hands them to ETH.sendMessage).
  get fields() {
    if (this._fields === null) this._fields = RLP.decode(this.raw)
    return this._fields
  }
}

function verifyHeader(h, parent, where) {
  const hash = keccak256(h.raw)
  if (!bytesEqual(hash, h.hash)) throw new Error(`${where}: keccak ${hex(hash)} does not match ${h.hashHex}`)
  // The server answers through ETH.sendMessage, which RLP-encodes decoded values; that only
  // reproduces the stored bytes if they are canonical, so make sure of that once here.
  if (!bytesEqual(RLP.encode(h.fields), h.raw)) throw new Error(`${where}: not canonical RLP`)
  if (bytesToUint(h.fields[8]) !== BigInt(h.number)) throw new Error(`${where}: number field mismatch`)
  if (parent !== null && !bytesEqual(h.fields[0], parent.hash)) {
    throw new Error(`${where}: parentHash does not link to header ${parent.number}`)
  }
  const difficulty = bytesToUint(h.fields[7], 32)
  if (h.td !== (parent === null ? difficulty : parent.td + difficulty)) {
    throw new Error(`${where}: total difficulty ${h.td} inconsistent with difficulties`)
  }
}

// The fork id is a constant here; prove it two independent ways rather than trusting it:
// our own CRC32 of the genesis hash (EIP-2124 with no fork passed), and ethereumjs' Common.
function checkForkId(headNumber) {
  if (BigInt(headNumber) >= FORK_ID.next) throw new Error('fork id constant assumes head < 1150000')
  const crc = zlib.crc32(fromHex(GENESIS_HASH_HEX)) >>> 0
  const ours = '0x' + crc.toString(16).padStart(8, '0')
  const common = mainnetCommon()
  const theirs = common.forkHash(Hardfork.Chainstart)
  const next = common.nextHardforkBlockOrTimestamp(Hardfork.Chainstart)
  if (ours !== FORK_ID.hash || theirs !== FORK_ID.hash || next !== FORK_ID.next) {
    throw new Error(`fork id mismatch: crc ${ours}, Common ${theirs}/${next}, expected ${FORK_ID.hash}`)
  }
}

// The Common instance the ethereumjs ETH protocol derives its own fork id from: at Chainstart
// (our head 8191 is before Homestead) it advertises [0xfc64ec04, 1150000].
function mainnetCommon() {
  return new Common({ chain: Mainnet, hardfork: Hardfork.Chainstart })
}

// ---------------------------------------------------------------------------------------------
// What a correct server returns for GetBlockHeaders, following geth's serving rules: amount 0
// -> nothing; at most MAX_HEADERS_SERVE; consecutive headers skip+1 apart; stop at the first
// block that does not exist; unknown hash -> nothing. BigInt arithmetic means the uint64
// overflow cases (origin+skip, skip+1 = 2^64) come out the way geth's guards make them.
// Every block in this chain is canonical, so a hash origin simply resolves to its number.
//
// origin: bigint (number) or Uint8Array(32) (hash). Returns the list of block numbers.
function expectedNumbers(chain, { origin, amount, skip = 0n, reverse = false }) {
  amount = BigInt(amount)
  skip = BigInt(skip)
  if (amount === 0n) return []
  let cur
  if (origin instanceof Uint8Array) {
    const h = chain.byHash(origin)
    if (h === undefined) return []
    cur = BigInt(h.number)
  } else {
    cur = BigInt(origin)
  }
  const head = BigInt(chain.head.number)
  const limit = amount < BigInt(MAX_HEADERS_SERVE) ? amount : BigInt(MAX_HEADERS_SERVE)
  const out = []
  const step = skip + 1n
  const first = BigInt(chain.first ?? 0) // a chain that starts at a later epoch holds nothing below
  while (cur >= first && cur <= head && BigInt(out.length) < limit) {
    out.push(Number(cur))
    cur = reverse ? cur - step : cur + step
  }
  return out
}

module.exports = {
  NETWORK_ID,
  GENESIS_HASH_HEX,
  FORK_ID,
  MAX_HEADERS_SERVE,
  UINT64_MAX,
  hex,
  fromHex,
  bytesEqual,
  uintBytes,
  bytesToUint,
  rlpItem,
  splitConcatenated,
  listElements,
  loadChain,
  mainnetCommon,
  expectedNumbers,
}

// ---------------------------------------------------------------------------------------------
// CLI

function parseOrigin(s) {
  if (/^0x[0-9a-fA-F]{64}$/.test(s)) return fromHex(s)
  if (/^[0-9]+$/.test(s)) return BigInt(s)
  throw new Error(`--origin must be a block number or a 0x-prefixed 32-byte hash: ${s}`)
}

function cli(argv) {
  const cmd = argv[0]
  const opts = { skip: '0', reverse: false, format: 'hashes' }
  for (let i = 1; i < argv.length; i++) {
    const a = argv[i]
    if (a === '--reverse') opts.reverse = true
    else if (['--origin', '--amount', '--skip', '--format', '--out'].includes(a) && i + 1 < argv.length) {
      opts[a.slice(2)] = argv[++i]
    } else throw new Error(`unknown argument: ${a}`)
  }
  const chain = loadChain({ verify: cmd === 'info' })
  if (cmd === 'info') {
    console.log(`genesis ${chain.headers[0].hashHex}`)
    console.log(`head ${chain.head.number} ${chain.head.hashHex}`)
    console.log(`td ${chain.head.td}`)
    console.log(`network ${chain.networkId}`)
    console.log(`forkid ${FORK_ID.hash} ${FORK_ID.next}`)
    return
  }
  if (cmd !== 'expect' || opts.origin === undefined || opts.amount === undefined) {
    throw new Error('usage: node chain.js info | expect --origin NUM|0xHASH --amount N ' +
      '[--skip K] [--reverse] [--format hashes|numbers|rlp] [--out FILE]')
  }
  const numbers = expectedNumbers(chain, {
    origin: parseOrigin(opts.origin),
    amount: BigInt(opts.amount),
    skip: BigInt(opts.skip),
    reverse: opts.reverse,
  })
  let out
  if (opts.format === 'rlp') out = Buffer.concat(numbers.map((n) => chain.headers[n].raw))
  else if (opts.format === 'numbers') out = numbers.map((n) => `${n}\n`).join('')
  else if (opts.format === 'hashes') out = numbers.map((n) => `${n} ${chain.headers[n].hashHex}\n`).join('')
  else throw new Error(`unknown --format ${opts.format}`)
  if (opts.out !== undefined) fs.writeFileSync(opts.out, out)
  else process.stdout.write(out)
}

if (require.main === module) {
  try {
    cli(process.argv.slice(2))
  } catch (err) {
    console.error(`chain.js: ${err.message}`)
    process.exit(2)
  }
}
