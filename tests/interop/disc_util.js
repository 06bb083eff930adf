#!/usr/bin/env node
'use strict'
// Helpers of the discovery tests (tests/disc_lib.sh):
//
//   node disc_util.js ids FILE...   the public key (128 hex) of every enode:// URL and enr: record
//                                   in the files (a headerd DATADIR/nodes, DATADIR/enode or enr, a
//                                   dpt_node.js --out or --peers file, headerd discover's output),
//                                   one per line, sorted, unique. enr: records are read, not verified
//                                   (headerd wrote them after verifying).
//   node disc_util.js ids-each FILE...  the same as "FILE ID" lines, per file (missing files skipped)
//   node disc_util.js keys N [SEED] N private keys with their public keys ("PRIV PUB" per line),
//                                   derived from SEED (default "headerd-disc") so every run uses the
//                                   same nodes, and balanced: as many public keys start with a 0 bit
//                                   as with a 1 bit (N odd: one more 0). Why: @ethereumjs/devp2p's
//                                   k-bucket splits on the bits of the raw 64-byte public key and
//                                   holds at most 16 nodes in the half that differs from its own
//                                   first bit; with random keys, 30 nodes put more than 16 there
//                                   often enough for a DPT node not to be able to know them all.

const fs = require('node:fs')
const { RLP } = require('@ethereumjs/rlp')
const { keccak256 } = require('ethereum-cryptography/keccak.js')
const { secp256k1 } = require('ethereum-cryptography/secp256k1.js')

const hex = (b) => Buffer.from(b).toString('hex')

function enrKey(text) {
  const items = RLP.decode(Buffer.from(text.slice(4), 'base64url'))
  for (let i = 2; i + 1 < items.length; i += 2) {
    if (Buffer.from(items[i]).toString() === 'secp256k1') {
      return hex(secp256k1.ProjectivePoint.fromHex(hex(items[i + 1])).toRawBytes(false).subarray(1))
    }
  }
  throw new Error(`record without a secp256k1 key: ${text}`)
}

function idsOf(file) {
  const out = new Set()
  const text = fs.readFileSync(file, 'utf8')
  for (const m of text.matchAll(/enode:\/\/([0-9a-fA-F]{128})@/g)) out.add(m[1].toLowerCase())
  for (const m of text.matchAll(/enr:[A-Za-z0-9_-]+/g)) out.add(enrKey(m[0]))
  return out
}

function ids(files) {
  const out = new Set()
  for (const f of files) for (const id of idsOf(f)) out.add(id)
  for (const id of [...out].sort()) console.log(id)
}

// "FILE ID" for every id in every file, one process for many files (a missing file names none).
function idsEach(files) {
  for (const f of files) {
    if (!fs.existsSync(f)) continue
    for (const id of [...idsOf(f)].sort()) console.log(`${f} ${id}`)
  }
}

function keys(n, seed) {
  const want = [Math.ceil(n / 2), Math.floor(n / 2)]
  const pools = [[], []]
  for (let i = 0; pools[0].length < want[0] || pools[1].length < want[1]; i++) {
    const priv = keccak256(Buffer.from(`${seed} ${i}`))
    if (!secp256k1.utils.isValidPrivateKey(priv)) continue
    const pub = secp256k1.getPublicKey(priv, false).subarray(1)
    const bit = pub[0] >> 7
    if (pools[bit].length < want[bit]) pools[bit].push(`${hex(priv)} ${hex(pub)}`)
  }
  // Interleaved, so any prefix of the list is balanced too.
  for (let i = 0; i < want[0]; i++) {
    console.log(pools[0][i])
    if (i < want[1]) console.log(pools[1][i])
  }
}

const [cmd, ...rest] = process.argv.slice(2)
if (cmd === 'ids' && rest.length > 0) {
  ids(rest)
} else if (cmd === 'ids-each' && rest.length > 0) {
  idsEach(rest)
} else if (cmd === 'keys' && Number.isInteger(Number(rest[0])) && Number(rest[0]) > 0) {
  keys(Number(rest[0]), rest[1] ?? 'headerd-disc')
} else {
  console.error('usage: node disc_util.js ids FILE... | ids-each FILE... | keys N [SEED]')
  process.exit(2)
}
