#!/usr/bin/env node
// Runs one load profile as several k6 processes at once and merges their
// summaries. A process holds at most ~20,000 open files here, and one source
// address reaches one destination from ~28,000 ports, so beyond ~15,000
// connections the ramp must be split over processes and source addresses.
//
//   node loadtest/shard.js [--shards N] [--ips 127.0.0.2-127.0.0.9] [--out DIR] [-- k6 run args]
//   node loadtest/shard.js merge FILE...   (summary.json files, or logs with WSPS_SUMMARY lines)
//
// Every k6 parameter (TARGET, WS_URL, RAMP, ...) comes from the environment,
// as for ramp.js; TARGET is the total and is split over the shards. Each
// shard gets its own source addresses (--local-ips), SUMMARY_DIR=DIR/shard-i
// and the tag shard=i; its output goes to DIR/shard-i/k6.log. Exit status:
// 0 when every shard passed, 99 when thresholds failed, else the first
// other failure.

import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, writeFileSync, createWriteStream } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { mergeSummaries, renderText } from './lib/summary.js'

const HERE = dirname(fileURLToPath(import.meta.url))
/** Connections one k6 process should hold at most (open files are capped at 20,000). */
export const MAX_PER_PROCESS = 15000

/**
 * Expands "127.0.0.2-127.0.0.9,127.0.1.5" into single IPv4 addresses.
 *
 * @param {string} spec
 * @returns {string[]}
 */
export function expandIps (spec) {
  const out = []
  for (const part of spec.split(',').map((s) => s.trim()).filter(Boolean)) {
    const [a, b] = part.split('-')
    const from = toInt(a)
    const to = b === undefined ? from : toInt(b.includes('.') ? b : a.replace(/\d+$/, b))
    if (to < from || to - from > 65535) throw new Error(`bad address range: ${part}`)
    for (let i = from; i <= to; i++) out.push(fromInt(i))
  }
  return out
}

/** @param {string} ip */
function toInt (ip) {
  const p = ip.split('.').map(Number)
  if (p.length !== 4 || p.some((x) => !Number.isInteger(x) || x < 0 || x > 255)) throw new Error(`not an IPv4 address: ${ip}`)
  return ((p[0] << 24) >>> 0) + (p[1] << 16) + (p[2] << 8) + p[3]
}

/** @param {number} n */
function fromInt (n) {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.')
}

/**
 * Splits `total` connections and the source addresses over `shards` processes.
 *
 * @param {number} total
 * @param {number} shards
 * @param {string[]} ips
 * @returns {{target: number, ips: string[]}[]}
 */
export function planShards (total, shards, ips) {
  if (shards < 1) throw new Error('--shards must be at least 1')
  if (ips.length === 0) throw new Error('no source addresses')
  const out = []
  for (let i = 0; i < shards; i++) {
    const target = Math.floor(total / shards) + (i < total % shards ? 1 : 0)
    // Own addresses when there are enough, else share round-robin.
    const mine = ips.length >= shards ? ips.filter((_, j) => j % shards === i) : [ips[i % ips.length]]
    out.push({ target, ips: mine })
  }
  return out
}

/**
 * Reads summaries from files: summary.json as written by ramp.js, or any
 * text (kubectl logs of k6 pods) with `WSPS_SUMMARY {json}` lines.
 *
 * @param {string[]} files
 */
export function readSummaries (files) {
  const list = []
  for (const f of files) {
    const text = readFileSync(f, 'utf8')
    const lines = text.split('\n').filter((l) => l.startsWith('WSPS_SUMMARY '))
    if (lines.length) for (const l of lines) list.push(JSON.parse(l.slice('WSPS_SUMMARY '.length)))
    else list.push(JSON.parse(text))
  }
  return list
}

/**
 * The options of a sharded run (node:util parseArgs: `--shards N` or
 * `--shards=N`); what follows `--` goes to every `k6 run`.
 *
 * @param {string[]} argv
 */
function readOptions (argv) {
  const { values, positionals, tokens } = parseArgs({
    args: argv,
    options: {
      shards: { type: 'string' },
      ips: { type: 'string' },
      out: { type: 'string' },
      k6: { type: 'string' },
      script: { type: 'string' },
      help: { type: 'boolean', short: 'h' }
    },
    allowPositionals: true,
    strict: true,
    tokens: true
  })
  if (values.help) { usage(); process.exit(0) }
  const end = tokens.find((t) => t.kind === 'option-terminator')
  const k6Args = end ? argv.slice(end.index + 1) : []
  if (positionals.length > k6Args.length) throw new Error(`unknown argument: ${positionals[0]}`)
  return {
    shards: values.shards === undefined ? 0 : Number(values.shards),
    ips: values.ips ?? '127.0.0.2-127.0.0.9',
    out: values.out ?? '',
    k6: values.k6 ?? (process.env.K6 || 'k6'),
    script: values.script ?? join(HERE, 'ramp.js'),
    k6Args
  }
}

