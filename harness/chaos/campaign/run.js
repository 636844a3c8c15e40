#!/usr/bin/env node
// `make chaos-campaign`: a fault campaign, Jepsen-style. The local stack (2
// gateways, 2 fetchers, Redis) under distinct subscribers on the real JS
// client while a seeded nemesis (nemesis.js, faults.js) applies random
// faults, each healed after a bounded time; then the checker (checker.js)
// reads every tick every client got. Writes
// artifacts/chaos/campaign-<seed>.{json,md}; exits 1 when the checker finds
// a failure, 2 when the campaign itself could not run.
//
//   node harness/chaos/campaign/run.js [--seed 1] [--duration 60m] [--variant links|sentinel]
//     [--provider sim|ws-stream] [--clients 8] [--symbols 6] [--kinds kill,pause,...]

import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { RecordingSubscriber, sleep, waitFor } from '../../testkit/src/index.js'
import { checkTicks, episodes, readiness, sumTicks, untoldStaleness, verdict } from './checker.js'
import { applyFault, faultWindows } from './faults.js'
import { FAULTS, plan } from './nemesis.js'
import { markdown } from './report.js'
import { LIBFAKETIME, startCampaignStack } from './stack.js'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))

/**
 * @param {string} text 60m, 90s, 1500ms, 1h
 * @returns {number} ms
 */
export function parseDuration (text) {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim())
  if (!m) throw new TypeError(`not a duration: ${text} (e.g. 60m, 90s)`)
  return Math.round(Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] ?? 's'])
}

const { values: args } = parseArgs({
  options: {
    seed: { type: 'string', default: '1' },
    duration: { type: 'string', default: '60m' },
    variant: { type: 'string', default: 'links' },
    provider: { type: 'string', default: 'sim' },
    clients: { type: 'string', default: '8' },
    symbols: { type: 'string', default: '6' },
    kinds: { type: 'string' }
  }
})
const seed = Number(args.seed)
const durationMs = parseDuration(String(args.duration))
const variant = /** @type {'links' | 'sentinel'} */ (args.variant)
const provider = /** @type {'sim' | 'ws-stream'} */ (args.provider)
if (!Number.isInteger(seed)) throw new TypeError('--seed: an integer')
if (!['links', 'sentinel'].includes(variant)) throw new TypeError('--variant: links or sentinel')
if (!['sim', 'ws-stream'].includes(provider)) throw new TypeError('--provider: sim or ws-stream')
const SYMBOLS = Array.from({ length: Number(args.symbols) }, (_, i) => (provider === 'sim' ? `CA${i + 1}` : ['AAPL', 'MSFT', 'NVDA', 'AMZN', 'GOOG', 'META', 'TSLA', 'AMD'][i % 8]))

let t0 = Date.now()
const stamp = () => {
  const s = Math.max(0, Math.round((Date.now() - t0) / 1000))
  return `[+${String(Math.floor(s / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}]`
}
const say = (/** @type {string} */ line) => console.log(`${stamp()} ${line}`)

/**
 * @param {RecordingSubscriber[]} subs
 * @returns {string} the gateway most of them are on
 */
function busiestGateway (subs) {
  const n = (/** @type {string} */ g) => subs.filter((s) => s.node === g).length
  return n('gw2') > n('gw1') ? 'gw2' : 'gw1'
}

/**
 * @param {import('./faults.js').AppliedFault[]} applied
 * @param {number} at
 * @returns {string} the faults in force at `at` (or applied within 1 s after: a quiet stretch starts
 *   at the last tick before its fault), or healed within 10 s before it
 */
function faultsAround (applied, at) {
  const near = applied.filter((a) => a.appliedAt <= at + 1000 && (a.healedAt ?? Infinity) >= at - 10_000)
  return near.length ? near.map((a) => `#${a.plan.id} ${a.plan.kind} ${a.plan.target}${(a.healedAt ?? Infinity) < at ? ` (healed ${((at - /** @type {number} */ (a.healedAt)) / 1000).toFixed(1)} s before)` : ''}`).join(', ') : 'no fault in force'
}

