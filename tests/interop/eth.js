'use strict'
// Glue between @ethereumjs/devp2p 10.0.0 and the harness, shared by client.js and server.js:
//  - an RLPx that turns on TCP_NODELAY (the library never does),
//  - an ETH protocol subclass that exposes the raw (decompressed) bytes of every eth message,
//    adds eth/69 (the library stops at eth/68) and can run a deliberately lenient handshake
//    for negative tests,
//  - Status builders with canonical integers (the library's helpers encode 0 as 0x00),
//  - enode URL parsing restricted to loopback.

const { RLPx, ETH, DISCONNECT_REASON, DisconnectReasonNames } = require('@ethereumjs/devp2p')
const { RLP } = require('@ethereumjs/rlp')
const snappy = require('snappyjs')
const { bytesEqual, bytesToUint, fromHex, hex, uintBytes } = require('./chain.js')

const CODES = {
  STATUS: 0x00,
  GET_BLOCK_HEADERS: 0x03,
  BLOCK_HEADERS: 0x04,
  GET_BLOCK_BODIES: 0x05,
  BLOCK_BODIES: 0x06,
  GET_POOLED_TRANSACTIONS: 0x09,
  POOLED_TRANSACTIONS: 0x0a,
  GET_RECEIPTS: 0x0f,
  RECEIPTS: 0x10,
  BLOCK_RANGE_UPDATE: 0x11, // eth/69+
}

// eth message-space sizes (geth protocolLengths): eth/68 has 17 codes, eth/69 adds 0x11.
const ETH_LENGTH = { 68: 17, 69: 18 }
const SUPPORTED_VERSIONS = [68, 69]

function reasonName(code) {
  if (code === undefined || code === null) return 'none'
  const name = DisconnectReasonNames[code]
  return `0x${code.toString(16).padStart(2, '0')}${name ? ` ${name}` : ''}`
}

// Peer._sendMessage writes each frame as two socket writes (header, then body). With Nagle's
// algorithm on, the body write waits for the ACK of the header segment, which the other side
// may delay by its delayed-ACK timeout (~40 ms on Linux) — every reply would stall.
class NoDelayRLPx extends RLPx {
  _onConnect(socket, peerId) {
    socket.setNoDelay(true)
    return super._onConnect(socket, peerId)
  }
}

// Returns a capability descriptor for RLPx's `capabilities` option. `lenient` makes the
// handshake accept whatever Status the remote sends (negative tests must see the *remote*
// reject a bad Status, not our own library reject the remote's good one).
function ethCapability(version, { lenient = false } = {}) {
  if (!SUPPORTED_VERSIONS.includes(version)) throw new Error(`eth/${version} not supported`)

  class HarnessETH extends ETH {
    // Every eth message is handed out raw before the library decodes it: byte-for-byte checks
    // need the exact bytes, and a message the library fails to decode is still reported.
    _handleMessage(code, data) {
      if (code === CODES.STATUS) this.peerStatusRaw = data
      this.events.emit('raw', code, data)
      if (this._version >= 69 && code === CODES.BLOCK_RANGE_UPDATE) {
        this._handleBlockRangeUpdate(data)
        return
      }
      super._handleMessage(code, data)
    }

    _sendRlp(code, list) {
      let payload = RLP.encode(list)
      if (this._peer._hello !== null && this._peer._hello.protocolVersion >= 5) {
        payload = snappy.compress(payload)
      }
      this._send(code, payload)
    }

    // opts.raw: send this Status list verbatim (negative tests).
    // eth/68: the library's own sendStatus ({td, bestHash, genesisHash, latestBlock}).
    // eth/69: {networkId, genesisHash, forkId {hash, next}, earliest, latest, latestHash}.
    sendStatus(opts) {
      if (this._status !== null) return
      if (opts.raw === undefined && this._version < 69) return super.sendStatus(opts)
      const list = opts.raw ?? [
        uintBytes(69),
        uintBytes(opts.networkId),
        opts.genesisHash,
        [opts.forkId.hash, uintBytes(opts.forkId.next)],
        uintBytes(opts.earliest),
        uintBytes(opts.latest),
        opts.latestHash,
      ]
      if (opts.raw === undefined) this._latestBlock = BigInt(opts.latest)
      this._status = list
      this._sendRlp(CODES.STATUS, list)
      this._handleStatus()
    }

    _handleStatus() {
      if (this._status === null || this._peerStatus === null) return
      if (!lenient && this._version < 69) return super._handleStatus()
      clearTimeout(this._statusTimeoutId)
      if (!lenient) this._validateStatus69()
      this.events.emit('status', { raw: this.peerStatusRaw, fields: this._peerStatus })
    }

    // The eth/69 checks geth makes (eth/protocols/eth/handshake.go): same version, network,
    // genesis, fork id filter, a sane block range. Throwing makes Peer disconnect with 0x10.
    _validateStatus69() {
      const mine = this._status
      const s = this._peerStatus
      if (!Array.isArray(s) || s.length !== 7) throw new Error('eth/69 Status must have 7 fields')
      if (bytesToUint(s[0]) !== 69n) throw new Error(`Status version ${hex(s[0])} != 69`)
      if (!bytesEqual(s[1], mine[1])) throw new Error('NetworkId mismatch')
      if (!bytesEqual(s[2], mine[2])) throw new Error('Genesis block mismatch')
      if (!Array.isArray(s[3]) || s[3].length !== 2) throw new Error('Incorrect forkId msg format')
      this._validateForkId(s[3])
      this._checkRange(s[4], s[5], s[6])
    }

    _checkRange(earliestB, latestB, latestHash) {
      const earliest = bytesToUint(earliestB)
      const latest = bytesToUint(latestB)
      if (earliest > latest) throw new Error(`block range earliest ${earliest} > latest ${latest}`)
      if (!(latestHash instanceof Uint8Array) || latestHash.length !== 32 || latestHash.every((b) => b === 0)) {
        throw new Error('block range latestHash must be 32 non-zero bytes')
      }
      return { earliest, latest, latestHash }
    }

    _handleBlockRangeUpdate(data) {
      const fields = RLP.decode(data)
      if (!Array.isArray(fields) || fields.length !== 3) throw new Error('BlockRangeUpdate must have 3 fields')
      this.events.emit('rangeUpdate', this._checkRange(fields[0], fields[1], fields[2]))
    }

    // The library's debug formatter indexes eth/68 fields; keep DEBUG=ethjs usable on eth/69.
    _getStatusString(status) {
      if (this._version < 69) return super._getStatusString(status)
      return `[eth/69 status ${status.length} fields]`
    }
  }

  return { name: 'eth', version, length: ETH_LENGTH[version], constructor: HarnessETH }
}

