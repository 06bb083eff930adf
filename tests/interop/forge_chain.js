#!/usr/bin/env node
'use strict'
// Forges a side chain of the real mainnet headers, for tests that need a lying peer whose chain
// is internally consistent (every parent link holds) but is not the one below the trusted head.
//
//   node forge_chain.js --in HEADERS.rlp --out FORGED.rlp [--fork N] [--to M]
//
// Reads concatenated header RLP (block 0 first), flips one byte of the extra-data of block N
// (default 5000; the length is kept, so the RLP stays valid and canonical), re-links N+1..M (default
// the last block) by rewriting each parent-hash field to the keccak of the forged header below,
// and writes headers 0..M to FORGED.rlp. Blocks below N are untouched. Prints
// "forged N..M head HASH" (the forged head's hash) on success; exits 2 on bad arguments.

const fs = require('node:fs')
const { RLP } = require('@ethereumjs/rlp')
const { keccak256 } = require('ethereum-cryptography/keccak.js')
const { splitConcatenated, bytesEqual, hex } = require('./chain.js')

const USAGE = 'usage: node forge_chain.js --in HEADERS.rlp --out FORGED.rlp [--fork N] [--to M]'

function parseArgs(argv) {
  const opts = {}
  for (let i = 0; i < argv.length; i++) {
    const key = argv[i].replace(/^--/, '')
    if (!['in', 'out', 'fork', 'to'].includes(key) || i + 1 >= argv.length) throw new Error(USAGE)
    opts[key] = argv[++i]
  }
  if (opts.in === undefined || opts.out === undefined) throw new Error(USAGE)
  const fork = Number(opts.fork ?? '5000')
  if (!Number.isInteger(fork) || fork < 1) throw new Error(`bad --fork ${opts.fork}\n${USAGE}`)
  const to = opts.to === undefined ? undefined : Number(opts.to)
  if (to !== undefined && (!Number.isInteger(to) || to < fork)) throw new Error(`bad --to ${opts.to}\n${USAGE}`)
  return { in: opts.in, out: opts.out, fork, to }
}

function main() {
  const args = parseArgs(process.argv.slice(2))
  const raws = splitConcatenated(new Uint8Array(fs.readFileSync(args.in)))
  const to = args.to ?? raws.length - 1
  if (to >= raws.length) throw new Error(`${args.in} holds blocks 0..${raws.length - 1}, not ${to}`)

  const out = raws.slice(0, args.fork)
  let parent = null // hash of the forged header below
  for (let n = args.fork; n <= to; n++) {
    const fields = RLP.decode(raws[n])
    if (!Array.isArray(fields) || fields.length < 15) throw new Error(`block ${n}: not a header`)
    // The stored RLP is canonical, so re-encoding the untouched fields gives the same bytes.
    if (!bytesEqual(RLP.encode(fields), raws[n])) throw new Error(`block ${n}: RLP does not round-trip`)
    if (n === args.fork) {
      const extra = Uint8Array.from(fields[12])
      if (extra.length === 0) throw new Error(`block ${n} has no extra-data to change`)
      extra[0] ^= 0x01
      fields[12] = extra
    } else {
      fields[0] = parent
    }
    const forged = RLP.encode(fields)
    if (forged.length !== raws[n].length) throw new Error(`block ${n}: forged length changed`)
    parent = keccak256(forged)
    out.push(forged)
  }
  fs.writeFileSync(args.out, Buffer.concat(out.map((b) => Buffer.from(b))))
  console.log(`forged ${args.fork}..${to} head ${hex(parent)}`)
}

try {
  main()
} catch (err) {
  console.error(`forge_chain.js: ${err.message}`)
  process.exit(2)
}
