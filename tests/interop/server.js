#!/usr/bin/env node
'use strict'
// An @ethereumjs/devp2p peer that serves the mainnet headers 0..8191 from tests/data, for
// `headerd get/sync/load --peer ENODE` to dial; with --era1, an epoch's headers, bodies and receipt
// lists from that era1 file (mainnet's epoch 0, or with --network sepolia Sepolia's epoch 21).
//
//   node server.js --port P --out ENODE_FILE [--eth 68|69|68,69] [--idle SECONDS]
//                  [--key HEX32] [--max-peers N] [--era1 FILE [--network mainnet|sepolia]]
//                  [--fault extra-header|corrupt-header|stale-id|wrong-code|no-reply]
//                  [--fault HISTORY_FAULT[,HISTORY_FAULT...]]   (with --era1)
//
// Listens on 127.0.0.1:P (P = 0 picks a free port), writes its enode URL to ENODE_FILE once
// listening (atomically: pollers never see a partial line), logs one line per event to stdout,
// and exits 0 after --idle seconds without any connection or message (default 60) or on
// SIGTERM/SIGINT. Exits 1 if it cannot listen.
//
// --fault makes the server deliberately wrong so the tests can prove a client notices: one header
// more than asked, one byte of a header changed, a reply for request id + 1 (stale), an empty
// BlockBodies instead of BlockHeaders (wrong code), or no reply at all (lost); never use it otherwise.
// The history faults (with --era1) lie in BlockBodies and Receipts replies only (headers stay
// right); each reply takes the next fault of the list that applies to its message, in turn:
//   altered-tx      a body's transactions no longer match its transactionsRoot (the first one's
//                   nonce one more, or a made-up transaction added to a block without any)
//   swapped-body    the last body is the nearest other block's that differs (a body of the wrong block)
//   reordered       the first two items that differ trade places (each at the other's block)
//   altered-receipt a receipt list no longer matches its receiptsRoot (the first receipt's
//                   cumulative gas one more, or a made-up receipt added to an empty list)
//   no-bloom        receipts in the other version's form: eth/68 without blooms, eth/69 with them
//   extra-item      one item more than hashes asked
//   empty-history   no item at all, although the Status (eth/69) announced the whole epoch
// Every fault a reply gets is logged ("FAULT name" on its line).
//
// Bodies and receipts are served by geth's rules (at most 1024 items, stop once past 2 MiB, end at
// the first hash not held); eth/68 receipts as the file stores them, eth/69 without blooms.

const fs = require('node:fs')
const { genPrivateKey } = require('@ethereumjs/devp2p')
const { RLP } = require('@ethereumjs/rlp')
const { loadChain, mainnetCommon, expectedNumbers, bytesToUint, bytesEqual, uintBytes, hex, fromHex, UINT64_MAX } = require('./chain.js')
const { epochChain } = require('./era1.js')
const { CODES, DISCONNECT_REASON, NoDelayRLPx, ethCapability, statusOpts, parseVersions, reasonName } = require('./eth.js')

const USAGE =
  'usage: node server.js --port P --out ENODE_FILE [--eth 68|69|68,69] [--idle SECONDS] [--key HEX32] [--max-peers N] ' +
  '[--era1 FILE [--network mainnet|sepolia]] [--fault FAULT[,FAULT...]]'
const FAULTS = ['extra-header', 'corrupt-header', 'stale-id', 'wrong-code', 'no-reply']
// Faults of the reply as a whole, as opposed to the headers in it.
const REPLY_FAULTS = ['stale-id', 'wrong-code', 'no-reply']
// Faults of BlockBodies and Receipts replies (--era1), taken in turn: those of one message, and
// those of both.
const BODY_FAULTS = ['altered-tx', 'swapped-body']
const RECEIPT_FAULTS = ['altered-receipt', 'no-bloom']
const HISTORY_FAULTS = [...BODY_FAULTS, ...RECEIPT_FAULTS, 'reordered', 'extra-item', 'empty-history']
// geth's serving rules for bodies and receipts (eth/protocols/eth/handlers.go).
const MAX_HISTORY_ITEMS = 1024
const SOFT_RESPONSE_LIMIT = 2 * 1024 * 1024

