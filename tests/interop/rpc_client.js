'use strict'
// headerd serve --rpc read through independent code: ethers (JsonRpcProvider, Transaction) and
// @ethereumjs/block judge what the endpoint answers; nothing of headerd's decides a verdict.
//
//   sepolia: a datadir anchored at Sepolia's epoch 21 with its history. Every block 172032..180223 by
//            number with full transactions: the header hash rebuilt by @ethereumjs/block from the
//            JSON equals the era1 file's, the transactions rebuilt from the JSON give the header's
//            transactions root, and each transaction rebuilt by ethers has the hash and sender the
//            JSON names. debug_getRawHeader equals the era1 header bytes; debug_getRawBlock decodes
//            to the same block; debug_getRawReceipts gives the header's receipts root. By hash,
//            headers only, tags, and blocks not held.
//   mainnet: a headers-only datadir of blocks 0..8191. Headers and raw headers match the mainnet
//            list; a block without transactions and uncles is whole (its body is empty by its
//            roots), one with an uncle is refused with geth's 4444 "pruned history unavailable".
//            Then the errors and limits, given as the server's (parse error, unknown method, bad
//            params, batches, notifications, the reply limit, HTTP 403/404/405/413/415).
//
// Usage: rpc_client.js URL --network mainnet|sepolia [--era1 FILE] [--batch-limit N]
//                          [--response-limit BYTES] [--body-limit BYTES]
// Exits 0 when every check passes.

const { ethers } = require('ethers')
const { RLP } = require('@ethereumjs/rlp')
const { createBlockFromRPC, createBlockFromRLP } = require('@ethereumjs/block')
const { createMPT } = require('@ethereumjs/mpt')
const { Common, Sepolia, Hardfork } = require('@ethereumjs/common')
const { keccak256 } = require('ethereum-cryptography/keccak.js')
const { loadChain, mainnetCommon, hex, fromHex, bytesEqual } = require('./chain.js')
const { readEra1Headers } = require('./era1.js')
const { ok, fail, finish } = require('./session.js')

function parse(argv) {
  const opts = { network: null, era1: null, batchLimit: 1000, responseLimit: 25 << 20, bodyLimit: 5 << 20 }
  const url = argv[0]
  for (let i = 1; i < argv.length; i += 2) {
    const v = argv[i + 1]
    if (argv[i] === '--network') opts.network = v
    else if (argv[i] === '--era1') opts.era1 = v
    else if (argv[i] === '--batch-limit') opts.batchLimit = Number(v)
    else if (argv[i] === '--response-limit') opts.responseLimit = Number(v)
    else if (argv[i] === '--body-limit') opts.bodyLimit = Number(v)
    else throw new Error(`unknown option ${argv[i]}`)
  }
  if (!url || !['mainnet', 'sepolia'].includes(opts.network) || (opts.network === 'sepolia' && !opts.era1)) {
    throw new Error('usage: rpc_client.js URL --network mainnet|sepolia [--era1 FILE] [...]')
  }
  return { url, ...opts }
}

const qty = (n) => '0x' + n.toString(16)

// One raw HTTP exchange: status, and the body parsed as JSON when it is JSON.
async function post(url, body, headers = { 'content-type': 'application/json' }, method = 'POST') {
  const res = await fetch(url, { method, headers, body: method === 'POST' ? body : undefined })
  const text = await res.text()
  let json = null
  try {
    json = text === '' ? null : JSON.parse(text)
  } catch {
    json = null
  }
  return { status: res.status, text, json }
}

const call = (method, params, id = 1) => ({ jsonrpc: '2.0', id, method, params })

async function receiptsRoot(hexReceipts) {
  const trie = await createMPT()
  for (let i = 0; i < hexReceipts.length; i++) await trie.put(RLP.encode(i), fromHex(hexReceipts[i]))
  return trie.root()
}

