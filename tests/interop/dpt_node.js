#!/usr/bin/env node
'use strict'
// A discv4 node of @ethereumjs/devp2p (its DPT) on 127.0.0.1, for headerd's discovery to meet.
//
//   node dpt_node.js [--port P] [--key HEX32] [--bootnode ENODE]... [--out FILE] [--peers FILE]
//                    [--duration SECONDS] [--refresh MS] [--timeout MS] [--rebond MS] [--stall MS]
//
// Binds UDP 127.0.0.1:P (P = 0 picks a free port), then writes its enode URL to --out (atomically;
// TCP port = UDP port, so no ?discport) and bootstraps from every --bootnode (enode URLs on
// 127.0.0.0/8 only; ?discport=N is the UDP port). Every 500 ms it writes the enode URLs of the nodes
// in its table (getPeers()) to --peers, one per line, sorted, atomically. Logs one line per peer
// added or removed and per error (errors never end it: an ENRRequest from headerd, which the
// library cannot decode, is logged as "Invalid type: 5"). Exits 0 after --duration seconds
// (default 120) or on SIGTERM/SIGINT, 1 if it cannot bind, 2 on bad arguments. --timeout (default
// 2000 ms) is how long the library waits for a Pong: a node that misses it is banned for 5 minutes,
// so a busy test machine gives more.
//
// --rebond MS (default 0: off): every MS while the table holds no node but the bootnodes, each
// bootnode is pinged again, and after 500 ms for its ping back is asked FindNode again; at most 10
// rounds, each logged as "rebond N". The library bonds once: its bootstrap() pings a bootnode, and
// a later bootstrap() of a node already in its table sends FindNode without a ping. A bootnode that
// missed the Pong of its own ping back (its endpoint proof, 500 ms in geth and headerd) ignores that
// node's FindNode for good, and the node would know the bootnode alone forever. geth's client re-pings
// after failed FindNodes (ensureBond, p2p/discover/v4_udp.go); this is that step, in the wrapper.
//
// --stall MS (default 0): when the first datagram arrives (the bootnode's Pong or its ping back),
// the process blocks for MS before the library reads it, as one starved on a loaded machine would:
// the ping back goes unanswered for that long, so a stall over 500 ms makes the first bond fail on
// purpose (tests/discovery_interop_test.sh).
//
// Loopback only: DNS discovery is off (shouldGetDnsPeers: false) and a bootnode outside 127.0.0.0/8
// is refused; the library itself only ever sends to nodes its peers named, which on a loopback
// network are loopback nodes.

const fs = require('node:fs')
const { DPT, genPrivateKey } = require('@ethereumjs/devp2p')
const { secp256k1 } = require('ethereum-cryptography/secp256k1.js')

const USAGE =
  'usage: node dpt_node.js [--port P] [--key HEX32] [--bootnode ENODE]... [--out FILE] [--peers FILE] ' +
  '[--duration SECONDS] [--refresh MS] [--timeout MS] [--rebond MS] [--stall MS]'

const hex = (b) => Buffer.from(b).toString('hex')

// enode://<128 hex>@127.x.y.z:TCP[?discport=UDP] -> { id, address, tcpPort, udpPort }
function parseEnode(url) {
  const m = /^enode:\/\/([0-9a-fA-F]{128})@([0-9.]+):(\d+)(?:\?discport=(\d+))?$/.exec(url)
  if (!m) throw new Error(`not an IPv4 enode URL: ${url}`)
  if (!/^127\.\d+\.\d+\.\d+$/.test(m[2])) throw new Error(`refusing a bootnode outside 127.0.0.0/8: ${url}`)
  const tcpPort = Number(m[3])
  const udpPort = m[4] === undefined ? tcpPort : Number(m[4])
  if (!(udpPort > 0 && udpPort < 65536 && tcpPort < 65536)) throw new Error(`bad port in ${url}`)
  return { id: Buffer.from(m[1], 'hex'), address: m[2], tcpPort, udpPort }
}

