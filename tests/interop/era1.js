'use strict'
// The headers of an era1 archive, read with code of our own here (the e2store framing and the
// snappy frame format) and snappyjs for the snappy blocks: nothing of headerd's decides what the
// archive holds. Used by history_client.js to judge a history server on an epoch whose headers
// are not in tests/data as a header list.
//
// e2store: records of [type u16 LE][length u32 LE][reserved u16 = 0][data]; era1 types below.
// Headers, bodies and receipts are snappy frame streams; the total difficulty is a 32-byte
// little-endian integer. Spec: github.com/eth-clients/e2store-format-specs, formats/era1.md.

const fs = require('node:fs')
const snappy = require('snappyjs')
const { RLP } = require('@ethereumjs/rlp')
const { keccak256 } = require('ethereum-cryptography/keccak.js')
const { hex, bytesEqual, bytesToUint } = require('./chain.js')

const TYPE_VERSION = 0x3265
const TYPE_HEADER = 0x03
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
  const buf = new Uint8Array(fs.readFileSync(file))
  const headers = []
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
  return headers
}

module.exports = { readEra1Headers }