// Sends `calls` in batches of `size` and returns the results in order; an error fails the run.
async function batched(url, calls, size = 100) {
  const out = []
  for (let i = 0; i < calls.length; i += size) {
    const chunk = calls.slice(i, i + size).map((c, j) => ({ ...c, id: i + j }))
    const r = await post(url, JSON.stringify(chunk))
    if (r.status !== 200 || !Array.isArray(r.json)) throw new Error(`batch at ${i}: HTTP ${r.status} ${r.text.slice(0, 200)}`)
    const byId = new Map(r.json.map((x) => [x.id, x]))
    for (const c of chunk) {
      const x = byId.get(c.id)
      if (!x || x.error) throw new Error(`${c.method} ${JSON.stringify(c.params)}: ${JSON.stringify(x && x.error)}`)
      out.push(x.result)
    }
  }
  return out
}

// Rebuilds each transaction of an ethers block from its fields alone and compares the hash and
// sender ethers computes with those the endpoint named.
function checkTransactions(block, where) {
  let n = 0
  for (const tx of block.prefetchedTransactions) {
    const rebuilt = ethers.Transaction.from({
      type: tx.type,
      chainId: tx.type === 0 && tx.signature.networkV === null ? 0n : tx.chainId,
      nonce: tx.nonce,
      gasLimit: tx.gasLimit,
      gasPrice: tx.type < 2 ? tx.gasPrice : undefined,
      maxFeePerGas: tx.maxFeePerGas,
      maxPriorityFeePerGas: tx.maxPriorityFeePerGas,
      to: tx.to,
      value: tx.value,
      data: tx.data,
      accessList: tx.accessList,
      signature: tx.signature,
    })
    if (rebuilt.hash !== tx.hash) throw new Error(`${where}: transaction ${tx.index} hash ${tx.hash}, its fields hash to ${rebuilt.hash}`)
    if (rebuilt.from !== tx.from) throw new Error(`${where}: transaction ${tx.index} from ${tx.from}, its signature says ${rebuilt.from}`)
    n++
  }
  return n
}

