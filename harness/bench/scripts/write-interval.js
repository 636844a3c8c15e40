#!/usr/bin/env node
// The fan-out's write interval, step by step, from results JSON files
// (make bench, or bench.js --only=fanout --out=…). Near its bound the
// gateway writes every reader once per pass, so what one reader waits
// between two frames is connections ÷ frames per second, and the server's
// CPU per frame says what made the interval that long. Prints one row per
// wsps step at or above --min deliveries/s (saturation steps left out),
// with the gateway's p99 quote age on arrival where the run has it
// (wsps_gateway_receive_lag_seconds), then, per file, the longest interval
// that passed and the shortest that failed, and how many steps passed per
// 5 ms band of the interval. Usage: write-interval.js [--min=N] FILE.json...

import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'

const { values, positionals } = parseArgs({ options: { min: { type: 'string', default: '300000' } }, allowPositionals: true })
const min = Number(values.min)
if (!Number.isFinite(min) || positionals.length === 0) {
  console.error('usage: write-interval.js [--min=DELIVERIES_PER_S] results.json...')
  process.exit(2)
}

const fmt = (/** @type {number} */ x, /** @type {number} */ d) => x.toFixed(d)
console.log('| run (UTC) | floor µs/write | server | delivered/s | q/frame | µs CPU per frame | write interval ms | p99 ms | p99 ÷ interval | arrival p99 ms | ok |')
console.log('| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |')
/** @type {string[]} */
const summary = []
/** Steps per 5 ms band of the write interval: [passed, all]. @type {Map<number, [number, number]>} */
const bands = new Map()
for (const file of positionals) {
  const r = JSON.parse(readFileSync(file, 'utf8'))
  const when = String(r.startedAt ?? '').slice(0, 16).replace('T', ' ')
  const floor = r.fanoutShape?.usPerWrite
  for (const name of ['wsps', 'wsps-distinct']) {
    const x = r.fanout?.[name]
    if (!x) continue
    let passed = 0
    let failed = Infinity
    for (const s of x.steps) {
      if (s.saturation || s.delivered < min || !s.frames) continue
      const frames = s.delivered / s.quotesPerFrame
      const intervalMs = x.conns / frames * 1000
      const band = Math.floor(intervalMs / 5) * 5
      const [ok, all] = bands.get(band) ?? [0, 0]
      bands.set(band, [ok + (s.pass ? 1 : 0), all + 1])
      if (s.pass) passed = Math.max(passed, intervalMs)
      else failed = Math.min(failed, intervalMs)
      console.log(`| ${when} | ${floor ?? ''} | ${name} | ${s.delivered.toLocaleString('en-US')} | ${fmt(s.quotesPerFrame, 1)} | ${fmt(s.cpu.server / frames * 1e6, 1)} | ${fmt(intervalMs, 0)} | ${s.p99} | ${fmt(s.p99 / intervalMs, 2)} | ${s.arrivalP99 ?? ''} | ${s.pass ? 'yes' : 'no'} |`)
    }
    summary.push(`${when} ${name}: max ${x.max ? `${x.lowerBound ? '≥ ' : ''}${x.max.delivered.toLocaleString('en-US')}` : 'none'}; longest interval passed ${passed ? `${fmt(passed, 0)} ms` : '-'}, shortest failed ${failed < Infinity ? `${fmt(failed, 0)} ms` : '-'}`)
  }
}
console.log('')
for (const line of summary) console.log(line)
console.log('\n| write interval | steps passed |\n| --- | ---: |')
for (const [band, [ok, all]] of [...bands].sort((a, b) => a[0] - b[0])) console.log(`| ${band}–${band + 5} ms | ${ok} of ${all} |`)
