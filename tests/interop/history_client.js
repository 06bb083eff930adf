#!/usr/bin/env node
'use strict'
// An @ethereumjs/devp2p peer that fetches every block body and receipt list of an epoch from a
// history server (headerd serve on a datadir imported with --history) and checks each against its
// header with independent code: @ethereumjs/block rebuilds the transactions trie and the uncle
// hash, @ethereumjs/mpt the receipts trie. Nothing of headerd's decides whether a reply is right.
//
//   node history_client.js ENODE [--eth 68|69] [--network mainnet|sepolia] [--era1 FILE]
//                                [--timeout SECONDS]
//
// mainnet: blocks 0..8191, headers from tests/data, checked on load by chain.js.
// sepolia: the epoch in --era1 FILE (tests/data's epoch 21, blocks 172032..180223, with real
// transactions and receipts), its headers read from the file by era1.js and checked by their
// links; the server must serve those same headers and nothing below the epoch.
// Asks as geth's downloader does (128 bodies, 256 receipt lists a request), then checks the
// serving rules: a request of 1100 hashes gets 1024 bodies, and a reply ends at an unknown hash.
// eth/69: the Status must announce the epoch (every block's body and receipts are served).
// Prints "ok: ..." / "FAIL: ..." lines and exits 0 only if every check passed.

const { RLP } = require('@ethereumjs/rlp')
const { createBlockFromBytesArray } = require('@ethereumjs/block')
const { createMPT } = require('@ethereumjs/mpt')
const { keccak256 } = require('ethereum-cryptography/keccak.js')
const { loadChain, mainnetCommon, listElements, bytesEqual, bytesToUint, uintBytes, hex } = require('./chain.js')
const { CODES, statusOpts } = require('./eth.js')
const { connect, exchangeStatus, closeText, ok, fail, finish, startRun } = require('./session.js')
const { epochChain } = require('./era1.js')

const USAGE =
  'usage: node history_client.js ENODE [--eth 68|69] [--network mainnet|sepolia] [--era1 FILE] [--timeout SECONDS]'
const BODIES_PER_REQUEST = 128 // geth's MaxBlockFetch
const RECEIPTS_PER_REQUEST = 256 // geth's MaxReceiptFetch
const MAX_ITEMS_SERVE = 1024 // geth's maxBodiesServe / maxReceiptsServe

// The items of a [id, [item...]] reply with request id `id`.
function replyItems(raw, id) {
  const [idRaw, listRaw] = listElements(raw)
  if (bytesToUint(RLP.decode(idRaw)) !== id) throw new Error('reply carries another request id')
  return listElements(listRaw)
}

// eth/69 receipts have no bloom: the consensus form (the trie's values) needs it back, computed
// from the logs as the yellow paper says (4.3.1) — written here, not taken from headerd.
function bloomOf(logs) {
  const bloom = new Uint8Array(256)
  const add = (data) => {
    const h = keccak256(data)
    for (let i = 0; i < 6; i += 2) {
      const bit = ((h[i] << 8) | h[i + 1]) & 2047
      bloom[255 - (bit >> 3)] |= 1 << (bit & 7)
    }
  }
  for (const [address, topics] of logs) {
    add(address)
    for (const t of topics) add(t)
  }
  return bloom
}

// The trie value of one receipt as the reply carries it, in the consensus form.
function receiptValue(raw, version) {
  if (version < 69) {
    // A legacy receipt is its list; a typed one the string type || rlp(list).
    return raw[0] >= 0xc0 ? raw : RLP.decode(raw)
  }
  const [type, status, gas, logs] = RLP.decode(raw)
  const list = RLP.encode([status, gas, bloomOf(logs), logs])
  const t = Number(bytesToUint(type))
  return t === 0 ? list : Uint8Array.from([t, ...list])
}

async function receiptsRoot(values) {
  const trie = await createMPT()
  for (let i = 0; i < values.length; i++) await trie.put(RLP.encode(i), values[i])
  return trie.root()
}

// The headers the server gives for [from, from + count).
async function headersFrom(session, id, from, count) {
  const request = [uintBytes(from), uintBytes(count), uintBytes(0), uintBytes(0)]
  return replyItems(await session.request(CODES.GET_BLOCK_HEADERS, CODES.BLOCK_HEADERS, id, request), id)
}

