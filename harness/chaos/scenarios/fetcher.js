// Fetcher faults: one of two fetchers killed (-9) or stopped (SIGTERM)
// repeatedly — every watched symbol updates again within 5 s; the only
// fetcher killed and started again — every symbol updates within 5 s of its
// return.

import { LeanClient } from '../lib/lean-client.js'
import { Report } from '../lib/report.js'
import { sleep, startFetcher, startGateway, startRedis, waitFor } from '../../testkit/src/index.js'

const FETCHER_ENV = { WSPS_FETCH_INTERVAL_MS: 250, WSPS_SCHEDULE_TICK_MS: 25 }

/**
 * @param {{cycles?: number, symbols?: number, downMs?: number}} params
 * @param {(line: string) => void} log
 */
export async function run (params, log) {
  const p = { cycles: 3, symbols: 300, downMs: 3000, ...params }
  const report = new Report()
  const redis = await startRedis()
  /** @type {import('../../testkit/src/index.js').ServiceHandle[]} */
  const all = []
  /** @type {LeanClient | null} */
  let client = null
  const fetcher = async () => {
    const f = await startFetcher(redis.url, FETCHER_ENV)
    all.push(f)
    return f
  }
  try {
    const gw = await startGateway(redis.url, { WSPS_MAX_SUBSCRIPTIONS: Math.max(200, p.symbols) })
    all.push(gw)
    /** @type {import('../../testkit/src/index.js').ServiceHandle[]} */
    const fetchers = await Promise.all([fetcher(), fetcher()])
    const symbols = Array.from({ length: p.symbols }, (_, i) => `FT${i}`)
    client = await LeanClient.connect(gw.wsUrl)
    await client.sub(symbols)
    const c = client
    await waitFor(() => c.allSince(0, 'snap'), { timeout: 30_000, message: 'every symbol snapshotted' })
    /** @param {number} since */
    const allUpdated = async (since) => {
      await waitFor(() => c.allSince(since), { timeout: 30_000, interval: 10, message: 'every symbol updating again' })
      return Date.now() - since
    }

    /** @type {Record<string, number[]>} */
    const recovery = { kill: [], term: [] }
    for (let cycle = 1; cycle <= p.cycles; cycle++) {
      for (const how of /** @type {const} */ (['kill', 'term'])) {
        await allUpdated(Date.now())
        const victim = fetchers.shift()
        if (!victim) throw new Error('no fetcher')
        const at = Date.now()
        await victim.stop(how === 'kill' ? 'SIGKILL' : 'SIGTERM')
        const ms = await allUpdated(at)
        recovery[how].push(ms)
        log(`cycle ${cycle}: one of two fetchers ${how === 'kill' ? 'killed (-9)' : 'stopped (SIGTERM)'}: all ${p.symbols} symbols updated ${ms} ms later`)
        if (how === 'term') report.check(`cycle ${cycle}: SIGTERM: the fetcher exits 0`, (await victim.exited).code === 0)
        fetchers.push(await fetcher())
      }
    }

    // The only fetcher: kill both, stay down, start one.
    const single = []
    for (let cycle = 1; cycle <= Math.max(1, Math.ceil(p.cycles / 2)); cycle++) {
      await Promise.all(fetchers.splice(0).map((f) => f.stop('SIGKILL')))
      await sleep(p.downMs)
      const stalled = [...c.symbols.values()].every((s) => s.lastAt < Date.now() - p.downMs / 2)
      report.check(`single fetcher cycle ${cycle}: no update while no fetcher runs`, stalled)
      const f = await fetcher()
      const back = Date.now()
      fetchers.push(f)
      const ms = await allUpdated(back)
      single.push(ms)
      log(`single fetcher cycle ${cycle}: all symbols updated ${ms} ms after it was back (ready)`)
    }
    fetchers.push(await fetcher())

    report.figure('one of two fetchers killed -9: all symbols updated again (max)', Math.max(...recovery.kill), 'ms', { max: 5000 })
    report.figure('one of two fetchers SIGTERM: all symbols updated again (max)', Math.max(...recovery.term), 'ms', { max: 5000 })
    report.figure('the only fetcher restarted: all symbols updated after its return (max)', Math.max(...single), 'ms', { max: 5000 })
    report.check('no gap or stray quote at the client', c.problems.length === 0, c.problems.slice(0, 5))
    report.check('gateway alive, socket open', gw.proc.exitCode === null && c.closeCode === null)
    report.details = { recovery, single, symbols: p.symbols }
    return report.toJSON()
  } finally {
    client?.terminate()
    await Promise.all(all.map((x) => x.stop('SIGKILL')))
    await redis.close()
  }
}
