// Ingest rate of the publish API (docs/feeding.md): quotes/s one push-only
// fetcher accepts per core of its own, with batches of 1, 100 and 1000
// quotes per request, through to a client subscribed at a gateway.

import { TestClient, sleep, waitFor } from '@wsps/testkit'
import { SERVERS } from '../servers.js'
import { CpuMeter } from '@wsps/testkit/proc'
import { log, round } from '../bench-run.js'
import { startPushFetcher } from '../push-fetcher.js'

/** Its own key prefix: the shared publisher's quotes do not mix in. */
const PREFIX = 'ingest'

/**
 * @param {number} batch quotes per request
 * @param {string[]} symbols
 * @param {number} round which request: prices move so every quote differs
 */
function body (batch, symbols, round) {
  const quotes = []
  for (let i = 0; i < batch; i++) {
    const bid = 100 + ((round * batch + i) % 1000) / 100
    quotes.push({ symbol: symbols[(round * batch + i) % symbols.length], bid, ask: bid + 0.02, last: bid + 0.01, volume: i })
  }
  return JSON.stringify({ quotes })
}

/**
 * @param {import('../bench-run.js').BenchRun} run
 */
export async function ingest (run) {
  log('ingest (publish API)')
  const fetcher = await startPushFetcher({ redisUrl: run.redisUrl, prefix: PREFIX, core: run.serverCore, name: 'bench-ingest', env: { WSPS_PUBLISH_MAX_BYTES: String(8 * 1024 * 1024) } })
  /** @type {import('../servers.js').ServerHandle} */
  let gateway
  try {
    gateway = await SERVERS.wsps.start({ redisUrl: run.redisUrl, core: run.loadCore, runDir: run.runDir, prefix: PREFIX, env: { WSPS_NODE_NAME: 'bench-ingest-gw' } })
  } catch (err) {
    await fetcher.stop()
    throw err
  }
  /** @type {TestClient | null} */
  let client = null
  const out = []
  try {
    // One client holds them all: at most Limits.MAX_SYMBOLS_PER_REQUEST.
    const symbols = Array.from({ length: run.P.ingestSymbols }, (_, i) => `IN${i}`)
    client = await TestClient.connect(`${gateway.url}/ws`)
    await client.sub(symbols)
    const headers = fetcher.headers
    for (const batch of run.P.ingestBatches) {
      const bodies = Array.from({ length: 8 }, (_, r) => body(batch, symbols, r))
      const meter = new CpuMeter(() => [fetcher.pid()])
      let accepted = 0
      let failed = 0
      let requests = 0
      const t0 = performance.now()
      const end = Date.now() + run.P.ingestMeasureMs
      meter.mark()
      // A few requests in flight at once, as a feeder with a connection pool would.
      await Promise.all(Array.from({ length: run.P.ingestConcurrency }, async (_, w) => {
        while (Date.now() < end) {
          const res = await fetch(fetcher.api, { method: 'POST', headers, body: bodies[(requests++ + w) % bodies.length] })
          const answer = /** @type {{accepted?: number}} */ (await res.json())
          if (res.ok) accepted += answer.accepted ?? 0
          else failed++
        }
      }))
      const seconds = (performance.now() - t0) / 1000
      const cores = meter.read()
      // Through to the client: a last quote of every symbol, then wait until
      // the client holds all of them.
      const marker = 1_000_000 + batch
      const last = JSON.stringify({ quotes: symbols.map((symbol) => ({ symbol, bid: marker })) })
      const res = await fetch(fetcher.api, { method: 'POST', headers, body: last })
      if (!res.ok) throw new Error(`final publish: HTTP ${res.status}`)
      const c = /** @type {TestClient} */ (client)
      const reached = Date.now()
      await waitFor(() => symbols.every((s) => c.quote(s)?.bid === marker), { timeout: 30_000, message: 'the client to hold every final quote' })
      const row = {
        batch,
        requests,
        failed,
        acceptedPerSec: Math.round(accepted / seconds),
        fetcherCores: round(cores, 2),
        acceptedPerSecPerCore: cores > 0 ? Math.round(accepted / seconds / cores) : null,
        clientCaughtUpMs: Date.now() - reached
      }
      out.push(row)
      log(`  batch ${batch}: ${row.acceptedPerSec} quotes/s accepted, fetcher ${row.fetcherCores} cores → ${row.acceptedPerSecPerCore} quotes/s per core; client caught up in ${row.clientCaughtUpMs} ms`)
      await sleep(500)
    }
  } finally {
    client?.ws.terminate()
    await gateway.stop()
    await fetcher.stop()
  }
  return out
}
