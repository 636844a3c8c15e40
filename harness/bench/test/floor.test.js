// The hot section's floor server (loadgen/cmd/floor) on real processes: the
// bench's own publisher, Redis, the floor and the load generator, measured
// by the same step as every server. No timed assertion: it checks that the
// quotes arrive, one per frame, none missing in sequence, none twice.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startRedis } from '@wsps/testkit'
import { BenchRun } from '../src/bench-run.js'
import { startFleet } from '../src/fleet.js'
import { buildGoBin } from '../src/go-bin.js'
import { PROFILES } from '../src/profiles.js'
import { SERVERS } from '../src/servers.js'
import { start } from '../src/spawn.js'

test('the floor delivers every published quote of the hot symbols to the load generator, none missing or twice', { timeout: 300_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'wsps-floor-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  const bin = buildGoBin(join(dir, 'bin'))

  const P = { ...PROFILES.smoke, hotSymbols: 3 }
  const redis = await startRedis()
  t.after(() => redis.close())
  const publisher = start(process.execPath, [fileURLToPath(new URL('../src/publisher.js', import.meta.url)), `--redis=${redis.url}`, `--symbols=${P.symbols}`], { name: 'publisher' })
  t.after(() => publisher.stop('SIGTERM', { graceMs: 3000, killAfterMs: 3000 }))
  await publisher.waitLine((l) => l.type === 'ready', 20_000)
  const run = new BenchRun({ P, bin, serverCore: null, loadCore: null, runDir: dir, redisUrl: redis.url, redisPid: null, publisher })
  await run.setLast('hfloor')

  const srv = await SERVERS.floor.start({ redisUrl: redis.url, core: null, runDir: dir, prefix: 'hfloor', bin })
  t.after(() => srv.stop())
  const fleet = await startFleet({ bin: bin.loadgen, adapter: srv.adapter, url: srv.url, conns: 50, procs: 1, symbols: P.hotSymbols, k: 1, zipf: P.hotZipf, core: null, maxSeconds: 200, readyTimeout: 60 })
  t.after(() => fleet.stop())
  assert.equal(fleet.conns, 50, `all connected and snapshotted: ${fleet.errors.join('; ')}`)

  const s = await run.step({ fleet, roots: srv.roots, rate: 20 * P.hotSymbols, settleMs: 1000, measureMs: 3000, prefix: 'hfloor', symbols: P.hotSymbols })
  run.setRate(0, 'hfloor')
  const w = fleet.window(0, Date.now())
  assert.ok(s.delivered > 0 && w.entries > 0, `quotes arrived: ${JSON.stringify(s)}`)
  assert.equal(w.entries, w.frames, 'one quote per frame: the floor never batches')
  assert.equal(w.covered, w.entries, 'each frame counts for one tick (no merging)')
  assert.equal(w.gaps, 0, 'no quote missing in sequence')
  assert.ok(fleet.kids[0].lines.some((l) => l.type === 'tick' && l.ticksLost === 0), 'the load generator reports ticksLost in its tick lines')
  assert.equal(w.ticksLost, 0, 'no tick lost')
  assert.equal(s.ticksLost, 0, 'and the step carries it')
  assert.equal(w.dups, 0, 'no quote twice')
  assert.equal(w.errors, 0, 'no connection lost')
})
