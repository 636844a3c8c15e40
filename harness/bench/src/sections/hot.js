// Hot symbols: most connections watch the same few symbols (a market open,
// one headline stock), so every quote of the hottest one fans out to most
// of the process's connections at once. The same ramp as the fan-out
// (latency-bounded max, p99 at 50% of it), for one gateway process and for
// WSPS_WORKERS=2.

import { fanoutAll } from './fanout.js'

/**
 * @param {import('../bench-run.js').BenchRun} run
 */
export async function hotSymbols (run) {
  const both = run.serverCore !== null && run.loadCore !== null ? `${run.serverCore},${run.loadCore}` : null
  const shape = {
    conns: run.P.hotConns,
    loadSymbols: run.P.hotSymbols,
    k: 1,
    zipf: run.P.hotZipf,
    // One worker on the server core; two workers get both cores (on a
    // 2-core machine they share one with the load generator: say so when
    // reading the figures).
    serverCores: (/** @type {string} */ name) => (name === 'wsps-2w' ? both : run.serverCore)
  }
  return { shape: { conns: shape.conns, symbols: shape.loadSymbols, zipf: shape.zipf, cores2w: both }, servers: await fanoutAll(run, ['wsps', 'wsps-2w'], shape) }
}
