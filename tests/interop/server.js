#!/usr/bin/env node
'use strict'
// An @ethereumjs/devp2p peer that serves the mainnet headers 0..8191 from tests/data, for
// `headerd get/sync/load --peer ENODE` to dial.
//
//   node server.js --port P --out ENODE_FILE [--eth 68|69|68,69] [--idle SECONDS]
//                  [--key HEX32] [--max-peers N]
//                  [--fault extra-header|corrupt-header|stale-id|wrong-code|no-reply]
//
// Listens on 127.0.0.1:P (P = 0 picks a free port), writes its enode URL to ENODE_FILE once
// listening (atomically: pollers never see a partial line), logs one line per event to stdout,
// and exits 0 after --idle seconds without any connection or message (default 60) or on
// SIGTERM/SIGINT. Exits 1 if it cannot listen.
//
// --fault makes the server deliberately wrong so the tests can prove a client notices: one header
// more than asked, one byte of a header changed, a reply for request id + 1 (stale), an empty
// BlockBodies instead of BlockHeaders (wrong code), or no reply at all (lost); never use it otherwise.

const fs = require('node:fs')
const { genPrivateKey } = require('@ethereumjs/devp2p')
const { loadChain, mainnetCommon, expectedNumbers, bytesToUint, hex, fromHex, UINT64_MAX } = require('./chain.js')
const { CODES, DISCONNECT_REASON, NoDelayRLPx, ethCapability, statusOpts, parseVersions, reasonName } = require('./eth.js')

const USAGE =
  'usage: node server.js --port P --out ENODE_FILE [--eth 68|69|68,69] [--idle SECONDS] [--key HEX32] [--max-peers N]'
const FAULTS = ['extra-header', 'corrupt-header', 'stale-id', 'wrong-code', 'no-reply']
// Faults of the reply as a whole, as opposed to the headers in it.
const REPLY_FAULTS = ['stale-id', 'wrong-code', 'no-reply']

// Minimal big-endian bytes of a non-negative BigInt (RLP's integer encoding).
function uintBytes(n) {
  const out = []
  for (; n > 0n; n >>= 8n) out.unshift(Number(n & 0xffn))
  return Uint8Array.from(out)
}

function parseArgs(argv) {
  const opts = { eth: '68', idle: '60', 'max-peers': '25' }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (a === '--help' || a === '-h') {
      console.log(USAGE)
      process.exit(0)
    }
    const key = a.replace(/^--/, '')
    if (!['port', 'out', 'eth', 'idle', 'key', 'max-peers', 'fault'].includes(key) || i + 1 >= argv.length) {
      throw new Error(`unknown or incomplete argument ${a}\n${USAGE}`)
    }
    opts[key] = argv[++i]
  }
  if (opts.port === undefined || opts.out === undefined) throw new Error(USAGE)
  const port = Number(opts.port)
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`bad --port ${opts.port}`)
  if (opts.fault !== undefined && !FAULTS.includes(opts.fault)) throw new Error(`--fault: one of ${FAULTS}`)
  const idle = Number(opts.idle)
  if (!(idle > 0)) throw new Error(`bad --idle ${opts.idle}`)
  return {
    port,
    out: opts.out,
    versions: parseVersions(opts.eth),
    idleMs: idle * 1000,
    key: opts.key === undefined ? genPrivateKey() : fromHex(opts.key),
    maxPeers: Number(opts['max-peers']),
    fault: opts.fault,
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
  const chain = loadChain()
  const common = mainnetCommon()

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
      (args.fault ? ` FAULT ${args.fault}` : ''))
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
      return [...headers, chain.headers[last === chain.head.number ? last - 1 : last + 1].fields]
    }
    // corrupt-header: flip the last byte of the last header's extraData (field 12)
    const fields = [...headers[headers.length - 1]]
    const extra = Uint8Array.from(fields[12].length > 0 ? fields[12] : [0])
    extra[extra.length - 1] ^= 0x01
    fields[12] = extra
    return [...headers.slice(0, -1), fields]
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
        let headers = numbers.map((n) => chain.headers[n].fields)
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
        emptyReply('GetBlockBodies', CODES.BLOCK_BODIES)
        break
      case CODES.GET_RECEIPTS:
        emptyReply('GetReceipts', CODES.RECEIPTS)
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