function parseArgs(argv) {
  const opts = { eth: '68', idle: '60', 'max-peers': '25' }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (a === '--help' || a === '-h') {
      console.log(USAGE)
      process.exit(0)
    }
    const key = a.replace(/^--/, '')
    if (!['port', 'out', 'eth', 'idle', 'key', 'max-peers', 'fault', 'era1', 'network'].includes(key) || i + 1 >= argv.length) {
      throw new Error(`unknown or incomplete argument ${a}\n${USAGE}`)
    }
    opts[key] = argv[++i]
  }
  if (opts.port === undefined || opts.out === undefined) throw new Error(USAGE)
  const port = Number(opts.port)
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`bad --port ${opts.port}`)
  const faults = opts.fault === undefined ? [] : opts.fault.split(',')
  const history = faults.filter((f) => HISTORY_FAULTS.includes(f))
  if (faults.some((f) => !FAULTS.includes(f) && !HISTORY_FAULTS.includes(f))) {
    throw new Error(`--fault: one of ${FAULTS}, or a list of ${HISTORY_FAULTS}`)
  }
  if (history.length !== faults.length && faults.length > 1) throw new Error('--fault: one header fault, alone')
  if (history.length > 0 && opts.era1 === undefined) throw new Error('--fault: history faults need --era1 FILE')
  const network = opts.network ?? 'mainnet'
  if (!['mainnet', 'sepolia'].includes(network)) throw new Error(`--network: mainnet or sepolia, not ${network}`)
  if (opts.network !== undefined && opts.era1 === undefined) throw new Error('--network needs --era1 FILE')
  const idle = Number(opts.idle)
  if (!(idle > 0)) throw new Error(`bad --idle ${opts.idle}`)
  return {
    port,
    out: opts.out,
    versions: parseVersions(opts.eth),
    idleMs: idle * 1000,
    key: opts.key === undefined ? genPrivateKey() : fromHex(opts.key),
    maxPeers: Number(opts['max-peers']),
    fault: history.length > 0 ? undefined : opts.fault,
    historyFaults: history,
    era1: opts.era1,
    network,
  }
}

const log = (msg) => console.log(`[${new Date().toISOString()}] ${msg}`)

// A malformed request is a protocol breach, answered like geth answers it: disconnect.
class ProtocolError extends Error {}

function decodeUint64(bytes, what) {
  try {
    return bytesToUint(bytes, 8)
  } catch (err) {
    throw new ProtocolError(`${what}: ${err.message}`)
  }
}

// GetBlockHeaders = [request-id, [origin, amount, skip, reverse]]; origin is a hash iff it is
// 32 bytes, a number iff it is at most 8; reverse is RLP bool (empty = false, 0x01 = true).
function decodeGetBlockHeaders(payload) {
  if (!Array.isArray(payload) || payload.length !== 2 || !Array.isArray(payload[1]) || payload[1].length !== 4) {
    throw new ProtocolError('GetBlockHeaders must be [id, [origin, amount, skip, reverse]]')
  }
  const [id, [originB, amountB, skipB, reverseB]] = payload
  decodeUint64(id, 'request id')
  let origin
  if (originB instanceof Uint8Array && originB.length === 32) origin = originB
  else if (originB instanceof Uint8Array && originB.length <= 8) origin = decodeUint64(originB, 'origin')
  else throw new ProtocolError('origin is neither a 32-byte hash nor a uint64')
  if (!(reverseB instanceof Uint8Array) || reverseB.length > 1 || (reverseB.length === 1 && reverseB[0] !== 1)) {
    throw new ProtocolError('reverse must be an RLP bool')
  }
  return {
    id,
    origin,
    amount: decodeUint64(amountB, 'amount'),
    skip: decodeUint64(skipB, 'skip'),
    reverse: reverseB.length === 1,
  }
}

function describeOrigin(o) {
  return o instanceof Uint8Array ? hex(o) : o === UINT64_MAX ? '2^64-1' : String(o)
}