async function main() {
  const args = startRun(
    'history_client.js',
    USAGE,
    { eth: '68', timeout: '120', network: 'mainnet', era1: '' },
    (a) => {
      if (a.versions.length !== 1) throw new Error('--eth: one version')
      if (a.network !== 'mainnet' && a.network !== 'sepolia') throw new Error(`--network: ${a.network}`)
      if (a.network === 'sepolia' && a.era1 === '') throw new Error('--network sepolia needs --era1 FILE')
    },
  )
  args.version = args.versions[0]

  // Sepolia: the epoch's headers read from the file by era1.js (checked by their links), in the
  // shape loadChain gives.
  const chain =
    args.network === 'mainnet' ? { ...loadChain(), common: mainnetCommon() } : epochChain(args.era1, 'sepolia', { history: false })
  const common = chain.common
  const first = chain.headers[0].number
  const session = await connect(args.target, [args.version], { common })
  const status = await exchangeStatus(session, statusOpts(args.version, chain))
  ok(`connected to a ${args.network} node, eth/${args.version} Status accepted`)
  if (args.version >= 69) {
    const f = status.fields
    const range = `${bytesToUint(f[4])}..${bytesToUint(f[5])}`
    if (range === `${first}..${chain.head.number}`) ok(`Status announces the full-block range ${range}`)
    else fail(`Status announces ${range}, expected ${first}..${chain.head.number}`)
  }
  // The head the server names: eth/69's latestHash, eth/68's bestHash (the library's status object).
  const headHash = args.version >= 69 ? status.fields[6] : status.bestHash
  if (bytesEqual(headHash, chain.head.hash)) ok(`Status names block ${chain.head.number} as the head`)
  else fail(`Status head hash ${hex(headHash)}, expected ${chain.head.hashHex}`)

  let id = 1n
  // Bodies: every block, checked against its header by @ethereumjs/block.
  let bodies = 0
  let uncles = 0
  let txCount = 0
  for (let from = 0; from < chain.headers.length; from += BODIES_PER_REQUEST) {
    const hs = chain.headers.slice(from, from + BODIES_PER_REQUEST)
    id++
    const items = replyItems(await session.request(CODES.GET_BLOCK_BODIES, CODES.BLOCK_BODIES, id, hs.map((h) => h.hash)), id)
    if (items.length !== hs.length) {
      fail(`GetBlockBodies ${first + from}..${first + from + hs.length - 1}: ${items.length} bodies, expected ${hs.length}`)
      continue
    }
    for (let i = 0; i < hs.length; i++) {
      const [txs, ommers, ...rest] = RLP.decode(items[i])
      const block = createBlockFromBytesArray([hs[i].fields, txs, ommers, ...rest], { common, setHardfork: false })
      if (!(await block.transactionsTrieIsValid())) fail(`block ${hs[i].number}: transactions do not match the root`)
      else if (!block.uncleHashIsValid()) fail(`block ${hs[i].number}: uncles do not match the ommers hash`)
      else bodies++
      uncles += ommers.length
      txCount += txs.length
    }
  }
  if (bodies === chain.headers.length) ok(`${bodies} bodies (${txCount} transactions, ${uncles} uncles) match their headers`)

  // Receipts: every block, checked against receiptsRoot with @ethereumjs/mpt.
  let lists = 0
  let receipts = 0
  for (let from = 0; from < chain.headers.length; from += RECEIPTS_PER_REQUEST) {
    const hs = chain.headers.slice(from, from + RECEIPTS_PER_REQUEST)
    id++
    const items = replyItems(await session.request(CODES.GET_RECEIPTS, CODES.RECEIPTS, id, hs.map((h) => h.hash)), id)
    if (items.length !== hs.length) {
      fail(`GetReceipts ${first + from}..${first + from + hs.length - 1}: ${items.length} lists, expected ${hs.length}`)
      continue
    }
    for (let i = 0; i < hs.length; i++) {
      const values = listElements(items[i]).map((r) => receiptValue(r, args.version))
      const root = await receiptsRoot(values)
      if (!bytesEqual(root, hs[i].fields[5])) fail(`block ${hs[i].number}: receipts do not match the root`)
      else lists++
      receipts += values.length
    }
  }
  if (lists === chain.headers.length) ok(`${lists} receipt lists (${receipts} receipts) match their headers`)

  // The headers: the same bytes as ours, and none below the first block held.
  id++
  const served = await headersFrom(session, id, first, 192)
  const same = served.length === 192 && served.every((raw, i) => bytesEqual(raw, chain.headers[i].raw))
  if (same) ok(`GetBlockHeaders ${first}+192: the same headers, byte for byte`)
  else fail(`GetBlockHeaders ${first}+192: ${served.length} headers, not ours`)
  if (first > 0) {
    id++
    const below = await headersFrom(session, id, first - 1, 2)
    if (below.length === 0) ok(`GetBlockHeaders from block ${first - 1}, below the epoch: nothing`)
    else fail(`GetBlockHeaders from block ${first - 1}: ${below.length} headers, expected none`)
  }

  // The serving rules.
  id++
  const many = chain.headers.slice(0, 1100).map((h) => h.hash)
  const capped = replyItems(await session.request(CODES.GET_BLOCK_BODIES, CODES.BLOCK_BODIES, id, many), id)
  if (capped.length === MAX_ITEMS_SERVE) ok(`1100 hashes asked, ${MAX_ITEMS_SERVE} bodies served`)
  else fail(`1100 hashes asked, ${capped.length} bodies served (expected ${MAX_ITEMS_SERVE})`)
  id++
  const unknown = keccak256(new TextEncoder().encode('headerd history interop: no such block'))
  const cut = [chain.headers[10].hash, chain.headers[11].hash, unknown, chain.headers[12].hash]
  const ended = replyItems(await session.request(CODES.GET_RECEIPTS, CODES.RECEIPTS, id, cut), id)
  if (ended.length === 2) ok('a reply ends at the first unknown hash')
  else fail(`unknown third hash: ${ended.length} receipt lists (expected 2)`)

  if (session.unexpected.length === 0) ok('no unsolicited or undecodable responses')
  else for (const u of session.unexpected) fail(u)
  if (session.closed === null) ok('connection still up after all requests')
  else fail(`connection closed (${closeText(session.closed.reason, session.closed.byUs)})`)
  session.close()
  finish()
}

main().catch((err) => {
  fail(`harness error: ${err.stack || err.message}`)
  finish()
})
