// An OpenTelemetry Collector of our own for tests of the services' traces:
// the distribution of infra/otelcol (tools/tools.sh otelcol), its OTLP/HTTP
// receiver on a free loopback port, its file exporter writing every batch
// to a file in a temp folder, read back as flat spans (otlp-spans.js).

import { accessSync, constants, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from './net.js'
import { parseSpanFile } from './otlp-spans.js'
import { startProcess } from './process.js'
import { waitFor } from './wait.js'

/**
 * The collector to run: $OTELCOL (what `tools/tools.sh env` exports), else
 * the one tools/tools.sh links into $WSPS_CACHE/bin. Not any `otelcol` on
 * PATH: another distribution may lack the file exporter, or read its
 * config differently.
 *
 * @returns {string} its path
 */
export function otelcolBin () {
  const cached = join(process.env.WSPS_CACHE || join(homedir(), '.cache/wsps'), 'bin', 'otelcol')
  const file = process.env.OTELCOL || cached
  try {
    accessSync(file, constants.X_OK)
  } catch {
    throw new Error(`no OpenTelemetry Collector at ${file}: build it with \`tools/tools.sh otelcol\` (make test-integration does)`)
  }
  return file
}

/**
 * The collector's config: OTLP over HTTP only (no gRPC port to collide
 * with another test's), spans to `path`, no metrics server of its own (its
 * default :8888 would), warnings and errors on stderr. JSON is YAML.
 *
 * @param {{port: number, path: string, flushMs: number}} options
 */
function collectorConfig ({ port, path, flushMs }) {
  return {
    receivers: { otlp: { protocols: { http: { endpoint: `127.0.0.1:${port}` } } } },
    exporters: { file: { path, flush_interval: `${flushMs}ms` } },
    service: {
      telemetry: { logs: { level: 'warn' }, metrics: { level: 'none' } },
      pipelines: { traces: { receivers: ['otlp'], exporters: ['file'] } }
    }
  }
}

/**
 * A collector on a free loopback port. `spans()` reads what it has written
 * so far: the file exporter flushes every `flushMs`, so a test polls it
 * (waitFor) for the spans it expects.
 *
 * @param {{flushMs?: number}} [options]
 */
export async function startCollector ({ flushMs = 100 } = {}) {
  const bin = otelcolBin()
  const dir = mkdtempSync(join(tmpdir(), 'wsps-otelcol-'))
  const path = join(dir, 'spans.jsonl')
  const port = await freePort()
  const tracesUrl = `http://127.0.0.1:${port}/v1/traces`
  writeFileSync(join(dir, 'config.yaml'), JSON.stringify(collectorConfig({ port, path, flushMs }), null, 2))
  const child = startProcess(bin, [`--config=${join(dir, 'config.yaml')}`], { name: `otelcol ${port}` })
  const close = async () => {
    await child.stop('SIGTERM', { killAfterMs: 5000 })
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    // Up once the receiver answers an empty export (no spans: nothing written).
    await waitFor(async () => {
      if (!child.alive) throw new Error(`otelcol exited: ${child.logs.join('\n')}`)
      const res = await fetch(tracesUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}', signal: AbortSignal.timeout(2000) })
      await res.arrayBuffer()
      return res.ok
    }, { timeout: 15_000, interval: 100, message: `otelcol's OTLP/HTTP receiver on ${port}` })
  } catch (err) {
    await close()
    throw err
  }
  return {
    /** Where a service sends its spans (WSPS_OTLP_TRACES_URL). */
    tracesUrl,
    /** The span file (one OTLP JSON export request per line). */
    path,
    get pid () { return child.alive ? child.pid : 0 },
    /** Its last log lines (warnings and errors). */
    get logs () { return child.logs },
    /**
     * Every span written so far, flat (otlp-spans.js's Span).
     *
     * @returns {import('./otlp-spans.js').Span[]}
     */
    spans () {
      let text = ''
      try {
        text = readFileSync(path, 'utf8')
      } catch (err) {
        if (/** @type {NodeJS.ErrnoException} */ (err).code !== 'ENOENT') throw err
      }
      return parseSpanFile(text)
    },
    /** Stops it (the exporter flushes what it holds) and removes its folder. */
    close
  }
}

/** @typedef {Awaited<ReturnType<typeof startCollector>>} CollectorHandle */