async function sepolia(args, provider) {
  const headers = readEra1Headers(args.era1)
  const first = headers[0].number
  const last = headers[headers.length - 1].number
  const common = new Common({ chain: Sepolia, hardfork: Hardfork.London })

  const net = await provider.getNetwork()
  net.chainId === 11155111n ? ok('eth_chainId: 11155111 (Sepolia)') : fail(`eth_chainId ${net.chainId}`)
  const head = await provider.getBlockNumber()
  head === last ? ok(`eth_blockNumber: ${head}`) : fail(`eth_blockNumber ${head}, expected ${last}`)

  // Every block with its transactions, as raw JSON (for @ethereumjs/block) and through ethers.
  const raw = await batched(args.url, headers.map((h) => call('eth_getBlockByNumber', [qty(h.number), true])))
  let txs = 0
  const withTxs = []
  for (let i = 0; i < headers.length; i++) {
    const h = headers[i]
    const json = raw[i]
    const where = `block ${h.number}`
    if (json.hash !== h.hashHex) throw new Error(`${where}: hash ${json.hash}, the era1 file has ${h.hashHex}`)
    const block = createBlockFromRPC(json, [], { common })
    if (!bytesEqual(block.hash(), h.hash)) throw new Error(`${where}: @ethereumjs/block hashes the JSON to ${hex(block.hash())}`)
    if (!(await block.transactionsTrieIsValid())) throw new Error(`${where}: transactions do not give the transactions root`)
    if (json.transactions.length > 0) withTxs.push(h.number)
    txs += json.transactions.length
  }
  ok(`eth_getBlockByNumber(n, true) for ${headers.length} blocks: hashes rebuilt by @ethereumjs/block equal the era1 file's, ${txs} transactions give each transactions root`)
  let checked = 0
  for (const n of withTxs) checked += checkTransactions(await provider.getBlock(n, true), `block ${n}`)
  checked === txs && txs === 93
    ? ok(`ethers: ${checked} transactions in ${withTxs.length} blocks rebuilt from their fields have the hash and sender named`)
    : fail(`ethers checked ${checked} transactions of ${txs} (93 expected)`)

  const rawHeaders = await batched(args.url, headers.map((h) => call('debug_getRawHeader', [qty(h.number)])))
  rawHeaders.every((r, i) => r === hex(headers[i].raw))
    ? ok(`debug_getRawHeader: ${headers.length} headers equal the era1 file's bytes`)
    : fail('debug_getRawHeader differs from the era1 file')

  const rawBlocks = await batched(args.url, withTxs.map((n) => call('debug_getRawBlock', [qty(n)])))
  for (let i = 0; i < withTxs.length; i++) {
    const block = createBlockFromRLP(fromHex(rawBlocks[i]), { common })
    const h = headers[withTxs[i] - first]
    if (!bytesEqual(block.hash(), h.hash) || !(await block.transactionsTrieIsValid()) || !block.uncleHashIsValid()) {
      throw new Error(`debug_getRawBlock ${withTxs[i]}: not the block of the era1 header`)
    }
  }
  ok(`debug_getRawBlock: ${withTxs.length} blocks decoded by @ethereumjs/block, hashes and roots valid`)

  const someEmpty = [first, first + 1, last]
  const receiptBlocks = [...withTxs, ...someEmpty]
  const receipts = await batched(args.url, receiptBlocks.map((n) => call('debug_getRawReceipts', [qty(n)])))
  let nReceipts = 0
  for (let i = 0; i < receiptBlocks.length; i++) {
    const h = headers[receiptBlocks[i] - first]
    const root = await receiptsRoot(receipts[i])
    if (!bytesEqual(root, h.fields[5])) throw new Error(`debug_getRawReceipts ${receiptBlocks[i]}: root ${hex(root)}`)
    nReceipts += receipts[i].length
  }
  nReceipts === 93
    ? ok(`debug_getRawReceipts: ${receiptBlocks.length} blocks, ${nReceipts} receipts give each receipts root (@ethereumjs/mpt)`)
    : fail(`debug_getRawReceipts: ${nReceipts} receipts, expected 93`)

  // By hash (and EIP-1898's object form), headers only, tags, and blocks not held.
  const probe = headers[withTxs[0] - first]
  const byHash = await provider.getBlock(probe.hashHex)
  byHash && byHash.number === probe.number ? ok('eth_getBlockByHash finds the block') : fail('eth_getBlockByHash')
  const rh = await provider.send('debug_getRawHeader', [{ blockHash: probe.hashHex, requireCanonical: true }])
  rh === hex(probe.raw) ? ok('debug_getRawHeader by {blockHash}') : fail('debug_getRawHeader by {blockHash}')
  const header = await provider.send('eth_getHeaderByNumber', [qty(probe.number)])
  header.hash === probe.hashHex && header.transactions === undefined ? ok('eth_getHeaderByNumber') : fail('eth_getHeaderByNumber')
  // (ethers sends "earliest" as 0x0, so the tag goes as is)
  const earliest = await provider.send('eth_getBlockByNumber', ['earliest', false])
  Number(earliest.number) === first ? ok(`"earliest" is the first block held, ${first}`) : fail(`earliest: ${JSON.stringify(earliest)}`)
  const latest = await provider.getBlock('latest')
  latest.number === last ? ok('"latest" is the head') : fail(`latest: ${latest.number}`)
  const below = await provider.getBlock(first - 1)
  const above = await provider.getBlock(last + 1)
  below === null && above === null ? ok('blocks below the anchor and past the head are null') : fail('blocks not held are not null')
  const unknown = await provider.getBlock('0x' + '11'.repeat(32))
  unknown === null ? ok('an unknown hash is null') : fail('an unknown hash found a block')
}