function enodeOf(peer) {
  const tcp = typeof peer.tcpPort === 'number' ? peer.tcpPort : 0
  const disc = peer.udpPort === tcp ? '' : `?discport=${peer.udpPort}`
  return `enode://${hex(peer.id)}@${peer.address}:${tcp}${disc}`
}

function parseArgs(argv) {
  const opts = { port: '0', duration: '120', refresh: '2000', timeout: '2000', rebond: '0', stall: '0', bootnode: [] }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (a === '--help' || a === '-h') {
      console.log(USAGE)
      process.exit(0)
    }
    const key = a.replace(/^--/, '') === 'idle' ? 'duration' : a.replace(/^--/, '')
    if (
      !['port', 'key', 'bootnode', 'out', 'peers', 'duration', 'refresh', 'timeout', 'rebond', 'stall'].includes(key) ||
      i + 1 >= argv.length
    ) {
      throw new Error(`unknown or incomplete argument ${a}\n${USAGE}`)
    }
    if (key === 'bootnode') opts.bootnode.push(argv[++i])
    else opts[key] = argv[++i]
  }
  const port = Number(opts.port)
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`bad --port ${opts.port}`)
  const duration = Number(opts.duration)
  if (!(duration > 0)) throw new Error(`bad --duration ${opts.duration}`)
  const refresh = Number(opts.refresh)
  if (!(refresh >= 100)) throw new Error(`bad --refresh ${opts.refresh} (milliseconds, at least 100)`)
  const timeout = Number(opts.timeout)
  if (!(timeout >= 100)) throw new Error(`bad --timeout ${opts.timeout} (milliseconds, at least 100)`)
  const rebond = Number(opts.rebond)
  if (!(rebond === 0 || rebond >= 100)) throw new Error(`bad --rebond ${opts.rebond} (milliseconds, 0 or at least 100)`)
  const stall = Number(opts.stall)
  if (!(Number.isInteger(stall) && stall >= 0)) throw new Error(`bad --stall ${opts.stall} (milliseconds)`)
  if (opts.key !== undefined && !/^[0-9a-fA-F]{64}$/.test(opts.key)) throw new Error('--key: 32 bytes in hex')
  return {
    port,
    key: opts.key === undefined ? genPrivateKey() : Uint8Array.from(Buffer.from(opts.key, 'hex')),
    bootnodes: opts.bootnode.map(parseEnode),
    out: opts.out,
    peers: opts.peers,
    durationMs: duration * 1000,
    refreshMs: refresh,
    timeoutMs: timeout,
    rebondMs: rebond,
    stallMs: stall,
  }
}

const log = (msg) => console.log(`[${new Date().toISOString()}] ${msg}`)

function writeAtomic(file, text) {
  const tmp = `${file}.tmp`
  fs.writeFileSync(tmp, text)
  fs.renameSync(tmp, file)
}