function usage () {
  process.stdout.write(readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').slice(1, 17).map((l) => l.replace(/^\/\/ ?/, '')).join('\n') + '\n')
}

/**
 * @param {Awaited<ReturnType<typeof readSummaries>>} list
 * @param {string} outDir
 */
function report (list, outDir) {
  const merged = mergeSummaries(list)
  const text = renderText(merged)
  if (outDir) {
    writeFileSync(join(outDir, 'summary.json'), JSON.stringify(merged, null, 2) + '\n')
    writeFileSync(join(outDir, 'summary.txt'), text)
  }
  process.stdout.write(text)
  return merged
}

async function main () {
  const argv = process.argv.slice(2)
  if (argv[0] === 'merge') {
    const files = argv.slice(1)
    if (files.length === 0) throw new Error('merge: give summary.json files or logs with WSPS_SUMMARY lines')
    const merged = report(readSummaries(files), '')
    process.exitCode = merged.ok ? 0 : 99
    return
  }
  const opts = readOptions(argv)
  const total = Number(process.env.TARGET || 1000)
  if (!Number.isInteger(total) || total < 1) throw new Error(`TARGET=${process.env.TARGET}: expected a positive integer`)
  const shards = opts.shards || Math.max(1, Math.ceil(total / MAX_PER_PROCESS))
  const plan = planShards(total, shards, expandIps(opts.ips))
  const stamp = new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19)
  const outDir = resolve(opts.out || join(HERE, 'results', `shards-${stamp}`))
  mkdirSync(outDir, { recursive: true })

  process.stdout.write(`==> ${shards} k6 processes, ${total} connections in all, results in ${outDir}\n`)
  /** @type {Set<import('node:child_process').ChildProcess>} */
  const running = new Set()
  const forward = (/** @type {NodeJS.Signals} */ sig) => {
    for (const c of running) if (c.pid) process.kill(c.pid, sig)
  }
  process.on('SIGINT', () => forward('SIGINT'))
  process.on('SIGTERM', () => forward('SIGTERM'))

  const results = await Promise.all(plan.map((p, i) => {
    const dir = join(outDir, `shard-${i}`)
    mkdirSync(dir, { recursive: true })
    // --address '': no REST API (the shards would fight over port 6565).
    const args = ['run', '--quiet', '--address', '', '--local-ips', p.ips.join(','), '--tag', `shard=${i}`, ...opts.k6Args, opts.script]
    // GOGC=400: k6's heap churns with every frame; a lazier GC saves ~15% CPU.
    const env = { GOGC: '400', ...process.env, TARGET: String(p.target), SUMMARY_DIR: dir, WSPS_LOCAL_IPS: p.ips.join(','), K6_NO_USAGE_REPORT: 'true' }
    const child = spawn(opts.k6, args, { env, stdio: ['ignore', 'pipe', 'pipe'] })
    running.add(child)
    const log = createWriteStream(join(dir, 'k6.log'))
    child.stdout.pipe(log, { end: false })
    child.stderr.pipe(log, { end: false })
    // Surface warnings and errors as they happen, tagged with the shard.
    child.stderr.on('data', (chunk) => {
      for (const line of String(chunk).split('\n')) {
        if (/level=(error|warning)/.test(line)) process.stderr.write(`[shard ${i}] ${line}\n`)
      }
    })
    process.stdout.write(`    shard ${i}: pid ${child.pid}, TARGET=${p.target}, source ${p.ips.join(',')}, log ${join(dir, 'k6.log')}\n`)
    return new Promise((resolve) => {
      child.on('error', (err) => { running.delete(child); resolve({ i, code: 127, err: err.message }) })
      child.on('close', (code, signal) => {
        running.delete(child)
        log.end()
        resolve({ i, code: code ?? (signal ? 128 : 1), err: '' })
      })
    })
  }))

  for (const r of results) process.stdout.write(`    shard ${r.i}: exit ${r.code}${r.err ? ` (${r.err})` : ''}\n`)
  const files = plan.map((_, i) => join(outDir, `shard-${i}`, 'summary.json')).filter((f) => existsSync(f))
  if (files.length < plan.length) process.stdout.write(`    WARNING: only ${files.length} of ${plan.length} shards wrote a summary\n`)
  if (files.length) {
    process.stdout.write('\n')
    report(readSummaries(files), outDir)
  }
  const codes = results.map((r) => r.code)
  process.exitCode = codes.every((c) => c === 0) ? 0 : codes.includes(99) && codes.every((c) => c === 0 || c === 99) ? 99 : codes.find((c) => c !== 0 && c !== 99) ?? 1
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err) => {
    process.stderr.write(`shard.js: ${err.message}\n`)
    process.exitCode = 2
  })
}
