// The campaign's report: the faults applied (with times) and the checker's
// figures, as Markdown (printed and written) and JSON (written).

/**
 * @typedef {import('./faults.js').AppliedFault} AppliedFault
 * @typedef {import('./checker.js').TickFigures} TickFigures
 * @typedef {import('./checker.js').Staleness} Staleness
 * @typedef {import('./checker.js').Episode} Episode
 * @typedef {object} CampaignResult
 * @property {{seed: number, durationMs: number, variant: string, provider: string, clients: number, symbols: string[], startedAt: string}} setup
 * @property {AppliedFault[]} faults
 * @property {TickFigures} ticks summed over the clients
 * @property {{id: number, ticks: TickFigures, worst: Staleness | null, nodes: string}[]} clients
 * @property {Staleness | null} worstUntold
 * @property {Record<string, {samples: number, readyWhileCut: number, unreadyWhileLinked: number, readyWhileCutMs: number, unreadyWhileLinkedMs: number}>} readiness
 * @property {{staleFrames: number, freshFrames: number, staleEvents: number, freshEvents: number}} notices
 * @property {(Episode & {faults: string})[]} episodes findings grouped, with the faults in force around their start
 * @property {string[]} failures empty: passed
 */

const secs = (/** @type {number} */ ms) => `${(ms / 1000).toFixed(1)} s`

/** @type {Record<string, (e: Episode) => string>} how an episode's values read */
const VALUE = {
  lostUntold: (e) => `${e.total} ticks`,
  staleAsNews: (e) => `up to ${e.max} ms behind`,
  lateUntold: (e) => `up to ${e.max} ms late`,
  untoldStale: (e) => `up to ${secs(e.max)} untold`
}

/**
 * @param {CampaignResult} r
 * @param {number} t0 the campaign's start (fault times are shown after it)
 * @returns {string}
 */
export function markdown (r, t0) {
  const s = r.setup
  const rel = (/** @type {number | null} */ at) => (at === null ? '-' : `+${((at - t0) / 1000).toFixed(1)} s`)
  const lines = [
    `# Fault campaign, seed ${s.seed}`,
    '',
    `${s.startedAt}: ${secs(s.durationMs)} of faults on the ${s.variant} variant (${s.variant === 'links' ? 'standalone Redis, each service\'s link through its own Toxiproxy proxy' : 'Redis primary + 2 replicas + 3 Sentinels, no proxies'}), ` +
      `fetchers on the ${s.provider} provider, ${s.clients} distinct subscribers of ${s.symbols.length} symbols (${s.symbols.join(', ')}), 2 gateways, 2 fetchers.`,
    '',
    `**Verdict: ${r.failures.length ? `FAILED: ${r.failures.join('; ')}` : 'passed'}**`,
    '',
    '## Faults applied',
    '',
    '| # | fault | target | applied | healed | planned | notes |',
    '|---|---|---|---|---|---|---|',
    ...r.faults.map((f) => `| ${f.plan.id} | ${f.plan.kind}${f.plan.params.skewMs ? ` ${f.plan.params.skewMs > 0 ? '+' : ''}${f.plan.params.skewMs / 1000} s` : ''} | ${f.plan.target} | ${rel(f.appliedAt)} | ${rel(f.healedAt)} | ${secs(f.plan.durationMs)} | ${[...f.notes, ...(f.error ? [`ERROR: ${f.error}`] : [])].join('; ').replace(/\|/g, '/')} |`),
    '',
    '## Figures (every client, every symbol)',
    '',
    '| figure | value | limit |',
    '|---|---|---|',
    `| quotes delivered | ${r.ticks.got} | |`,
    `| lost, told (\`recovered: false\`) | ${r.ticks.lostTold} | |`,
    `| new epochs (history lost, told by the epoch) | ${r.ticks.epochChanges} | |`,
    `| lost, noticed only by the client (its own \`gap\` event) | ${r.ticks.lostNoticed} | |`,
    `| lost, untold | ${r.ticks.lostUntold} | 0 |`,
    `| duplicates | ${r.ticks.duplicates} | 0 |`,
    `| out of order | ${r.ticks.outOfOrder} | 0 |`,
    `| stale as news: ts behind one already delivered | ${r.ticks.staleAsNews}${r.ticks.staleAsNews ? ` (at most ${r.ticks.staleAsNewsMaxMs} ms behind)` : ''} | 0 |`,
    `| stale as news: delivered > 5 s after its ts, not told stale, not a resumption | ${r.ticks.lateUntold} | 0 |`,
    `| longest staleness untold | ${r.worstUntold ? `${secs(r.worstUntold.untoldMs)} (client ${r.clients.find((c) => c.worst === r.worstUntold)?.id ?? '?'}, ${r.worstUntold.s}, a ${secs(r.worstUntold.gapMs)} stretch from ${rel(r.worstUntold.from)})` : 'none over 1 s'} | 5 s |`,
    `| stale / fresh frames received | ${r.notices.staleFrames} / ${r.notices.freshFrames} | |`,
    `| stale / fresh client events | ${r.notices.staleEvents} / ${r.notices.freshEvents} | |`,
    '',
    '## Per client',
    '',
    '| client | quotes | lost told | noticed | untold | dup | out of order | stale as news | late untold | longest untold staleness | last node |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
    ...r.clients.map((c) => `| ${c.id} | ${c.ticks.got} | ${c.ticks.lostTold} | ${c.ticks.lostNoticed} | ${c.ticks.lostUntold} | ${c.ticks.duplicates} | ${c.ticks.outOfOrder} | ${c.ticks.staleAsNews} | ${c.ticks.lateUntold} | ${c.worst ? `${secs(c.worst.untoldMs)} (${c.worst.s} at ${rel(c.worst.from)})` : '-'} | ${c.nodes} |`),
    '',
    '## Readiness against reality (/readyz every 500 ms)',
    '',
    'Ready while cut off: its Redis link silenced or reset, more than 5 s into the fault. Unready while linked: not in a cut of its link nor 10 s after, not in a fault of its own process nor a Redis-wide one (or 10 s after).',
    '',
    '| service | samples | ready while cut off | unready while linked |',
    '|---|---|---|---|',
    ...Object.entries(r.readiness).map(([svc, x]) => `| ${svc} | ${x.samples} | ${x.readyWhileCut} (${secs(x.readyWhileCutMs)}) | ${x.unreadyWhileLinked} (${secs(x.unreadyWhileLinkedMs)}) |`),
    '',
    '## Episodes (findings of one rule within 2 s of each other, every client)',
    '',
    ...(r.episodes.length
      ? ['| rule | from | to | findings | clients | symbols | value | faults in force (or healed < 10 s before) | first |', '|---|---|---|---|---|---|---|---|---|',
        ...r.episodes.slice(0, 80).map((e) => `| ${e.rule} | ${rel(e.from)} | ${rel(e.to)} | ${e.count} | ${e.clients} | ${e.symbols.join(' ')} | ${VALUE[e.rule]?.(e) ?? e.max} | ${e.faults} | ${e.example} |`),
        ...(r.episodes.length > 80 ? [`| ... ${r.episodes.length - 80} more in the JSON | | | | | | | | |`] : [])]
      : ['none']),
    ''
  ]
  return lines.join('\n')
}