function main() {
  let args
  try {
    args = parseArgs(process.argv.slice(2))
  } catch (err) {
    console.error(err.message)
    process.exit(2)
  }
  const id = hex(secp256k1.getPublicKey(args.key, false).subarray(1))
  // The endpoint is filled in once bound (port 0 is known only then); the library reads it when
  // it sends, so setting its fields later is enough.
  const endpoint = { address: '127.0.0.1', udpPort: null, tcpPort: null }
  const dpt = new DPT(args.key, {
    endpoint,
    // The library refreshes one tenth of its table every refreshInterval/10.
    refreshInterval: args.refreshMs,
    shouldFindNeighbours: true,
    shouldGetDnsPeers: false,
    onlyConfirmed: false,
    timeout: args.timeoutMs,
  })
  let closing = false
  let peersTimer = null
  let rebondTimer = null
  const finish = (code) => {
    if (closing) return
    closing = true
    clearInterval(peersTimer)
    clearInterval(rebondTimer)
    if (args.peers !== undefined) writePeers()
    try {
      dpt.destroy()
    } catch (err) {
      log(`destroy: ${err.message}`)
    }
    log(`exit peers=${dpt.getPeers().length}`)
    process.exit(code)
  }
  const writePeers = () => {
    const lines = dpt
      .getPeers()
      .map(enodeOf)
      .sort()
      .map((l) => `${l}\n`)
    writeAtomic(args.peers, lines.join(''))
  }

  dpt.events.on('peer:added', (p) => log(`peer:added ${enodeOf(p)}`))
  dpt.events.on('peer:removed', (p) => log(`peer:removed ${enodeOf(p)}`))
  dpt.events.on('error', (err) => log(`error: ${err.message}`))
  dpt.events.once('listening', async () => {
    const port = dpt._server._socket.address().port
    endpoint.udpPort = port
    endpoint.tcpPort = port
    const url = `enode://${id}@127.0.0.1:${port}`
    log(`listening ${url}`)
    if (args.out !== undefined) writeAtomic(args.out, `${url}\n`)
    if (args.peers !== undefined) {
      writePeers()
      peersTimer = setInterval(writePeers, 500)
    }
    for (const b of args.bootnodes) {
      log(`bootstrap ${enodeOf(b)}`)
      // bootstrap() reports failures through the 'error' event itself.
      await dpt.bootstrap({ address: b.address, udpPort: b.udpPort, tcpPort: b.tcpPort })
    }
    if (args.rebondMs > 0 && args.bootnodes.length > 0) rebondTimer = setInterval(rebond, args.rebondMs)
  })
  // --rebond: while the table holds only bootnodes, ping each again (its ping back comes within the
  // 500 ms waited), then FindNode; rounds do not overlap.
  const bootIds = new Set(args.bootnodes.map((b) => hex(b.id)))
  let rebonds = 0
  let rebonding = false
  const rebond = async () => {
    if (rebonding || closing) return
    if (dpt.getPeers().some((p) => !bootIds.has(hex(p.id)))) return
    if (++rebonds > 10) {
      clearInterval(rebondTimer)
      return
    }
    rebonding = true
    log(`rebond ${rebonds}`)
    for (const b of args.bootnodes) {
      const to = { address: b.address, udpPort: b.udpPort, tcpPort: b.tcpPort }
      try {
        const peer = await dpt._server.ping(to)
        await new Promise((resolve) => setTimeout(resolve, 500))
        if (!closing) dpt._server.findneighbours(peer, dpt.id)
      } catch (err) {
        log(`error: rebond ${enodeOf(b)}: ${err.message}`)
      }
    }
    rebonding = false
  }
  if (args.stallMs > 0) {
    // Before the library's own listener: this one runs first for every datagram.
    dpt._server._socket.prependOnceListener('message', () => {
      log(`stall ${args.stallMs} ms`)
      const until = Date.now() + args.stallMs
      while (Date.now() < until) {
        // busy: nothing else of this process runs
      }
    })
  }
  // A bind failure arrives as an 'error' of the socket before 'listening'.
  dpt._server._socket.once('error', (err) => {
    if (endpoint.udpPort === null) {
      console.error(`cannot bind UDP 127.0.0.1:${args.port}: ${err.message}`)
      process.exit(1)
    }
  })
  // Whatever the library throws outside its own handlers is logged too: the node keeps running.
  process.on('uncaughtException', (err) => log(`error: uncaught ${err.stack ?? err}`))
  process.on('unhandledRejection', (err) => log(`error: unhandled rejection ${err?.stack ?? err}`))
  process.on('SIGTERM', () => finish(0))
  process.on('SIGINT', () => finish(0))
  setTimeout(() => finish(0), args.durationMs)
  dpt.bind(args.port, '127.0.0.1')
}

main()
