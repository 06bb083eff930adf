'use strict'
// One test connection of the interop harness (client.js, history_client.js): an RLPx instance with
// a fresh node key per connection (so the server sees each as a new peer), eth requests matched
// to their responses by request id, the server's Disconnect recorded before the library acts on it.

const { genPrivateKey, ETH } = require('@ethereumjs/devp2p')
const { RLP } = require('@ethereumjs/rlp')
const { mainnetCommon, listElements, bytesToUint, uintBytes } = require('./chain.js')
const { CODES, DISCONNECT_REASON, NoDelayRLPx, ethCapability, reasonName, parseEnode, parseVersions } = require('./eth.js')

const HANDSHAKE_TIMEOUT_MS = 10000
const REQUEST_TIMEOUT_MS = 5000
const STATUS_TIMEOUT_MS = 5000

const closeText = (reason, byUs) => `reason ${reasonName(reason)}, ${byUs ? 'by us' : 'by server'}`

class Session {
  constructor(rlpx, peer, eth) {
    this.rlpx = rlpx
    this.peer = peer
    this.eth = eth
    this.pending = new Map() // `${responseCode}:${id}` -> { resolve, reject, timer }
    this.closed = null // { reason, byUs } once the connection is gone
    this.remoteDisconnect = null // { reason, form } of a Disconnect the server sent
    this.remoteEnded = false // the server closed its side of the TCP connection
    this.unexpected = [] // responses nobody asked for
    this.rangeUpdates = []

    // Record the server's Disconnect before the library acts on it: the reason and whether it
    // came as a list [reason] (spec) or as a bare integer.
    const handle = peer._handleDisconnect.bind(peer)
    peer._handleDisconnect = (payload) => {
      const form = payload instanceof Uint8Array ? 'bare integer' : 'list'
      const r = payload instanceof Uint8Array ? payload : payload[0]
      this.remoteDisconnect = { reason: r === undefined ? 0 : Number(bytesToUint(r)), form }
      return handle(payload)
    }
    peer._socket.once('end', () => {
      this.remoteEnded = true
    })
    eth.events.on('raw', (code, data) => this._onRaw(code, data))
    eth.events.on('rangeUpdate', (r) => this.rangeUpdates.push(r))
  }

  // Called synchronously from the library's receive path, so never let an exception escape
  // (the library would answer it by disconnecting).
  _onRaw(code, data) {
    if (![CODES.BLOCK_HEADERS, CODES.BLOCK_BODIES, CODES.RECEIPTS, CODES.POOLED_TRANSACTIONS].includes(code)) return
    let id
    try {
      const elems = listElements(data)
      if (elems.length !== 2) throw new Error(`response has ${elems.length} elements, expected [id, list]`)
      id = bytesToUint(RLP.decode(elems[0]))
    } catch (err) {
      this.unexpected.push(`response code 0x${code.toString(16)} undecodable: ${err.message}`)
      return
    }
    const key = `${code}:${id}`
    const p = this.pending.get(key)
    if (p === undefined) {
      this.unexpected.push(`unsolicited response code 0x${code.toString(16)} id=${id}`)
      return
    }
    this.pending.delete(key)
    clearTimeout(p.timer)
    p.resolve(data)
  }

  _onClose(reason, byUs) {
    this.closed = { reason, byUs }
    for (const [key, p] of this.pending) {
      clearTimeout(p.timer)
      p.reject(new Error(`connection closed (${closeText(reason, byUs)}) while waiting for ${key}`))
    }
    this.pending.clear()
  }

  // Sends an eth request and resolves with the raw bytes of the response carrying the same id.
  request(code, responseCode, id, body) {
    if (this.closed !== null) return Promise.reject(new Error('connection already closed'))
    const key = `${responseCode}:${id}`
    if (this.pending.has(key)) return Promise.reject(new Error(`request id ${id} already pending`))
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(key)
        reject(new Error(`no response within ${REQUEST_TIMEOUT_MS / 1000}s`))
      }, REQUEST_TIMEOUT_MS)
      this.pending.set(key, { resolve, reject, timer })
      try {
        this.eth.sendMessage(code, [uintBytes(id), body])
      } catch (err) {
        this.pending.delete(key)
        clearTimeout(timer)
        reject(err)
      }
    })
  }

  close() {
    if (this.closed === null) this.peer.disconnect(DISCONNECT_REASON.DISCONNECT_REQUESTED)
    try {
      this.rlpx.destroy()
    } catch {
      // already destroyed
    }
  }
}

// "msg: err1; err2" — the library reports some failures only through 'peer:error' events.
const withErrors = (msg, errors) => (errors.length > 0 ? `${msg}: ${errors.join('; ')}` : msg)