async function main () {
  if ((args.kinds?.split(',') ?? ['skew']).includes('skew') && !existsSync(LIBFAKETIME)) {
    console.error(`the skew fault needs libfaketime (${LIBFAKETIME}): apt-get install -y faketime, or leave skew out with --kinds`)
    process.exit(2)
  }
  say(`campaign seed ${seed}, ${args.duration}, ${variant} variant, ${provider} provider: starting the stack`)
  const stack = await startCampaignStack({ variant, provider })
  const urls = stack.gatewayUrls()
  const subs = Array.from({ length: Number(args.clients) }, (_, i) => new RecordingSubscriber({ url: i % 2 ? [...urls].reverse() : urls, symbols: SYMBOLS }))
  /** @type {import('./faults.js').AppliedFault[]} */
  const applied = []
  /** @type {import('./checker.js').ReadySample[]} */
  const samples = []
  let code = 0
  try {
    await waitFor(() => subs.every((s) => SYMBOLS.every((sym) => s.has(sym))), { timeout: 60_000, message: 'every subscriber has a quote of every symbol' })
    const schedule = plan({ seed, durationMs, variant, services: { gateway: ['gw1', 'gw2', 'busiest', 'busiest'], fetcher: ['f1', 'f2'] }, kinds: args.kinds?.split(',') })
    t0 = Date.now()
    say(`stack up (gateways ${urls.join(' ')}); ${schedule.length} faults planned: ${[...new Set(schedule.map((f) => f.kind))].map((k) => `${k} ${schedule.filter((f) => f.kind === k).length}`).join(', ')}`)

    const sampler = setInterval(() => {
      for (const slot of stack.slots) {
        const at = Date.now()
        if (!slot.handle) { samples.push({ service: slot.name, at, ready: null }); continue }
        fetch(`${slot.handle.url}/readyz`, { signal: AbortSignal.timeout(450) })
          .then(async (res) => { await res.arrayBuffer(); return res.ok })
          .catch(() => false)
          .then((ready) => samples.push({ service: slot.name, at, ready }))
      }
    }, 500)
    // Each minute, the checker over that minute's events only (cheap at any
    // length of campaign; a hole across the minute's edge is seen at the end).
    const seen = subs.map(() => 0)
    const minutely = setInterval(() => {
      const slices = subs.map((s, i) => s.events.slice(seen[i]))
      subs.forEach((s, i) => { seen[i] = s.events.length })
      const m = sumTicks(slices.map((e) => checkTicks(e).figures))
      say(`minute: ${m.got} quotes, ${applied.length}/${schedule.length} faults applied, ${applied.filter((a) => a.healedAt === null).length} in force, ` +
        `${subs.filter((s) => s.live).length}/${subs.length} clients live; this minute lost told ${m.lostTold}, untold ${m.lostUntold}, dup ${m.duplicates}, ` +
        `out of order ${m.outOfOrder}, stale as news ${m.staleAsNews} + ${m.lateUntold} late`)
    }, 60_000)

    // The plan keeps one fault per role at a time with the durations it
    // drew; a heal can take longer (a Sentinel settling, a slow restart), so
    // each fault also waits for the one before it in its lane and on its
    // target to end.
    /** @type {Map<string, Promise<void>>} by lane and by target */
    const ends = new Map()
    const runs = schedule.map((planned) => {
      const keys = [`lane:${planned.lane}`, `target:${planned.target}`]
      const run = Promise.all(keys.map((k) => ends.get(k))).then(() => one(planned))
      for (const k of keys) ends.set(k, run)
      return run
    })
    /** @param {import('./nemesis.js').PlannedFault} planned */
    async function one (planned) {
      const late = Date.now() - (t0 + planned.at)
      // Late: the one before it just ended; leave it 2 s (two pub/sub kills
      // back to back, the second finds nothing to kill).
      await sleep(late > 0 ? 2000 : -late)
      // 'busiest': the gateway serving the most clients now (after a kill
      // they all gather on the other one; a fault where nobody is is a fault
      // nobody sees).
      const f = planned.target === 'busiest' ? { ...planned, target: busiestGateway(subs) } : planned
      /** @type {import('./faults.js').AppliedFault} */
      const rec = { plan: f, appliedAt: Date.now(), healedAt: null, notes: planned === f ? [] : [`the busiest gateway (${subs.filter((s) => s.node === f.target).length} clients)`], error: null }
      if (late > 1000) rec.notes.push(`${(late / 1000).toFixed(1)} s late: the fault before it in its lane or on its target took longer than planned`)
      applied.push(rec)
      const what = `#${f.id} ${f.kind}${f.params.skewMs ? ` ${f.params.skewMs} ms` : ''} on ${f.target}`
      say(`apply ${what} (${FAULTS[f.kind].title}) for ${f.durationMs} ms`)
      try {
        const heal = await applyFault(f, stack, rec)
        await sleep(f.durationMs)
        await heal()
        rec.healedAt = Date.now()
        say(`healed ${what} after ${rec.healedAt - rec.appliedAt} ms${rec.notes.length ? `: ${rec.notes.join('; ')}` : ''}`)
      } catch (err) {
        rec.error = String(/** @type {Error} */ (err).message ?? err).split('\n')[0]
        rec.healedAt = Date.now()
        say(`FAULT ERROR ${what}: ${rec.error}`)
      }
    }
    await Promise.all(runs)
    await sleep(Math.max(0, t0 + durationMs - Date.now()))
    clearInterval(sampler)
    clearInterval(minutely)
    await sleep(600)
    const endAt = Date.now()

    // The checker.
    const clients = subs.map((s, i) => {
      const { figures, findings } = checkTicks(s.events)
      const { worst, stretches } = untoldStaleness(s.events, { endAt })
      // Untold stretches of 2 s or more join the episodes too.
      const quiet = stretches.filter((x) => x.untoldMs >= 2000).map((x) => ({ rule: 'untoldStale', s: x.s, at: x.from, value: x.untoldMs, detail: `no tick for ${x.gapMs} ms, ${x.untoldMs} ms of it untold` }))
      const id = i + 1
      return { id, ticks: figures, worst, nodes: s.node, findings: [...findings, ...quiet].map((f) => ({ ...f, client: id, detail: `client ${id}: ${f.detail}` })) }
    })
    const ticks = sumTicks(clients.map((c) => c.ticks))
    const worstUntold = clients.map((c) => c.worst).filter((w) => w !== null).sort((a, b) => b.untoldMs - a.untoldMs)[0] ?? null
    const { cuts, own } = faultWindows(applied, endAt)
    const failures = verdict({ ticks, worstUntoldStaleMs: worstUntold?.untoldMs ?? 0 })
    const errors = applied.filter((a) => a.error)
    if (errors.length) failures.push(`${errors.length} faults could not be applied or healed`)
    const found = episodes(clients.flatMap((c) => c.findings)).map((e) => ({ ...e, faults: faultsAround(applied, e.from) }))
    const notices = { staleFrames: 0, freshFrames: 0, staleEvents: 0, freshEvents: 0 }
    for (const counts of subs.map((s) => s.notices())) for (const k of /** @type {(keyof typeof notices)[]} */ (Object.keys(notices))) notices[k] += counts[k]
    /** @type {import('./report.js').CampaignResult} */
    const result = {
      setup: { seed, durationMs, variant, provider, clients: subs.length, symbols: SYMBOLS, startedAt: new Date(t0).toISOString() },
      faults: applied.sort((a, b) => a.plan.id - b.plan.id),
      ticks,
      clients: clients.map(({ findings: _f, ...c }) => c),
      worstUntold,
      readiness: readiness(samples, cuts, own),
      notices,
      episodes: found,
      failures
    }
    const md = markdown(result, t0)
    const dir = join(ROOT, 'artifacts/chaos')
    mkdirSync(dir, { recursive: true })
    writeFileSync(join(dir, `campaign-${seed}.json`), JSON.stringify({ ...result, t0, windows: { cuts, own } }, null, 2) + '\n')
    writeFileSync(join(dir, `campaign-${seed}.md`), md)
    console.log(`\n${md}`)
    say(`written artifacts/chaos/campaign-${seed}.{json,md}`)
    code = failures.length ? 1 : 0
  } catch (err) {
    console.error(`campaign could not run: ${/** @type {Error} */ (err).stack ?? err}`)
    code = 2
  } finally {
    for (const s of subs) s.close()
    await stack.close()
  }
  process.exit(code)
}

await main()