function main() {
  const args = parseArgs(process.argv.slice(2))
  // Installed before the (synchronous, ~2 s) chain load, so a SIGTERM sent by a test right after
  // start still means a clean exit 0 rather than death by signal.
  let shutdown = (code) => process.exit(code)
  for (const sig of ['SIGTERM', 'SIGINT']) {
    process.on(sig, () => {
      log(`${sig}, exiting`)
      shutdown(0)
    })
  }
  const chain = args.era1 !== undefined ? epochChain(args.era1, args.network) : loadChain()
  const common = chain.common ?? mainnetCommon()
  const serving = args.era1 !== undefined

  const rlpx = new NoDelayRLPx(args.key, {
    capabilities: args.versions.map((v) => ethCapability(v)),
    common,
    maxPeers: args.maxPeers,
    clientId: new TextEncoder().encode('headerd-interop-server/ethereumjs-devp2p-10.0.0/nodejs'),
  })

  let idleTimer = null
  const touch = () => {
    clearTimeout(idleTimer)
    idleTimer = setTimeout(() => {
      log(`idle for ${args.idleMs / 1000}s, exiting`)
      shutdown(0)
    }, args.idleMs)
  }

  let stopping = false
  shutdown = (code) => {
    if (stopping) return
    stopping = true
    clearTimeout(idleTimer)
    try {
      rlpx.destroy() // sends Disconnect(CLIENT_QUITTING) to connected peers
    } catch {
      // already destroyed
    }
    // Let the Disconnect frames leave before the process goes.
    setTimeout(() => process.exit(code), 200).unref()
  }

  rlpx.events.on('error', (err) => {
    console.error(`server.js: cannot listen on 127.0.0.1:${args.port}: ${err.message}`)
    process.exit(1)
  })

  rlpx.events.on('listening', () => {
    const port = rlpx._server.address().port
    // Hello's listenPort is legacy, but announce the real one (port 0 would be sent as 0x00).
    rlpx._listenPort = port
    const enode = `enode://${Buffer.from(rlpx.id).toString('hex')}@127.0.0.1:${port}`
    const tmp = `${args.out}.tmp${process.pid}`
    fs.writeFileSync(tmp, enode + '\n')
    fs.renameSync(tmp, args.out)
    log(`listening ${enode} eth/${args.versions.join(',eth/')} head ${chain.head.number} ${chain.head.hashHex}` +
      (serving ? ` history ${chain.first}..${chain.head.number}` : '') +
      (args.fault ? ` FAULT ${args.fault}` : '') +
      (args.historyFaults.length > 0 ? ` FAULTS ${args.historyFaults.join(',')}` : ''))
    touch()
  })

  rlpx.events.on('peer:added', (peer) => {
    touch()
    const who = Buffer.from(peer.getId()).toString('hex').slice(0, 16)
    const hello = peer.getHelloMessage()
    const eth = peer.getProtocols()[0]
    const version = eth.getVersion()
    const caps = hello.capabilities.map((c) => `${c.name}/${c.version}`).join(',')
    log(`peer ${who} connected: "${hello.clientId}" p2p/${hello.protocolVersion} caps ${caps} -> eth/${version}`)

    let statusOk = false
    eth.events.once('status', () => {
      statusOk = true
      log(`peer ${who} status ok`)
    })

    eth.events.on('message', (code, payload) => {
      touch()
      if (!statusOk) {
        log(`peer ${who} sent eth message 0x${code.toString(16)} before Status, disconnecting`)
        peer.disconnect(DISCONNECT_REASON.PROTOCOL_ERROR)
        return
      }
      try {
        handleMessage(eth, who, code, payload)
      } catch (err) {
        log(`peer ${who}: ${err.message}, disconnecting`)
        peer.disconnect(err instanceof ProtocolError ? DISCONNECT_REASON.PROTOCOL_ERROR : DISCONNECT_REASON.SUBPROTOCOL_ERROR)
      }
    })

    try {
      eth.sendStatus(statusOpts(version, chain))
    } catch (err) {
      // The library validates the remote Status inside sendStatus when it arrived first.
      log(`peer ${who} status rejected: ${err.message}`)
      peer.disconnect(DISCONNECT_REASON.SUBPROTOCOL_ERROR)
    }
  })

  function injectFault(fault, numbers, headers) {
    if (fault === 'extra-header') {
      const last = numbers[numbers.length - 1]
      return [...headers, chain.at(last === chain.head.number ? last - 1 : last + 1).fields]
    }
    // corrupt-header: flip the last byte of the last header's extraData (field 12)
    const fields = [...headers[headers.length - 1]]
    const extra = Uint8Array.from(fields[12].length > 0 ? fields[12] : [0])
    extra[extra.length - 1] ^= 0x01
    fields[12] = extra
    return [...headers.slice(0, -1), fields]
  }

  // ---- bodies and receipts (--era1) ------------------------------------------------------------

  // GetBlockBodies and eth/68-69 GetReceipts: [request-id, [hash...]].
  function decodeHistoryRequest(payload, name) {
    if (!Array.isArray(payload) || payload.length !== 2 || !Array.isArray(payload[1])) {
      throw new ProtocolError(`${name} must be [id, [hash...]]`)
    }
    decodeUint64(payload[0], 'request id')
    for (const h of payload[1]) {
      if (!(h instanceof Uint8Array) || h.length !== 32) throw new ProtocolError(`${name}: a hash is not 32 bytes`)
    }
    return { id: payload[0], hashes: payload[1] }
  }

  // A consensus-form receipt list (as era1 stores it) in eth/69's form (EIP-7642): each receipt
  // [type, status, cumulative gas, logs], its bloom dropped.
  function receiptsToEth69(raw) {
    return RLP.encode(
      RLP.decode(raw).map((r) => {
        const typed = r instanceof Uint8Array
        const f = typed ? RLP.decode(r.subarray(1)) : r
        return [uintBytes(typed ? r[0] : 0), f[0], f[1], f[3]]
      }),
    )
  }

  // Block `n`'s body, or its receipt list in the form of `version`.
  function historyItem(bodies, n, version) {
    const i = n - chain.first
    if (bodies) return chain.bodies[i]
    return version >= 69 ? receiptsToEth69(chain.receipts[i]) : chain.receipts[i]
  }

  // What a correct server sends: the held blocks' items in the order asked, ending at the first
  // hash not held, at 1024 items, or once past 2 MiB. Each { number, raw }.
  function historyReply(bodies, hashes, version) {
    const out = []
    let bytes = 0
    for (const h of hashes) {
      if (out.length >= MAX_HISTORY_ITEMS || bytes >= SOFT_RESPONSE_LIMIT) break
      const header = chain.byHash(h)
      if (header === undefined) break
      const raw = historyItem(bodies, header.number, version)
      out.push({ number: header.number, raw })
      bytes += raw.length
    }
    return out
  }

  // A receipt list that no longer matches its block's receiptsRoot, still well formed in the form
  // of `version`: the first receipt's cumulative gas one more, or in an empty list a made-up
  // receipt (status 1, 21000 gas, no logs; eth/68 with its empty bloom).
  function alterReceipts(raw, version) {
    const list = RLP.decode(raw)
    if (list.length === 0) {
      const made = version >= 69 ? [uintBytes(0), uintBytes(1), uintBytes(21000), []] : [uintBytes(1), uintBytes(21000), new Uint8Array(256), []]
      return RLP.encode([made])
    }
    const gasAt = version >= 69 ? 2 : 1
    const first = list[0]
    if (version < 69 && first instanceof Uint8Array) {
      // eth/68 typed receipt: type byte || rlp([status, cumulative gas, bloom, logs]).
      const f = RLP.decode(first.subarray(1))
      f[gasAt] = uintBytes(bytesToUint(f[gasAt]) + 1n)
      list[0] = Uint8Array.from([first[0], ...RLP.encode(f)])
    } else {
      first[gasAt] = uintBytes(bytesToUint(first[gasAt]) + 1n)
    }
    return RLP.encode(list)
  }

  // A body whose transactions no longer match its block's transactionsRoot, still well formed (its
  // uncles as they were): the first transaction's nonce one more (a typed one: the last byte of its
  // signature changed), or in a block without any a made-up legacy transfer.
  function alterBody(raw) {
    const body = RLP.decode(raw)
    const txs = body[0]
    if (txs.length === 0) {
      const to = new Uint8Array(20).fill(0x11)
      txs.push([uintBytes(0), uintBytes(1), uintBytes(21000), to, uintBytes(1), new Uint8Array(0), uintBytes(27), uintBytes(1), uintBytes(1)])
    } else if (txs[0] instanceof Uint8Array) {
      const typed = Uint8Array.from(txs[0])
      typed[typed.length - 1] ^= 0x01
      txs[0] = typed
    } else {
      txs[0][0] = uintBytes(bytesToUint(txs[0][0]) + 1n)
    }
    return RLP.encode(body)
  }

  // The faults that apply to a reply of this message, and the turn of each message's replies.
  const turns = { bodies: 0, receipts: 0 }
  const faultsFor = (bodies) =>
    args.historyFaults.filter((f) => !(bodies ? RECEIPT_FAULTS : BODY_FAULTS).includes(f))

  // `items` as the fault leaves them; null when it cannot apply to these items (the reply stays right).
  function applyHistoryFault(fault, bodies, items, version) {
    const replaced = (k, raw) => [...items.slice(0, k), { number: items[k].number, raw }, ...items.slice(k + 1)]
    switch (fault) {
      case 'empty-history':
        return items.length === 0 ? null : []
      case 'extra-item': {
        if (items.length === 0) return null
        const last = items[items.length - 1].number
        const other = last === chain.head.number ? last - 1 : last + 1
        return [...items, { number: other, raw: historyItem(bodies, other, version) }]
      }
      case 'altered-tx':
        return items.length === 0 ? null : replaced(0, alterBody(items[0].raw))
      case 'altered-receipt':
        return items.length === 0 ? null : replaced(0, alterReceipts(items[0].raw, version))
      case 'swapped-body': {
        // The last body becomes the nearest other block's that differs from it.
        const k = items.length - 1
        if (k < 0) return null
        const n = items[k].number
        for (let d = 1; d < chain.headers.length; d++) {
          for (const m of [n + d, n - d]) {
            if (m < chain.first || m > chain.head.number) continue
            const other = chain.bodies[m - chain.first]
            if (!bytesEqual(other, items[k].raw)) return replaced(k, other)
          }
        }
        return null
      }
      case 'reordered': {
        // The first item and the first later one that differs from it trade places.
        const k = items.findIndex((i) => !bytesEqual(i.raw, items[0].raw))
        if (k <= 0) return null
        const out = [...items]
        out[0] = { number: items[0].number, raw: items[k].raw }
        out[k] = { number: items[k].number, raw: items[0].raw }
        return out
      }
      case 'no-bloom': {
        // The other version's form of every list; empty lists look the same in both, so a reply
        // of nothing but empty lists is left right.
        const out = items.map((i) => {
          const stored = chain.receipts[i.number - chain.first]
          return { number: i.number, raw: version >= 69 ? stored : receiptsToEth69(stored) }
        })
        return out.some((o, k) => !bytesEqual(o.raw, items[k].raw)) ? out : null
      }
      default:
        throw new Error(`unknown history fault ${fault}`)
    }
  }

  // `items` as the next fault for this message leaves them; returns [items, fault or null].
  function injectHistoryFault(bodies, items, version) {
    const faults = faultsFor(bodies)
    if (faults.length === 0) return [items, null]
    const fault = faults[turns[bodies ? 'bodies' : 'receipts']++ % faults.length]
    const lied = applyHistoryFault(fault, bodies, items, version)
    return lied === null ? [items, null] : [lied, fault]
  }

  function serveHistory(eth, who, name, replyCode, payload) {
    const bodies = replyCode === CODES.BLOCK_BODIES
    const req = decodeHistoryRequest(payload, name)
    const version = eth.getVersion()
    const [items, fault] = injectHistoryFault(bodies, historyReply(bodies, req.hashes, version), version)
    eth.sendMessage(replyCode, [req.id, items.map((i) => RLP.decode(i.raw))])
    log(
      `peer ${who} ${name} id=${bytesToUint(req.id)} hashes=${req.hashes.length} -> ${items.length} items` +
        (items.length > 0 ? ` [${items[0].number}..${items[items.length - 1].number}]` : '') +
        (fault !== null ? ` FAULT ${fault}` : ''),
    )
  }

  function handleMessage(eth, who, code, payload) {
    const emptyReply = (name, replyCode) => {
      if (!Array.isArray(payload) || payload.length !== 2) throw new ProtocolError(`${name} must be [id, [...]]`)
      decodeUint64(payload[0], 'request id')
      eth.sendMessage(replyCode, [payload[0], []])
      log(`peer ${who} ${name} id=${bytesToUint(payload[0])} -> empty`)
    }
    switch (code) {
      case CODES.GET_BLOCK_HEADERS: {
        const req = decodeGetBlockHeaders(payload)
        const numbers = expectedNumbers(chain, req)
        // Stored header RLP is canonical (checked in loadChain), so the library's re-encoding
        // of the decoded fields yields exactly the stored bytes.
        let headers = numbers.map((n) => chain.at(n).fields)
        if (REPLY_FAULTS.includes(args.fault)) {
          if (args.fault === 'stale-id') eth.sendMessage(CODES.BLOCK_HEADERS, [uintBytes(BigInt(bytesToUint(req.id)) + 1n), headers])
          if (args.fault === 'wrong-code') eth.sendMessage(CODES.BLOCK_BODIES, [req.id, []])
          log(`peer ${who} GetBlockHeaders id=${bytesToUint(req.id)} -> FAULT ${args.fault}`)
          break
        }
        if (args.fault !== undefined && numbers.length > 0) headers = injectFault(args.fault, numbers, headers)
        eth.sendMessage(CODES.BLOCK_HEADERS, [req.id, headers])
        log(
          `peer ${who} GetBlockHeaders id=${bytesToUint(req.id)} origin=${describeOrigin(req.origin)} ` +
            `amount=${req.amount} skip=${req.skip} reverse=${req.reverse} -> ${numbers.length} headers` +
            (numbers.length > 0 ? ` [${numbers[0]}..${numbers[numbers.length - 1]}]` : ''),
        )
        break
      }
      case CODES.GET_BLOCK_BODIES:
        if (serving) serveHistory(eth, who, 'GetBlockBodies', CODES.BLOCK_BODIES, payload)
        else emptyReply('GetBlockBodies', CODES.BLOCK_BODIES)
        break
      case CODES.GET_RECEIPTS:
        if (serving) serveHistory(eth, who, 'GetReceipts', CODES.RECEIPTS, payload)
        else emptyReply('GetReceipts', CODES.RECEIPTS)
        break
      case CODES.GET_POOLED_TRANSACTIONS:
        emptyReply('GetPooledTransactions', CODES.POOLED_TRANSACTIONS)
        break
      default:
        // Gossip (Transactions, NewPooledTransactionHashes, NewBlock...) and responses to
        // requests we never make: ignored, as a header server should.
        log(`peer ${who} eth message 0x${code.toString(16)} ignored`)
    }
  }

  rlpx.events.on('peer:removed', (peer, reason, disconnectWe) => {
    touch()
    const who = Buffer.from(peer.getId()).toString('hex').slice(0, 16)
    log(`peer ${who} removed, reason ${reasonName(reason)} (${disconnectWe === true ? 'by us' : 'by peer'})`)
  })

  rlpx.events.on('peer:error', (peer, err) => {
    if (err && err.code === 'ECONNRESET') return
    log(`peer error: ${err && err.message ? err.message : err}`)
  })

  rlpx.listen(args.port, '127.0.0.1')
}

try {
  main()
} catch (err) {
  console.error(`server.js: ${err.message}`)
  process.exit(2)
}
