#!/usr/bin/env node
// `make chaos`: long fault, slow-consumer and fuzz scenarios on real
// processes. Each scenario runs in its own child process (the slow-consumer
// one in a private network namespace when possible) with a hard time limit,
// so one that hangs or crashes cannot take the others down. At the end:
// a table of every figure and check, also written to
// artifacts/chaos/figures.{json,md}.
//
//   node harness/chaos/run.js [--quick] [--record] [scenario ...]   (--help: this line)
//
// --quick runs every scenario at a small scale (a smoke test of the
// scenarios themselves, not the figures to record). --record also writes
// the table into docs/operations.md (between the chaos-figures markers)
// when every scenario ran at full scale.

import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { runIsolated } from '../testkit/src/isolate.js'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))

/**
 * @typedef {object} Scenario
 * @property {string} title
 * @property {number} timeoutMs hard limit of the child process
 * @property {boolean} [netns]
 * @property {Record<string, unknown>} params
 * @property {Record<string, unknown>} quick
 */

/** @type {Record<string, Scenario>} in the order they run */
export const SCENARIOS = {
  redis: {
    title: 'Redis kill -9 and restart',
    timeoutMs: 180_000,
    params: { cycles: 3, clients: 300 },
    quick: { cycles: 1, clients: 40 }
  },
  fetcher: {
    title: 'Fetcher kills and restarts',
    timeoutMs: 180_000,
    params: { cycles: 3, symbols: 300 },
    quick: { cycles: 1, symbols: 50 }
  },
  gateway: {
    title: 'Gateway SIGTERM / SIGKILL / hang: reconnect elsewhere',
    timeoutMs: 240_000,
    params: { clients: 1000 },
    quick: { clients: 60 }
  },
  upstream: {
    title: 'Upstream errors and timeouts (http provider)',
    timeoutMs: 180_000,
    params: {},
    quick: { phaseMs: 6000 }
  },
  slow: {
    title: 'Slow consumers: 1,000 stuck among 9,000 live',
    timeoutMs: 360_000,
    netns: true,
    params: { live: 9000, slow: 1000, wakers: 100, processes: 5 },
    quick: { live: 300, slow: 50, wakers: 10, processes: 2 }
  },
  fuzz: {
    title: 'Live-connection fuzz and handshake floods',
    timeoutMs: 420_000,
    params: { frames: 1_000_000 },
    quick: { frames: 30_000, slowloris: 100 }
  }
}

