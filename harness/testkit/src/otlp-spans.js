// The one reader of the collector's span file: the file exporter
// (infra/otelcol) writes each batch it receives as one line of OTLP JSON, an
// ExportTraceServiceRequest ({resourceSpans: [{resource, scopeSpans: [{spans}]}]}).
// Read here into flat spans, the shape the trace checks work on
// (trace-chain.js); the testkit's collector and the e2e both read it so.

/**
 * A span as the checks see it. Ids are the lowercase hex of OTLP JSON;
 * parentSpanId is '' for a root.
 *
 * @typedef {object} Span
 * @property {string} traceId
 * @property {string} spanId
 * @property {string} parentSpanId
 * @property {string} name
 * @property {string} service its resource's service.name ('' without one)
 * @property {Record<string, unknown>} attributes plain JS values (see attributeValue)
 * @property {number} startMs start, ms since the epoch (µs kept as the fraction)
 * @property {number} durationMs end minus start
 */

/**
 * An OTLP AnyValue as a JS value. intValue is a decimal string in OTLP JSON
 * (64 bits do not fit a JSON number): a number when it is a safe integer,
 * else a BigInt. bytesValue (base64) stays a string.
 *
 * @param {any} v
 * @returns {unknown}
 */
export function attributeValue (v) {
  if (!v || typeof v !== 'object') return undefined
  if ('stringValue' in v) return v.stringValue
  if ('boolValue' in v) return v.boolValue
  if ('intValue' in v) {
    const n = Number(v.intValue)
    return Number.isSafeInteger(n) ? n : BigInt(v.intValue)
  }
  if ('doubleValue' in v) return Number(v.doubleValue)
  if ('arrayValue' in v) return (v.arrayValue.values ?? []).map(attributeValue)
  if ('kvlistValue' in v) return attributeMap(v.kvlistValue.values)
  if ('bytesValue' in v) return v.bytesValue
  return undefined
}

/**
 * @param {{key: string, value: any}[] | undefined} list OTLP KeyValue list
 * @returns {Record<string, unknown>}
 */
export function attributeMap (list) {
  /** @type {Record<string, unknown>} */
  const out = {}
  for (const kv of list ?? []) out[kv.key] = attributeValue(kv.value)
  return out
}

/** @param {string | number | undefined} nanos OTLP's fixed64 as a decimal string */
const toMs = (nanos) => {
  const n = BigInt(nanos ?? 0)
  return Number(n / 1000n) / 1000
}

/**
 * Every span of one ExportTraceServiceRequest.
 *
 * @param {any} request parsed OTLP JSON
 * @returns {Span[]}
 */
export function requestSpans (request) {
  /** @type {Span[]} */
  const spans = []
  for (const rs of request?.resourceSpans ?? []) {
    const service = String(attributeMap(rs.resource?.attributes)['service.name'] ?? '')
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        const startMs = toMs(s.startTimeUnixNano)
        spans.push({
          traceId: s.traceId ?? '',
          spanId: s.spanId ?? '',
          parentSpanId: s.parentSpanId ?? '',
          name: s.name ?? '',
          service,
          attributes: attributeMap(s.attributes),
          startMs,
          durationMs: toMs(s.endTimeUnixNano) - startMs
        })
      }
    }
  }
  return spans
}

/**
 * The spans of a span file's text. The exporter writes through a 4 KB
 * buffer flushed on its interval, so the text may end inside a batch: a
 * last line without its newline counts only if it parses (else the next
 * read has it whole). Any other line that does not parse is an error.
 *
 * @param {string} text
 * @returns {Span[]}
 */
export function parseSpanFile (text) {
  const lines = text.split('\n')
  const partial = lines.pop() // '' when the text ends with a newline
  /** @type {Span[]} */
  const spans = []
  lines.forEach((line, i) => {
    if (!line.trim()) return
    let request
    try {
      request = JSON.parse(line)
    } catch (err) {
      throw new Error(`span file line ${i + 1} is not JSON (${/** @type {Error} */ (err).message}): ${line.slice(0, 120)}`)
    }
    spans.push(...requestSpans(request))
  })
  if (partial?.trim()) {
    try { spans.push(...requestSpans(JSON.parse(partial))) } catch {}
  }
  return spans
}
