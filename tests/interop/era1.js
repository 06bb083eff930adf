'use strict'
// The headers, bodies and receipt lists of an era1 archive, read with code of our own here (the
// e2store framing and the snappy frame format) and snappyjs for the snappy blocks: nothing of
// headerd's decides what the archive holds. Used by history_client.js to judge a history server on
// an epoch whose headers are not in tests/data as a header list, and by server.js --era1 to serve
// an epoch's bodies and receipts.
//
// e2store: records of [type u16 LE][length u32 LE][reserved u16 = 0][data]; era1 types below.
// Headers, bodies and receipts are snappy frame streams; the total difficulty is a 32-byte
// little-endian integer. Spec: github.com/eth-clients/e2store-format-specs, formats/era1.md.

const fs = require('node:fs')
const snappy = require('snappyjs')
const { RLP } = require('@ethereumjs/rlp')
const { keccak256 } = require('ethereum-cryptography/keccak.js')
const { Common, Sepolia, Hardfork } = require('@ethereumjs/common')
const { hex, fromHex, bytesEqual, bytesToUint, mainnetCommon, NETWORK_ID, GENESIS_HASH_HEX, FORK_ID } = require('./chain.js')

const SEPOLIA_NETWORK_ID = 11155111n
const SEPOLIA_GENESIS = '0x25a5cc106eea7138acab33231d7160d69cb777ee0c2c553fcddf5138993e6dd9'

const TYPE_VERSION = 0x3265
const TYPE_HEADER = 0x03
const TYPE_BODY = 0x04
const TYPE_RECEIPTS = 0x05
const TYPE_TOTAL_DIFFICULTY = 0x06

// Decodes a snappy frame stream (stream identifier, then compressed or uncompressed chunks).
// The chunks' CRCs are not checked here: the header hashes, checked against their links and the
// server's, catch any damage that matters to the test.
function unframe(bytes) {
  const parts = []
  let at = 0
  while (at < bytes.length) {
    if (at + 4 > bytes.length) throw new Error('snappy frame: truncated chunk header')
    const type = bytes[at]
    const len = bytes[at + 1] | (bytes[at + 2] << 8) | (bytes[at + 3] << 16)
    const body = bytes.subarray(at + 4, at + 4 + len)
    if (body.length !== len) throw new Error('snappy frame: truncated chunk')
    if (type === 0x00) parts.push(snappy.uncompress(body.subarray(4)))
    else if (type === 0x01) parts.push(body.subarray(4))
    else if (type === 0xff) {
      if (Buffer.from(body).toString('latin1') !== 'sNaPpY') throw new Error('snappy frame: bad stream identifier')
    } else if (type < 0x80) throw new Error(`snappy frame: unskippable chunk type ${type}`)
    at += 4 + len
  }
  return Uint8Array.from(Buffer.concat(parts.map((p) => Buffer.from(p))))
}

function littleEndian(bytes) {
  let v = 0n
  for (let i = bytes.length - 1; i >= 0; i--) v = (v << 8n) | BigInt(bytes[i])
  return v
}

// The archive's headers in order, each { number, raw, hash, hashHex, td, fields }, checked: each
// header's number follows the one before and its parent hash is that one's keccak.
function readEra1Headers(file) {
  return readEra1(file, { history: false }).headers
}