async function main () {
  // Scenario children run in their own process groups (so a time limit can
  // end all they started); on Ctrl-C or SIGTERM exit through process.exit so
  // isolate.js's exit hooks end them too.
  for (const signal of /** @type {const} */ (['SIGINT', 'SIGTERM'])) process.on(signal, () => process.exit(130))
  const { values: flags, positionals: names } = readArgs(process.argv.slice(2))
  const quick = flags.quick
  const chosen = names.length ? names : Object.keys(SCENARIOS)
  for (const n of chosen) if (!SCENARIOS[n]) throw new Error(`unknown scenario ${n} (have: ${Object.keys(SCENARIOS).join(', ')})`)
  const started = Date.now()
  /** @type {import('./lib/report.js').Figure[]} */
  const figures = []
  /** @type {(import('./lib/report.js').Check & {knownBug?: string})[]} */
  const checks = []
  /** @type {Record<string, unknown>} */
  const details = {}
  for (const name of chosen) {
    const s = SCENARIOS[name]
    const t0 = Date.now()
    console.log(`\n=== ${name}: ${s.title}${quick ? ' (quick)' : ''}`)
    try {
      const { result, netns } = await runIsolated(fileURLToPath(new URL(`./scenarios/${name}.js`, import.meta.url)), 'run',
        quick ? s.quick : s.params, { netns: s.netns, timeoutMs: s.timeoutMs, onLine: (l) => console.log(`  ${l}`) })
      for (const f of result.figures) figures.push({ scenario: name, ...f })
      for (const c of result.checks) checks.push({ scenario: name, ...c })
      details[name] = { ...result.details, seconds: Math.round((Date.now() - t0) / 1000), netns: s.netns ? netns : undefined }
      console.log(`  done in ${Math.round((Date.now() - t0) / 1000)} s`)
    } catch (err) {
      checks.push({ scenario: name, name: 'scenario ran to the end', ok: false, detail: String(/** @type {Error} */ (err).message).slice(0, 2000) })
      console.log(`  FAILED: ${/** @type {Error} */ (err).message}`)
    }
  }

  const failed = checks.filter((c) => !c.ok && !c.knownBug).length + figures.filter((f) => f.ok === false).length
  const table = render(figures, checks, Date.now() - started, quick)
  console.log(`\n${table}`)
  const dir = join(ROOT, 'artifacts', 'chaos')
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, 'figures.json'), JSON.stringify({ at: new Date().toISOString(), quick, figures, checks, details }, null, 2))
  writeFileSync(join(dir, 'figures.md'), `${table}\n`)
  console.log(`\n(also in artifacts/chaos/figures.md and figures.json)`)
  if (flags.record) {
    if (quick || chosen.length !== Object.keys(SCENARIOS).length) {
      console.log('--record: not recording a partial or --quick run')
    } else {
      const doc = join(ROOT, 'docs', 'operations.md')
      const text = readFileSync(doc, 'utf8')
      const start = '<!-- chaos-figures:start -->'
      const end = '<!-- chaos-figures:end -->'
      const host = `Recorded by \`make chaos-record\` on ${new Date().toISOString().slice(0, 10)}: ${os.cpus().length} cores, Node ${process.versions.node}, ` +
        `load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')} at the end (the machine was shared).`
      writeFileSync(doc, `${text.slice(0, text.indexOf(start) + start.length)}\n${host}\n\n${table.split('\n').slice(2).join('\n')}\n${text.slice(text.indexOf(end))}`)
      console.log('recorded in docs/operations.md')
    }
  }
  if (failed > 0) {
    console.log(`\nmake chaos: ${failed} failed`)
    process.exit(1)
  }
  console.log('\nmake chaos: all passed')
}

/**
 * --quick, --record and scenario names; anything else ends the run with
 * the parser's message (exit 2).
 *
 * @param {string[]} args
 */
function readArgs (args) {
  const usage = `usage: node harness/chaos/run.js [--quick] [--record] [scenario ...]  (scenarios: ${Object.keys(SCENARIOS).join(', ')})`
  try {
    const parsed = parseArgs({ args, options: { quick: { type: 'boolean', default: false }, record: { type: 'boolean', default: false }, help: { type: 'boolean', short: 'h', default: false } }, allowPositionals: true, strict: true })
    if (parsed.values.help) {
      console.log(usage)
      process.exit(0)
    }
    return parsed
  } catch (err) {
    console.error(`run.js: ${/** @type {Error} */ (err).message}\n${usage}`)
    process.exit(2)
  }
}

/**
 * @param {import('./lib/report.js').Figure[]} figures
 * @param {(import('./lib/report.js').Check & {knownBug?: string})[]} checks
 * @param {number} ms
 * @param {boolean} quick
 */
function render (figures, checks, ms, quick) {
  const lines = [`## make chaos figures${quick ? ' (--quick: smoke scale, not for the record)' : ''} — ${new Date().toISOString().slice(0, 16)}Z, ${Math.round(ms / 1000)} s`, '',
    '| scenario | figure | value | limit | |', '| --- | --- | ---: | --- | --- |']
  for (const f of figures) {
    lines.push(`| ${f.scenario} | ${f.name} | ${typeof f.value === 'number' ? f.value.toLocaleString('en-US') : f.value} ${f.unit} | ${f.limit ?? ''} | ${f.ok === undefined ? '' : f.ok ? 'ok' : '**FAIL**'} |`)
  }
  lines.push('', '| scenario | check | result |', '| --- | --- | --- |')
  for (const c of checks) {
    const result = c.ok ? (c.knownBug ? `passes now: un-mark known bug (${c.knownBug})` : 'ok') : c.knownBug ? `known bug: ${c.knownBug}` : `**FAIL** ${c.detail}`
    lines.push(`| ${c.scenario} | ${c.name} | ${result.replaceAll('|', '\\|').replaceAll('\n', ' ')} |`)
  }
  return lines.join('\n')
}

await main()
