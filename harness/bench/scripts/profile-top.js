#!/usr/bin/env node
// Summarizes a V8 .cpuprofile (node --cpu-prof): self time by function and
// inclusive time of selected frames. Usage: profile-top.js FILE [N]

import { readFileSync } from 'node:fs'

const [file, n = '25'] = process.argv.slice(2)
const prof = JSON.parse(readFileSync(file, 'utf8'))
/** @type {Map<number, any>} */
const byId = new Map(prof.nodes.map((/** @type {any} */ x) => [x.id, x]))
/** @type {Map<number, number>} */
const parent = new Map()
for (const x of prof.nodes) for (const c of x.children ?? []) parent.set(c, x.id)
/** @type {Map<number, number>} */
const selfUs = new Map()
prof.samples.forEach((/** @type {number} */ id, /** @type {number} */ i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (prof.timeDeltas[i] ?? 0)))
const total = [...selfUs.values()].reduce((a, b) => a + b, 0)
const name = (/** @type {any} */ x) => `${x.callFrame.functionName || '(anonymous)'} ${x.callFrame.url.replace(/^.*\/(node_modules|services)\//, '$1/')}:${x.callFrame.lineNumber + 1}`
/** @type {Map<string, number>} */
const self = new Map()
/** @type {Map<string, number>} */
const incl = new Map()
for (const [id, us] of selfUs) {
  const x = byId.get(id)
  self.set(name(x), (self.get(name(x)) ?? 0) + us)
  const seen = new Set()
  for (let cur = id; cur !== undefined; cur = /** @type {number} */ (parent.get(cur))) {
    const k = name(byId.get(cur))
    if (seen.has(k)) continue
    seen.add(k)
    incl.set(k, (incl.get(k) ?? 0) + us)
  }
}
const busy = total - (self.get('(idle) :0') ?? 0)
console.log(`total ${(total / 1e6).toFixed(1)} s sampled, busy ${(busy / 1e6).toFixed(1)} s`)
console.log('\nself time (% of busy):')
for (const [k, v] of [...self].filter(([k]) => k !== '(idle) :0').sort((a, b) => b[1] - a[1]).slice(0, Number(n))) console.log(`${(100 * v / busy).toFixed(1).padStart(5)}%  ${k}`)
console.log('\ninclusive time (% of busy):')
for (const [k, v] of [...incl].filter(([k]) => !k.startsWith('(root)') && k !== '(idle) :0').sort((a, b) => b[1] - a[1]).slice(0, Number(n))) console.log(`${(100 * v / busy).toFixed(1).padStart(5)}%  ${k}`)