// Dials the target and resolves once both Hellos are exchanged (RLPx 'peer:added').
// `common` is the chain whose fork id the library checks the server's against (mainnet's first).
function connect(target, versions, { lenient = false, common = mainnetCommon() } = {}) {
  const rlpx = new NoDelayRLPx(genPrivateKey(), {
    capabilities: versions.map((v) => ethCapability(v, { lenient })),
    common,
    maxPeers: 1,
    clientId: new TextEncoder().encode('headerd-interop-client/ethereumjs-devp2p-10.0.0/nodejs'),
  })
  const errors = []
  rlpx.events.on('peer:error', (_peer, err) => errors.push(err && err.message ? err.message : String(err)))

  return new Promise((resolve, reject) => {
    let session = null
    const timer = setTimeout(() => {
      rlpx.destroy()
      reject(new Error(withErrors(`no devp2p handshake within ${HANDSHAKE_TIMEOUT_MS / 1000}s`, errors)))
    }, HANDSHAKE_TIMEOUT_MS)

    rlpx.events.once('peer:added', (peer) => {
      clearTimeout(timer)
      const eth = peer.getProtocols().find((p) => p instanceof ETH)
      session = new Session(rlpx, peer, eth)
      session.errors = errors
      resolve(session)
    })
    rlpx.events.on('peer:removed', (_peer, reason, disconnectWe) => {
      if (session !== null) session._onClose(reason, disconnectWe === true)
      else {
        clearTimeout(timer)
        reject(new Error(withErrors(`disconnected during handshake, reason ${reasonName(reason)}`, errors)))
      }
    })

    rlpx.connect(target).then(
      () => {
        // Until the handshake completes the library only knows the raw socket; a server that
        // drops us during the crypto handshake or Hello would otherwise look like a timeout.
        const socket = rlpx._peers.get(Buffer.from(target.id).toString('hex'))
        if (socket && typeof socket.once === 'function') {
          socket.once('close', () => {
            if (session === null) {
              clearTimeout(timer)
              reject(new Error(withErrors('connection closed before the devp2p handshake completed', errors)))
            }
          })
        }
      },
      (err) => {
        clearTimeout(timer)
        reject(new Error(`cannot connect to ${target.address}:${target.tcpPort}: ${err.message}`))
      },
    )
  })
}


// Sends our Status and resolves once the server's has been received and accepted; the library
// validates it (genesis, network, fork id) and reports a failure as a thrown error or a
// 'peer:error' followed by its own disconnect.
async function exchangeStatus(session, opts) {
  let timer
  const done = new Promise((resolve, reject) => {
    session.eth.events.once('status', resolve)
    timer = setTimeout(
      () => reject(new Error(withErrors(`no Status exchange within ${STATUS_TIMEOUT_MS / 1000}s`, session.errors))),
      STATUS_TIMEOUT_MS,
    )
    session.rlpx.events.once('peer:removed', (_p, reason, byUs) =>
      reject(new Error(withErrors(`disconnected during Status (${closeText(reason, byUs)})`, session.errors))),
    )
  })
  try {
    session.eth.sendStatus(opts)
    return await done
  } finally {
    clearTimeout(timer)
  }
}

// "ok: ..." and "FAIL: ..." lines, counted; finish() prints the total and exits 0 only if nothing
// failed.
let passed = 0
let failed = 0
function ok(msg) {
  passed++
  console.log(`ok: ${msg}`)
}
function fail(msg) {
  failed++
  console.log(`FAIL: ${msg}`)
}
function finish() {
  console.log(`${failed === 0 ? 'PASS' : 'FAIL'}: ${passed} checks passed, ${failed} failed`)
  process.exit(failed === 0 ? 0 : 1)
}

// ENODE [--eth VERSIONS] [--timeout SECONDS] -> { target, versions, timeoutMs }; --help prints
// `usage` and exits.
function parseArgs(argv, usage, defaults) {
  const opts = { ...defaults }
  let enode
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (a === '--help' || a === '-h') {
      console.log(usage)
      process.exit(0)
    } else if (a.startsWith('--') && Object.hasOwn(defaults, a.slice(2)) && i + 1 < argv.length) {
      opts[a.slice(2)] = argv[++i]
    } else if (a.startsWith('enode://') && enode === undefined) {
      enode = a
    } else {
      throw new Error(`unexpected argument ${a}\n${usage}`)
    }
  }
  if (enode === undefined) throw new Error(usage)
  const timeout = Number(opts.timeout)
  if (!(timeout > 0)) throw new Error(`bad --timeout ${opts.timeout}`)
  return { ...opts, target: parseEnode(enode), versions: parseVersions(opts.eth), timeoutMs: timeout * 1000 }
}

// The start of a client's run: its arguments (a usage error exits 2), and a global timeout so that
// it never hangs nor exits 0 by running out of work without reaching finish().
function startRun(name, usage, defaults, check = () => {}) {
  let args
  try {
    args = parseArgs(process.argv.slice(2), usage, defaults)
    check(args)
  } catch (err) {
    console.error(`${name}: ${err.message}`)
    process.exit(2)
  }
  process.exitCode = 1
  setTimeout(() => {
    fail(`global timeout of ${args.timeoutMs / 1000}s reached`)
    finish()
  }, args.timeoutMs)
  return args
}

module.exports = { Session, connect, exchangeStatus, closeText, withErrors, ok, fail, finish, startRun }
