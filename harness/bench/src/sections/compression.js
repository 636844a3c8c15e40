// permessage-deflate measured (WSPS_COMPRESSION, ws-server.js
// deflateOptions): bytes on the wire and gateway CPU per delivered quote
// with it off and on, for merge and distinct subscribers, side by side in
// one run.
//
// Two gateways on the server core, one with WSPS_COMPRESSION off and one
// on, fed by the shared publisher (full quotes of which a few fields change
// per tick; the gateway sends each as a delta of the fields that changed).
// In each round every case (mode x compression) in turn, in an order that
// rotates: `compressionClients` Node `ws` clients, every one asking for
// permessage-deflate (what the gateway's setting decides is measured), each
// subscribed to `compressionK` of the first `compressionSymbols` symbols;
// then settle, then a window in which the clients count the quotes
// delivered and the bytes their sockets read (frame headers included, the
// handshake not), and the gateway's CPU is metered. Reported per case: the
// median over rounds.
//
// "Without deltas" is computed, not sent: one client per case also re-frames
// what it received as `q` frames of full quotes (what a protocol without
// deltas would send) and deflates them with the gateway's parameters.

import { readFileSync } from 'node:fs'
import { deflateRawSync } from 'node:zlib'
import WebSocket from 'ws'
import { ClientOp, QuoteReceiver, ServerOp } from '@wsps/protocol'
import { sleep, waitFor } from '@wsps/testkit'
import { CpuMeter } from '@wsps/testkit/proc'
import { SERVERS } from '../servers.js'
import { log, median, round } from '../bench-run.js'

/** The gateway's deflate settings (ws-server.js deflateOptions), for the computed full-quote frames. */
const DEFLATE = { windowBits: 10, memLevel: 4 }
const COMPRESS_MIN_BYTES = 256

/**
 * The subscriber kinds measured: merge and distinct at the gateway's
 * default adaptive batching (a frame per pass: at this load mostly one
 * quote per frame, under the 256-byte threshold), and merge with 100 ms
 * batches (WSPS_BATCH_MS), whose frames carry many quotes.
 */
const KINDS = /** @type {const} */ ([
  { kind: 'merge', mode: 'merge', batchMs: 0 },
  { kind: 'distinct', mode: 'distinct', batchMs: 0 },
  { kind: 'merge-batch100', mode: 'merge', batchMs: 100 }
])

/**
 * @typedef {object} Counters
 * @property {number} quotes quotes in `q` frames
 * @property {number} frames `q` frames
 * @property {number} bytes read by the sockets
 * @property {number} payload uncompressed bytes of the `q` frames' text
 * @property {number} fullPayload the sampled client: the same updates as full quotes
 * @property {number} fullDeflated the sampled client: those deflated as the gateway would
 * @property {number} sampledPayload the sampled client: its own `q` frames' text
 * @property {number} sampledQuotes the sampled client: quotes in them
 * @property {number} sampledDeflated the sampled client: its `q` frames deflated, every one (no threshold)
 * @property {number} fullDeflatedAll the sampled client: the full-quote frames deflated, every one
 */

/**
 * @param {import('../bench-run.js').BenchRun} run
 */