async function mainnet(args, provider) {
  const chain = loadChain({ verify: false })
  const common = mainnetCommon()
  const net = await provider.getNetwork()
  net.chainId === 1n ? ok('eth_chainId: 1') : fail(`eth_chainId ${net.chainId}`)
  const rawHeaders = await batched(args.url, chain.headers.map((h) => call('debug_getRawHeader', [qty(h.number)])))
  rawHeaders.every((r, i) => r === hex(chain.headers[i].raw))
    ? ok(`debug_getRawHeader: ${chain.headers.length} headers equal the mainnet list's bytes`)
    : fail('debug_getRawHeader differs from the mainnet list')
  const headerJson = await batched(args.url, chain.headers.map((h) => call('eth_getHeaderByNumber', [qty(h.number)])))
  const emptyOmmers = '0x1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347'
  const withUncle = headerJson.find((h) => h.sha3Uncles !== emptyOmmers)
  const plain = headerJson.filter((h) => h.sha3Uncles === emptyOmmers).slice(0, 50)
  headerJson.every((h, i) => h.hash === hex(chain.headers[i].hash))
    ? ok(`eth_getHeaderByNumber: ${headerJson.length} hashes equal the mainnet list's`)
    : fail('eth_getHeaderByNumber hashes differ')
  const blocks = await batched(args.url, plain.map((h) => call('eth_getBlockByNumber', [h.number, true])))
  for (const b of blocks) {
    const block = createBlockFromRPC(b, [], { common, setHardfork: true })
    if (b.hash !== hex(chain.headers[Number(b.number)].hash) || !bytesEqual(block.hash(), fromHex(b.hash))) {
      throw new Error(`block ${Number(b.number)}: hash ${b.hash}`)
    }
    if (b.transactions.length !== 0 || b.uncles.length !== 0) throw new Error(`block ${Number(b.number)}: not empty`)
  }
  ok(`headers only: ${blocks.length} blocks without transactions or uncles are whole, hashes rebuilt by @ethereumjs/block`)
  const refused = await post(args.url, JSON.stringify(call('eth_getBlockByNumber', [withUncle.number, false])))
  refused.json && refused.json.error && refused.json.error.code === 4444
    ? ok(`headers only: block ${Number(withUncle.number)} (an uncle) is refused: 4444 ${refused.json.error.message}`)
    : fail(`block with an uncle on a headers-only node: ${refused.text}`)
  const receipts = await provider.send('debug_getRawReceipts', [withUncle.number])
  Array.isArray(receipts) && receipts.length === 0
    ? ok('headers only: a block whose receipts root is empty has an empty receipt list')
    : fail(`debug_getRawReceipts: ${JSON.stringify(receipts)}`)
}

