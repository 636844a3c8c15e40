// Issue #28 item 4: hostile input through the cluster's ingress. The local
// hostile-input cases (harness/testkit/src/hostile-cases.js: frames over
// maxPayload, RFC 6455 violations, floods of invalid frames, messages and
// subscriptions, oversized and malformed upgrades, an SSE request over the
// limit) and a slow handshake go through the ingress to the gateways while
// the e2e's well-behaved host clients (fleet.mjs) stay subscribed. Every case
// must end as promised (its close code or HTTP status), and the well-behaved
// clients must see no gap, no close and keep getting ticks.
// Called from infra/e2e/e2e.mjs while the ingress (Traefik) serves the fleet.
import { TestClient } from '../../harness/testkit/src/test-client.js'
import { hostileCases, runHostileCases, slowHandshake } from '../../harness/testkit/src/hostile-cases.js'

/**
 * What the e2e lends this module.
 * @typedef {{
 *   fleet: import('./fleet.mjs').Fleet,
 *   port: number,
 *   host: string,
 *   via: string,
 *   until: <T>(what: string, timeoutMs: number, check: () => T | Promise<T>, everyMs?: number) => Promise<any>,
 *   log: (msg: string) => void,
 *   fail: (msg: string) => never
 * }} HostileContext
 */

// A proxy holds a trickled request until its own read timeout (Traefik v3's
// entrypoint default: 60 s), not the gateway's 10 s headersTimeout: the
// gateway never sees it. Cut off by then, plus margin.
const SLOW_LIMIT_MS = 90_000

/** @param {import('./fleet.mjs').Fleet} fleet */
const closes = (fleet) => Object.values(fleet.closes).reduce((a, b) => a + b, 0)

/**
 * @param {HostileContext} ctx
 * @returns {Promise<string>} the report line
 */
export async function checkHostileInput (ctx) {
  // The limits the cases are sized by, as the gateways announce them.
  const probe = await TestClient.connect(`ws://127.0.0.1:${ctx.port}/ws`, { headers: { host: ctx.host }, handshakeTimeout: 10_000 })
  const { maxPayload, maxSubscriptions } = probe.hello.limits
  probe.ws.terminate()
  const target = { port: ctx.port, host: ctx.host, maxPayload, maxSubscriptions }

  const live = ctx.fleet.clients.filter((c) => c.ws && c.snapAt)
  const before = { totals: ctx.fleet.totals(live), closes: closes(ctx.fleet) }
  const t0 = Date.now()
  const slow = slowHandshake(target, SLOW_LIMIT_MS)
  const direct = hostileCases.filter((c) => c.direct)
  const results = await runHostileCases(target, hostileCases.filter((c) => !c.direct))
  for (const r of results) ctx.log(`  ${r.ok ? 'ok' : 'BROKEN'}: ${r.name} -> ${r.got}${r.ok ? '' : ` (promised: ${r.expect})`}`)
  const slowMs = await slow
  ctx.log(`  slow handshake (a header byte every 500 ms): ${slowMs === null ? `still open after ${SLOW_LIMIT_MS / 1000} s` : `cut off after ${(slowMs / 1000).toFixed(1)} s`}`)
  const tEnd = Date.now()

  // The well-behaved clients went on: a tick for each after the last case.
  await ctx.until('every well-behaved client to get a tick after the hostile cases', 60_000, () => {
    const behind = live.filter((c) => c.lastUpdateAt <= tEnd)
    return behind.length === 0 || `${behind.length}/${live.length} without a tick since the cases ended`
  }, 500)
  const after = { totals: ctx.fleet.totals(live), closes: closes(ctx.fleet) }
  const gaps = after.totals.gaps - before.totals.gaps
  const wrong = after.totals.wrong - before.totals.wrong
  const closed = after.closes - before.closes
  const updates = after.totals.updates - before.totals.updates

  const broken = results.filter((r) => !r.ok).map((r) => `${r.name}: got ${r.got}, promised ${r.expect}`)
  if (slowMs === null) broken.push(`a slow handshake was still open after ${SLOW_LIMIT_MS / 1000} s`)
  if (gaps || wrong || closed) broken.push(`the ${live.length} well-behaved clients saw ${gaps} gaps, ${wrong} wrong quotes, ${closed} closes`)
  if (broken.length) ctx.fail(`hostile input through the ${ctx.via}: ${broken.join('; ')}`)

  /** @type {Map<string, string[]>} names by outcome */
  const byOutcome = new Map()
  for (const r of results) byOutcome.set(r.got, [...(byOutcome.get(r.got) ?? []), r.name])
  const outcomes = [...byOutcome].map(([got, names]) => `${names.join(', ')}: ${got}`).join('; ')
  return `hostile input through the ${ctx.via} (127.0.0.1:${ctx.port}): ${results.length} cases as promised (${outcomes}); ` +
    `not sent through a proxy: ${direct.map((c) => c.name).join(', ')}; ` +
    `a slow handshake cut off after ${(/** @type {number} */ (slowMs) / 1000).toFixed(0)} s; meanwhile ${live.length} well-behaved clients: ${gaps} gaps, ${closed} closes, ${updates} updates, each ticked after the last case (${((tEnd - t0) / 1000).toFixed(0)} s of cases)`
}