export async function compression (run) {
  const P = run.P
  const symbols = Array.from({ length: P.compressionSymbols }, (_, i) => `S${String(i).padStart(4, '0')}`)
  log(`compression: ${P.compressionClients} clients x ${P.compressionK} symbols, ${P.compressionRate} quotes/s over ${P.compressionSymbols} symbols, ${P.compressionRounds} rounds`)
  const cases = KINDS.flatMap((k) => [{ ...k, compression: 'off' }, { ...k, compression: 'on' }])
  /** @type {Record<string, import('../servers.js').ServerHandle>} */
  const gateways = {}
  /** @type {Record<string, any[]>} */
  const samples = Object.fromEntries(cases.map((c) => [`${c.kind}/${c.compression}`, []]))
  try {
    for (const c of cases) {
      const key = `${c.batchMs}/${c.compression}`
      gateways[key] ??= await SERVERS.wsps.start({
        redisUrl: run.redisUrl,
        core: run.serverCore,
        runDir: run.runDir,
        env: { WSPS_NODE_NAME: `bench-deflate-${c.compression}-${c.batchMs}`, WSPS_COMPRESSION: String(c.compression === 'on'), WSPS_BATCH_MS: String(c.batchMs) }
      })
    }
    run.setRate(P.compressionRate, 'wsps', P.compressionSymbols)
    for (let r = 0; r < P.compressionRounds; r++) {
      for (let i = 0; i < cases.length; i++) {
        const c = cases[(i + r) % cases.length]
        const sample = await measure(run, gateways[`${c.batchMs}/${c.compression}`], c.mode, symbols)
        samples[`${c.kind}/${c.compression}`].push(sample)
        log(`compression round ${r + 1} ${c.kind}/${c.compression}: ${sample.bytesPerQuote} B/quote, ${sample.cpuUsPerQuote} us CPU/quote, ${sample.quotesPerFrame} quotes/frame, ${sample.quotesPerSecond} quotes/s`)
      }
    }
  } finally {
    run.setRate(0)
    await Promise.all(Object.values(gateways).map((g) => g.stop()))
  }
  /** @type {Record<string, any>} */
  const out = {}
  for (const [key, list] of Object.entries(samples)) {
    const pick = (/** @type {string} */ k) => round(median(list.map((s) => s[k])), 2)
    out[key] = {
      rounds: list.length,
      negotiated: list.every((s) => s.negotiated),
      negotiatedOk: list.every((s) => s.negotiated === key.endsWith('/on')),
      quotesPerSecond: pick('quotesPerSecond'),
      quotesPerFrame: pick('quotesPerFrame'),
      bytesPerQuote: pick('bytesPerQuote'),
      payloadPerQuote: pick('payloadPerQuote'),
      cpuUsPerQuote: pick('cpuUsPerQuote'),
      gatewayCores: pick('gatewayCores'),
      rssMiB: pick('rssMiB'),
      deflatedAllPerQuote: pick('deflatedAllPerQuote'),
      fullPayloadPerQuote: pick('fullPayloadPerQuote'),
      fullDeflatedPerQuote: pick('fullDeflatedPerQuote'),
      fullDeflatedAllPerQuote: pick('fullDeflatedAllPerQuote')
    }
  }
  for (const { kind } of KINDS) {
    const off = out[`${kind}/off`]
    const on = out[`${kind}/on`]
    on.bytesVsOff = round(on.bytesPerQuote / off.bytesPerQuote, 3)
    on.cpuVsOff = round(on.cpuUsPerQuote / off.cpuUsPerQuote, 3)
  }
  return { params: pickParams(P), cases: out }
}

/** @param {Record<string, any>} P */
function pickParams (P) {
  return Object.fromEntries(Object.entries(P).filter(([k]) => k.startsWith('compression')))
}

/**
 * One case: connect, subscribe, settle, measure, disconnect.
 *
 * @param {import('../bench-run.js').BenchRun} run
 * @param {import('../servers.js').ServerHandle} gw
 * @param {'merge' | 'distinct'} mode
 * @param {string[]} symbols
 */
async function measure (run, gw, mode, symbols) {
  const P = run.P
  /** @type {Counters} */
  const n = { quotes: 0, frames: 0, bytes: 0, payload: 0, fullPayload: 0, fullDeflated: 0, sampledPayload: 0, sampledQuotes: 0, sampledDeflated: 0, fullDeflatedAll: 0 }
  let counting = false
  let acked = 0
  const sampled = new QuoteReceiver()
  /** @type {WebSocket[]} */
  const sockets = []
  try {
    for (let i = 0; i < P.compressionClients; i++) {
      const ws = new WebSocket(`${gw.url}/ws`, { perMessageDeflate: true })
      const mine = Array.from({ length: P.compressionK }, (_, j) => symbols[(i * P.compressionK + j) % symbols.length])
      const sample = i === 0
      ws.on('message', (data) => {
        const text = String(data)
        const msg = JSON.parse(text)
        if (msg.op === ServerOp.HELLO) ws.send(JSON.stringify({ op: ClientOp.SUB, id: 1, symbols: mine, mode }))
        else if (msg.op === ServerOp.ACK) acked++
        else if (sample && msg.op === ServerOp.SNAP) for (const q of msg.quotes) sampled.snap(q)
        else if (msg.op === ServerOp.QUOTES) {
          if (sample) fullQuotes(sampled, msg.quotes, text, counting ? n : null)
          if (!counting) return
          n.frames++
          n.quotes += msg.quotes.length
          n.payload += Buffer.byteLength(text)
        }
      })
      ws.on('error', () => {})
      sockets.push(ws)
    }
    await waitFor(() => acked >= sockets.length, { timeout: 60_000, message: `${sockets.length} clients subscribed` })
    await sleep(P.compressionSettleMs)
    const read0 = sockets.reduce((a, ws) => a + socketBytes(ws), 0)
    const meter = new CpuMeter(gw.roots)
    const t0 = performance.now()
    counting = true
    await sleep(P.compressionMeasureMs)
    counting = false
    const seconds = (performance.now() - t0) / 1000
    const cores = meter.read()
    n.bytes = sockets.reduce((a, ws) => a + socketBytes(ws), 0) - read0
    const rss = rssMiB(gw.roots()[0])
    const quotes = Math.max(1, n.quotes)
    return {
      negotiated: sockets.every((ws) => ws.extensions === 'permessage-deflate'),
      quotesPerSecond: round(n.quotes / seconds, 0),
      quotesPerFrame: round(n.quotes / Math.max(1, n.frames), 2),
      bytesPerQuote: round(n.bytes / quotes, 2),
      payloadPerQuote: round(n.payload / quotes, 2),
      cpuUsPerQuote: round((cores * seconds * 1e6) / quotes, 3),
      gatewayCores: round(cores, 3),
      rssMiB: rss,
      deflatedAllPerQuote: perSampled(n, n.sampledDeflated),
      fullPayloadPerQuote: perSampled(n, n.fullPayload),
      fullDeflatedPerQuote: perSampled(n, n.fullDeflated),
      fullDeflatedAllPerQuote: perSampled(n, n.fullDeflatedAll)
    }
  } finally {
    for (const ws of sockets) ws.terminate()
    // Let the gateway see the closes before the next case meters it.
    await sleep(500)
  }
}