// Status lists as sent on the wire, for the remote side's head. `tweak` replaces one field by
// name (negative tests).
function statusList(version, chain, tweak = {}) {
  const f = {
    networkId: uintBytes(chain.networkId),
    genesis: chain.genesisHash,
    forkId: [chain.forkId.hash, uintBytes(chain.forkId.next)],
    td: uintBytes(chain.head.td),
    head: chain.head.hash,
    earliest: uintBytes(chain.head.number),
    latest: uintBytes(chain.head.number),
    ...tweak,
  }
  if (version >= 69) {
    return [uintBytes(69), f.networkId, f.genesis, f.forkId, f.earliest, f.latest, f.head]
  }
  return [uintBytes(version), f.networkId, f.td, f.head, f.genesis, f.forkId]
}

// The argument for HarnessETH.sendStatus that announces our real head.
function statusOpts(version, chain) {
  if (version >= 69) {
    // A header-only peer serves no bodies/receipts: advertise earliest = latest = head,
    // the same honest minimal range headerd uses (docs/wire.md, "Status (0x00)"); one that serves
    // an epoch's history (server.js --era1) announces the epoch.
    return {
      networkId: chain.networkId,
      genesisHash: chain.genesisHash,
      forkId: chain.forkId,
      earliest: chain.earliest ?? chain.head.number,
      latest: chain.head.number,
      latestHash: chain.head.hash,
    }
  }
  return {
    td: uintBytes(chain.head.td), // never the library's bigIntToBytes: 0 would become 0x00
    bestHash: chain.head.hash,
    genesisHash: chain.genesisHash,
    latestBlock: uintBytes(chain.head.number),
  }
}

// enode://<128 hex>@<loopback ip>:<port>[?discport=N]. The harness never dials anything but
// loopback, so other hosts are refused outright.
function parseEnode(url) {
  const m = /^enode:\/\/([0-9a-fA-F]{128})@([^:/?]+|\[[0-9a-fA-F:]+\]):([0-9]{1,5})(\?.*)?$/.exec(url)
  if (m === null) throw new Error(`not an enode URL: ${url}`)
  let host = m[2].replace(/^\[|\]$/g, '')
  if (host === 'localhost') host = '127.0.0.1'
  if (!/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host) && host !== '::1') {
    throw new Error(`refusing non-loopback peer ${host} (the harness is loopback only)`)
  }
  const port = Number(m[3])
  if (port < 1 || port > 65535) throw new Error(`bad port in ${url}`)
  return { id: fromHex(m[1]), address: host, tcpPort: port }
}

function parseVersions(s) {
  const versions = s.split(',').map((v) => Number(v.trim()))
  for (const v of versions) {
    if (!SUPPORTED_VERSIONS.includes(v)) throw new Error(`--eth: supported versions are ${SUPPORTED_VERSIONS}, got ${s}`)
  }
  return [...new Set(versions)].sort()
}

module.exports = {
  CODES,
  DISCONNECT_REASON,
  NoDelayRLPx,
  ethCapability,
  statusList,
  statusOpts,
  parseEnode,
  parseVersions,
  reasonName,
}