async function limits(args) {
  const u = args.url
  const expectError = async (what, body, code) => {
    const r = await post(u, body)
    const e = r.json && (Array.isArray(r.json) ? r.json[0] : r.json).error
    e && e.code === code ? ok(`${what}: ${code} ${e.message}`) : fail(`${what}: HTTP ${r.status} ${r.text.slice(0, 200)}`)
  }
  await expectError('parse error', '{"jsonrpc":"2.0",', -32700)
  await expectError('unknown method', JSON.stringify(call('eth_getBalance', ['0x' + '00'.repeat(20), 'latest'])), -32601)
  await expectError('leading zero', JSON.stringify(call('eth_getBlockByNumber', ['0x01', false])), -32602)
  await expectError('missing fullTx', JSON.stringify(call('eth_getBlockByNumber', ['latest'])), -32602)
  await expectError('not JSON-RPC 2.0', JSON.stringify({ id: 1, method: 'eth_blockNumber' }), -32600)
  await expectError('empty batch', '[]', -32600)
  await expectError('safe tag', JSON.stringify(call('eth_getBlockByNumber', ['safe', false])), -32000)
  const big = Array.from({ length: args.batchLimit + 1 }, (_, i) => call('eth_blockNumber', [], i))
  await expectError(`batch of ${args.batchLimit + 1}`, JSON.stringify(big), -32600)
  const note = await post(u, JSON.stringify({ jsonrpc: '2.0', method: 'eth_blockNumber' }))
  note.status === 200 && note.text === '' ? ok('a notification gets no reply') : fail(`notification: ${note.status} ${note.text}`)
  const mixed = await post(u, JSON.stringify([{ jsonrpc: '2.0', method: 'eth_blockNumber' }, call('eth_chainId', [], 7)]))
  Array.isArray(mixed.json) && mixed.json.length === 1 && mixed.json[0].id === 7
    ? ok('a batch answers its calls, not its notifications')
    : fail(`batch with a notification: ${mixed.text}`)
  // The reply limit: a batch of whole headers larger than it; the calls past it fail with -32003.
  const many = Math.min(args.batchLimit, Math.ceil(args.responseLimit / 500) + 10)
  const heavy = await post(u, JSON.stringify(Array.from({ length: many }, (_, i) => call('eth_getHeaderByNumber', ['latest'], i))))
  const tooLarge = Array.isArray(heavy.json) ? heavy.json.filter((x) => x.error && x.error.code === -32003).length : -1
  const answered = Array.isArray(heavy.json) ? heavy.json.filter((x) => x.result).length : -1
  tooLarge > 0 && answered > 0 && answered + tooLarge === many
    ? ok(`a batch past --rpc.response-limit: ${answered} answered, ${tooLarge} refused with -32003`)
    : fail(`response limit: ${heavy.status} answered ${answered}, refused ${tooLarge}`)
  const huge = await post(u, JSON.stringify(call('eth_blockNumber', ['x'.repeat(args.bodyLimit)])))
  huge.status === 413 ? ok(`a body over --rpc.body-limit: HTTP 413`) : fail(`big body: HTTP ${huge.status}`)
  const text = await post(u, JSON.stringify(call('eth_blockNumber', [])), { 'content-type': 'text/plain' })
  text.status === 415 ? ok('Content-Type text/plain: HTTP 415') : fail(`text/plain: HTTP ${text.status}`)
  const get = await post(u, null, {}, 'GET')
  get.status === 405 ? ok('GET: HTTP 405') : fail(`GET: HTTP ${get.status}`)
  const other = await post(u.replace(/\/$/, '') + '/other', JSON.stringify(call('eth_blockNumber', [])))
  other.status === 404 ? ok('another path: HTTP 404') : fail(`/other: HTTP ${other.status}`)
  // A DNS-rebinding page reaches the port under its own name: refused (the Host header).
  const rebound = await new Promise((resolve, reject) => {
    const target = new URL(u)
    const req = require('http').request(
      { host: target.hostname, port: target.port, path: '/', method: 'POST', headers: { host: 'attacker.example', 'content-type': 'application/json' } },
      (res) => {
        res.resume()
        resolve(res.statusCode)
      },
    )
    req.on('error', reject)
    req.end(JSON.stringify(call('eth_blockNumber', [])))
  })
  rebound === 403 ? ok('Host attacker.example: HTTP 403') : fail(`Host attacker.example: HTTP ${rebound}`)
}

async function main() {
  let args
  try {
    args = parse(process.argv.slice(2))
  } catch (err) {
    console.error(`rpc_client.js: ${err.message}`)
    process.exit(2)
  }
  const provider = new ethers.JsonRpcProvider(args.url, undefined, { staticNetwork: false, batchMaxCount: 50 })
  try {
    if (args.network === 'sepolia') {
      await sepolia(args, provider)
    } else {
      await mainnet(args, provider)
      await limits(args)
    }
  } catch (err) {
    fail(err.stack || err.message)
  }
  provider.destroy()
  finish()
}

main()