/**
 * The sampled client: applies the deltas to its held quotes and, while
 * counting, adds what the same `q` frame would weigh with full quotes,
 * plain and deflated as the gateway would (no context takeover: each
 * frame alone; under the threshold: as it is).
 *
 * @param {QuoteReceiver} receiver
 * @param {any[]} deltas
 * @param {string} text the frame as received
 * @param {Counters | null} n null: not counting yet
 */
function fullQuotes (receiver, deltas, text, n) {
  const full = []
  for (const d of deltas) {
    receiver.delta(d)
    const q = receiver.quote(d.symbol)
    if (q) full.push(q)
  }
  if (!n) return
  const frame = JSON.stringify({ op: ServerOp.QUOTES, quotes: full })
  const bytes = Buffer.byteLength(frame)
  const deflated = deflateRawSync(frame, DEFLATE).length
  n.fullPayload += bytes
  n.fullDeflated += bytes < COMPRESS_MIN_BYTES ? bytes : deflated
  n.fullDeflatedAll += deflated
  n.sampledPayload += Buffer.byteLength(text)
  n.sampledDeflated += deflateRawSync(text, DEFLATE).length
  n.sampledQuotes += deltas.length
}

/**
 * @param {Counters} n
 * @param {number} bytes of the sampled client's frames
 */
function perSampled (n, bytes) {
  return n.sampledQuotes ? round(bytes / n.sampledQuotes, 2) : NaN
}

/** @param {WebSocket} ws */
function socketBytes (ws) {
  return /** @type {{_socket?: import('node:net').Socket}} */ (/** @type {unknown} */ (ws))._socket?.bytesRead ?? 0
}

/** @param {number} pid */
function rssMiB (pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8')
    return round(Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024, 1)
  } catch {
    return null
  }
}

/**
 * The section as Markdown (results.md, and docs/benchmarks/compression.md
 * through scripts/compression-report.js).
 *
 * @param {any} c results.compression
 * @returns {string[]}
 */
export function compressionSection (c) {
  if (!c) return []
  if (c.error) return ['## permessage-deflate (compression section)', '', `Failed: ${c.error}`, '']
  const p = c.params
  const out = ['## permessage-deflate (compression section)', '']
  out.push(`Two gateways per kind on the server core, one with \`WSPS_COMPRESSION\` off and one on (no context takeover, 1 KiB server window, frames under ${COMPRESS_MIN_BYTES} B uncompressed), fed by the shared publisher at ${p.compressionRate} quotes/s over ${p.compressionSymbols} symbols; ${p.compressionClients} Node \`ws\` clients, every one asking for permessage-deflate, each subscribed to ${p.compressionK} symbols. Median of ${p.compressionRounds} rounds of ${p.compressionMeasureMs} ms, the cases in a rotating order. **wire B/quote**: bytes the clients' sockets read (frame headers included) per quote delivered; **CPU us/quote**: gateway CPU per quote delivered. The last three columns are computed by one client per case from what it received, not sent: its own frames deflated with every frame compressed (no threshold), and the same updates as frames of full quotes (what a protocol without deltas would send), plain and deflated.`, '')
  out.push('| kind | deflate | negotiated | quotes/frame | quotes/s | wire B/quote | vs off | payload B/quote | CPU us/quote | vs off | gateway RSS MiB | deltas deflated, all frames | full quotes B/quote | full quotes deflated |')
  out.push('| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
  for (const [key, v] of Object.entries(/** @type {Record<string, any>} */ (c.cases))) {
    const [kind, deflate] = key.split('/')
    out.push(`| ${kind} | ${deflate} | ${v.negotiated ? 'yes' : 'no'}${v.negotiatedOk ? '' : ' (unexpected)'} | ${v.quotesPerFrame} | ${v.quotesPerSecond} | ${v.bytesPerQuote} | ${v.bytesVsOff ?? ''} | ${v.payloadPerQuote} | ${v.cpuUsPerQuote} | ${v.cpuVsOff ?? ''} | ${v.rssMiB} | ${v.deflatedAllPerQuote} | ${v.fullPayloadPerQuote} | ${v.fullDeflatedAllPerQuote} |`)
  }
  out.push('')
  return out
}
