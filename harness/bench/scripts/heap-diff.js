#!/usr/bin/env node
// Live-heap difference per connection between two V8 heap snapshots (before/after N idle connections):
// bytes and objects per connection by constructor. Usage: heap-diff.js BEFORE.heapsnapshot AFTER.heapsnapshot N
// Snapshots: start the gateway with NODE_OPTIONS=--heapsnapshot-signal=SIGUSR2 and send SIGUSR2.

import { readFileSync } from 'node:fs'
/** @param {string} f */
function load (f) {
  const s = JSON.parse(readFileSync(f, 'utf8'))
  const m = s.snapshot.meta
  const nf = m.node_fields.length
  const types = m.node_types[0]
  const ti = m.node_fields.indexOf('type'), ni = m.node_fields.indexOf('name'), si = m.node_fields.indexOf('self_size')
  /** @type {Map<string, {n: number, size: number}>} */
  const by = new Map()
  let total = 0
  for (let i = 0; i < s.nodes.length; i += nf) {
    const type = types[s.nodes[i + ti]]
    let name = type === 'object' || type === 'native' || type === 'closure' ? s.strings[s.nodes[i + ni]] : `(${type})`
    if (type === 'closure') name = `closure ${name}`
    const size = s.nodes[i + si]
    total += size
    const e = by.get(name) ?? { n: 0, size: 0 }
    e.n++; e.size += size
    by.set(name, e)
  }
  return { by, total }
}
const [a, b, conns] = [load(process.argv[2]), load(process.argv[3]), Number(process.argv[4])]
console.log('total live heap delta per conn', ((b.total - a.total) / conns).toFixed(0), 'B')
/** @type {[string, number, number][]} */
const rows = []
for (const [k, v] of b.by) {
  const o = a.by.get(k) ?? { n: 0, size: 0 }
  rows.push([k, (v.n - o.n) / conns, (v.size - o.size) / conns])
}
rows.sort((x, y) => y[2] - x[2])
for (const [k, n, sz] of rows.slice(0, 28)) console.log(sz.toFixed(0).padStart(6), 'B', n.toFixed(2).padStart(6), 'objs', k.slice(0, 70))