// The archive's blocks: `headers` as readEra1Headers gives them and, with history (the default),
// `bodies` and `receipts`, each block's record as stored (rlp([transactions, uncles]) and its
// receipt list in the consensus form), by position. Not checked against the headers here: the
// server serves them as the file holds them, and the client under test checks them.
function readEra1(file, { history = true } = {}) {
  const buf = new Uint8Array(fs.readFileSync(file))
  const headers = []
  const bodies = []
  const receipts = []
  let pendingRaw = null
  let at = 0
  while (at < buf.length) {
    if (at + 8 > buf.length) throw new Error(`${file}: truncated record header at ${at}`)
    const type = buf[at] | (buf[at + 1] << 8)
    const len = (buf[at + 2] | (buf[at + 3] << 8) | (buf[at + 4] << 16)) + buf[at + 5] * 2 ** 24
    const data = buf.subarray(at + 8, at + 8 + len)
    if (data.length !== len) throw new Error(`${file}: record at ${at} runs past the end`)
    if (at === 0 && type !== TYPE_VERSION) throw new Error(`${file}: no version record first`)
    if (type === TYPE_HEADER) pendingRaw = unframe(data)
    else if (type === TYPE_BODY && history) bodies.push(unframe(data))
    else if (type === TYPE_RECEIPTS && history) receipts.push(unframe(data))
    else if (type === TYPE_TOTAL_DIFFICULTY) {
      if (pendingRaw === null) throw new Error(`${file}: total difficulty without a header at ${at}`)
      const raw = pendingRaw
      const hash = keccak256(raw)
      const fields = RLP.decode(raw)
      const number = Number(bytesToUint(fields[8]))
      const prev = headers[headers.length - 1]
      if (prev !== undefined && (number !== prev.number + 1 || !bytesEqual(fields[0], prev.hash))) {
        throw new Error(`${file}: block ${number} does not follow block ${prev.number}`)
      }
      headers.push({ number, raw, hash, hashHex: hex(hash), td: littleEndian(data), fields })
      pendingRaw = null
    }
    at += 8 + len
  }
  if (headers.length === 0) throw new Error(`${file}: no headers`)
  if (history && (bodies.length !== headers.length || receipts.length !== headers.length)) {
    throw new Error(`${file}: ${headers.length} headers, ${bodies.length} bodies, ${receipts.length} receipt lists`)
  }
  return { headers, bodies, receipts }
}

// One epoch as the harness's chain object (chain.js loadChain's shape: headers, head, genesisHash,
// networkId, forkId, byHash), holding blocks first..head: `at(n)` is block n's header, `first` and
// `earliest` the epoch's first block; with history also `bodies` and `receipts` by position.
// `common` is the chain ethereumjs judges blocks and fork ids by.
function epochChain(file, network, { history = true } = {}) {
  const { headers, bodies, receipts } = readEra1(file, { history })
  const first = headers[0].number
  const head = headers[headers.length - 1]
  const index = new Map(headers.map((h) => [h.hashHex, h]))
  let chain
  if (network === 'sepolia') {
    // Sepolia's forks up to block 1,735,371 (MergeNetsplit) all came at block 0: from the genesis to
    // there, a node is at London; @ethereumjs/common derives the fork id from its own table.
    const common = new Common({ chain: Sepolia, hardfork: Hardfork.London })
    chain = {
      genesisHash: fromHex(SEPOLIA_GENESIS),
      networkId: SEPOLIA_NETWORK_ID,
      forkId: { hash: fromHex(common.forkHash(Hardfork.London)), next: common.nextHardforkBlockOrTimestamp(Hardfork.London) },
      common,
    }
  } else if (network === 'mainnet') {
    if (BigInt(head.number) >= FORK_ID.next) throw new Error(`${file}: the fork id constant assumes a head below ${FORK_ID.next}`)
    if (first === 0 && head !== undefined && headers[0].hashHex !== GENESIS_HASH_HEX) throw new Error(`${file}: not mainnet`)
    chain = {
      genesisHash: fromHex(GENESIS_HASH_HEX),
      networkId: NETWORK_ID,
      forkId: { hash: fromHex(FORK_ID.hash), next: FORK_ID.next },
      common: mainnetCommon(),
    }
  } else {
    throw new Error(`unknown network ${network}`)
  }
  return {
    ...chain,
    headers,
    bodies,
    receipts,
    head,
    first,
    earliest: first,
    at: (n) => headers[n - first],
    byHash: (hash) => index.get(hex(hash)),
  }
}

module.exports = { readEra1, readEra1Headers, epochChain }
