// The campaign's checker: pure functions over what each client recorded
// (the testkit's RecordingSubscriber) and what the nemesis did (faults.js's log). Nothing here
// looks at a clock or a socket, so each rule is unit-tested on synthetic
// histories (test/checker.test.js).

/**
 * One client's history, in the order its events happened: quotes,
 * `recovery`, `gap`, `status`, `stale` and `fresh` (their shape:
 * harness/testkit/src/recording-subscriber.js).
 *
 * @typedef {import('../../testkit/src/recording-subscriber.js').Ev} Ev
 */

/**
 * @typedef {object} TickFigures
 * @property {number} got quotes delivered
 * @property {number} lostTold ticks missing within an epoch after a `recovered: false`
 * @property {number} lostNoticed ticks missing after the client's own `gap` event (the server said nothing; the client saw it)
 * @property {number} lostUntold ticks missing that nobody told
 * @property {number} epochChanges new epochs (each tells the client its history was lost)
 * @property {number} duplicates an (epoch, seq) delivered again
 * @property {number} outOfOrder a seq below the newest already delivered (not a duplicate), or an old epoch back
 * @property {number} staleAsNews a newer tick (higher seq or new epoch) whose ts is older than a ts already delivered
 * @property {number} staleAsNewsMaxMs the largest such step back in ts
 * @property {number} lateUntold ticks that arrived more than `lateMs` after their ts, not told stale, not part of a resumption
 */

/** @typedef {{rule: string, s: string, at: number, value: number, detail: string, client?: number}} Finding value: ticks lost, ms behind, ms late (1 for a duplicate or reordering) */

/** @returns {TickFigures} */
export function emptyTicks () {
  return { got: 0, lostTold: 0, lostNoticed: 0, lostUntold: 0, epochChanges: 0, duplicates: 0, outOfOrder: 0, staleAsNews: 0, staleAsNewsMaxMs: 0, lateUntold: 0 }
}

/**
 * Per symbol, in delivery order: holes in seq within one epoch (told by a
 * `recovery {recovered: false}` since the last tick, noticed by the client's
 * own `gap` event, or untold), duplicates, reordering, ts going backwards
 * across newer ticks ("stale as news"), and ticks delivered more than
 * `lateMs` after their ts while the client held no `stale` notice for the
 * symbol and was not resuming (within `replayGraceMs` after a `recovery`,
 * a `fresh` of the symbol or the connection going live: a backfill is late
 * by design, and the client was told it is one).
 *
 * @param {Ev[]} events one client's history
 * @param {{lateMs?: number, replayGraceMs?: number}} [options]
 * @returns {{figures: TickFigures, findings: Finding[]}}
 */
export function checkTicks (events, { lateMs = 5000, replayGraceMs = 2000 } = {}) {
  const figures = emptyTicks()
  /** @type {Finding[]} */
  const findings = []
  /** @type {Map<string, {ep: string, epochs: Set<string>, seen: Set<number>, last: number, maxTs: number, told: '' | 'rec' | 'gap', resumedAt: number}>} */
  const bySym = new Map()
  /** @type {Set<string>} symbols under a stale notice */
  const stale = new Set()
  let liveAt = -Infinity
  for (const e of events) {
    if (e.k === 'status') {
      if (e.state === 'live') liveAt = e.at
      else stale.clear()
      continue
    }
    if (e.k === 'stale') { for (const s of e.syms) stale.add(s); continue }
    if (e.k === 'fresh') {
      for (const s of e.syms) {
        stale.delete(s)
        const st = bySym.get(s)
        if (st) st.resumedAt = e.at
      }
      continue
    }
    if (e.k === 'rec' || e.k === 'gap') {
      const st = bySym.get(e.s)
      if (!st) continue
      if (e.k === 'rec') st.resumedAt = e.at
      if (e.k === 'rec' && !e.ok) st.told = 'rec'
      else if (e.k === 'gap' && st.told === '') st.told = 'gap'
      continue
    }
    if (e.k !== 'q') continue
    figures.got++
    let st = bySym.get(e.s)
    let newer = false
    if (!st) {
      st = { ep: e.ep, epochs: new Set([e.ep]), seen: new Set([e.seq]), last: e.seq, maxTs: e.ts, told: '', resumedAt: -Infinity }
      bySym.set(e.s, st)
      newer = true
    } else if (e.ep !== st.ep) {
      if (st.epochs.has(e.ep)) {
        figures.outOfOrder++
        findings.push({ rule: 'outOfOrder', s: e.s, at: e.at, value: 1, detail: `epoch ${e.ep} came back after ${st.ep} (seq ${e.seq})` })
      } else {
        figures.epochChanges++
        st.epochs.add(e.ep)
        st.ep = e.ep
        st.seen = new Set([e.seq])
        st.last = e.seq
        newer = true
      }
    } else if (st.seen.has(e.seq)) {
      figures.duplicates++
      findings.push({ rule: 'duplicate', s: e.s, at: e.at, value: 1, detail: `seq ${e.seq} of epoch ${e.ep} again (newest ${st.last})${e.snap ? ' in a snapshot' : ''}` })
    } else if (e.seq < st.last) {
      figures.outOfOrder++
      st.seen.add(e.seq)
      findings.push({ rule: 'outOfOrder', s: e.s, at: e.at, value: 1, detail: `seq ${e.seq} after ${st.last}` })
    } else {
      const hole = e.seq - st.last - 1
      if (hole > 0) {
        if (st.told === 'rec') figures.lostTold += hole
        else if (st.told === 'gap') figures.lostNoticed += hole
        else {
          figures.lostUntold += hole
          findings.push({ rule: 'lostUntold', s: e.s, at: e.at, value: hole, detail: `${hole} ticks between seq ${st.last} and ${e.seq}${e.snap ? ' (a snapshot, recovered not false)' : ''}` })
        }
      }
      st.seen.add(e.seq)
      st.last = e.seq
      newer = true
    }
    if (!newer) continue
    st.told = ''
    if (e.ts < st.maxTs) {
      figures.staleAsNews++
      figures.staleAsNewsMaxMs = Math.max(figures.staleAsNewsMaxMs, st.maxTs - e.ts)
      findings.push({ rule: 'staleAsNews', s: e.s, at: e.at, value: st.maxTs - e.ts, detail: `seq ${e.seq} with ts ${st.maxTs - e.ts} ms older than one already delivered` })
    }
    st.maxTs = Math.max(st.maxTs, e.ts)
    const resuming = e.at - Math.max(st.resumedAt, liveAt) <= replayGraceMs
    if (e.at - e.ts > lateMs && !stale.has(e.s) && !resuming) {
      figures.lateUntold++
      findings.push({ rule: 'lateUntold', s: e.s, at: e.at, value: e.at - e.ts, detail: `seq ${e.seq} delivered ${e.at - e.ts} ms after its ts, not told stale` })
    }
  }
  return { figures, findings }
}

/**
 * @param {[number, number][]} intervals
 * @param {number} a
 * @param {number} b
 * @returns {number} how much of [a, b] their union covers
 */
export function covered (intervals, a, b) {
  const cut = intervals.map(([x, y]) => /** @type {[number, number]} */ ([Math.max(x, a), Math.min(y, b)])).filter(([x, y]) => y > x).sort((p, q) => p[0] - q[0])
  let total = 0
  let end = -Infinity
  for (const [x, y] of cut) {
    if (y <= end) continue
    total += y - Math.max(x, end)
    end = y
  }
  return total
}

/**
 * @typedef {object} Staleness
 * @property {string} s
 * @property {number} from last tick before the stretch
 * @property {number} to next tick (or the end)
 * @property {number} gapMs to - from
 * @property {number} untoldMs the part not covered by a stale notice nor by the client's disconnection
 */

/**
 * The longest stretches each subscribed symbol got no tick, minus the parts
 * the client knew about: covered by a `stale` notice (from its arrival
 * until a `fresh` naming the symbol or the connection's end) or by the
 * client's own disconnection (status not live). A stretch counts from the
 * symbol's first tick on; the last one runs to `endAt`.
 *
 * @param {Ev[]} events one client's history
 * @param {{endAt: number, minGapMs?: number}} options stretches shorter than minGapMs are the normal pace
 * @returns {{worst: Staleness | null, stretches: Staleness[]}} stretches longer than minGapMs, worst by untoldMs
 */
export function untoldStaleness (events, { endAt, minGapMs = 1000 }) {
  /** @type {[number, number][]} */
  const down = []
  /** @type {Map<string, [number, number][]>} */
  const told = new Map()
  /** @type {Map<string, number>} stale notice since */
  const open = new Map()
  /** @type {Map<string, number[]>} */
  const ticks = new Map()
  let downFrom = /** @type {number | null} */ (null)
  /** @param {string} s @param {number} to */
  const close = (s, to) => {
    const from = open.get(s)
    if (from === undefined) return
    open.delete(s)
    const list = told.get(s) ?? []
    list.push([from, to])
    told.set(s, list)
  }
  for (const e of events) {
    if (e.k === 'q') {
      const list = ticks.get(e.s) ?? []
      list.push(e.at)
      ticks.set(e.s, list)
    } else if (e.k === 'status') {
      if (e.state === 'live') {
        if (downFrom !== null) down.push([downFrom, e.at])
        downFrom = null
      } else if (downFrom === null) {
        downFrom = e.at
        for (const s of [...open.keys()]) close(s, e.at)
      }
    } else if (e.k === 'stale') {
      for (const s of e.syms) if (!open.has(s)) open.set(s, e.at)
    } else if (e.k === 'fresh') {
      for (const s of e.syms) close(s, e.at)
    }
  }
  if (downFrom !== null) down.push([downFrom, endAt])
  for (const s of [...open.keys()]) close(s, endAt)
  /** @type {Staleness[]} */
  const stretches = []
  for (const [s, list] of ticks) {
    const cover = [...down, ...(told.get(s) ?? [])]
    for (let i = 0; i < list.length; i++) {
      const from = list[i]
      const to = i + 1 < list.length ? list[i + 1] : endAt
      if (to - from <= minGapMs) continue
      stretches.push({ s, from, to, gapMs: to - from, untoldMs: to - from - covered(cover, from, to) })
    }
  }
  stretches.sort((a, b) => b.untoldMs - a.untoldMs)
  return { worst: stretches[0] ?? null, stretches }
}

/**
 * @typedef {{service: string, at: number, ready: boolean | null}} ReadySample null: the process was not running (killed, drained, paused)
 * @typedef {{service: string, from: number, to: number, kind: string}} Window
 */

/**
 * Readiness against reality, per service: samples where /readyz said ready
 * while its Redis link was cut off (a silence or reset of its link, more
 * than `detectGraceMs` into the fault: the product's own deadline to
 * notice), and samples where it said unready while its link was fine (not
 * within a cut, nor `recoverGraceMs` after one ended, nor in one of its
 * own process faults or a Redis-wide one: `own` windows).
 *
 * @param {ReadySample[]} samples
 * @param {Window[]} cuts link cut off
 * @param {Window[]} own the process itself was down, paused, restarting, or Redis as a whole failed over
 * @param {{sampleMs?: number, detectGraceMs?: number, recoverGraceMs?: number}} [options]
 * @returns {Record<string, {samples: number, readyWhileCut: number, unreadyWhileLinked: number, readyWhileCutMs: number, unreadyWhileLinkedMs: number}>}
 */
export function readiness (samples, cuts, own, { sampleMs = 500, detectGraceMs = 5000, recoverGraceMs = 10_000 } = {}) {
  /** @type {Record<string, {samples: number, readyWhileCut: number, unreadyWhileLinked: number, readyWhileCutMs: number, unreadyWhileLinkedMs: number}>} */
  const out = {}
  const inside = (/** @type {Window[]} */ ws, /** @type {string} */ svc, /** @type {number} */ at, /** @type {number} */ before, /** @type {number} */ after) =>
    ws.some((w) => (w.service === svc || w.service === '*') && at >= w.from + before && at <= w.to + after)
  for (const x of samples) {
    const r = (out[x.service] ??= { samples: 0, readyWhileCut: 0, unreadyWhileLinked: 0, readyWhileCutMs: 0, unreadyWhileLinkedMs: 0 })
    r.samples++
    if (x.ready === null) continue
    if (x.ready && inside(cuts, x.service, x.at, detectGraceMs, 0)) r.readyWhileCut++
    if (!x.ready && !inside(cuts, x.service, x.at, 0, recoverGraceMs) && !inside(own, x.service, x.at, 0, recoverGraceMs)) r.unreadyWhileLinked++
  }
  for (const r of Object.values(out)) {
    r.readyWhileCutMs = r.readyWhileCut * sampleMs
    r.unreadyWhileLinkedMs = r.unreadyWhileLinked * sampleMs
  }
  return out
}

/**
 * @typedef {object} Totals
 * @property {TickFigures} ticks summed over every client
 * @property {number} worstUntoldStaleMs
 */

/**
 * The reasons the campaign fails (empty: it passed).
 *
 * @param {Totals} t
 * @param {{maxUntoldStaleMs?: number}} [options]
 * @returns {string[]}
 */
export function verdict (t, { maxUntoldStaleMs = 5000 } = {}) {
  const why = []
  if (t.ticks.lostUntold > 0) why.push(`${t.ticks.lostUntold} ticks lost untold`)
  if (t.ticks.duplicates > 0) why.push(`${t.ticks.duplicates} duplicates`)
  if (t.ticks.outOfOrder > 0) why.push(`${t.ticks.outOfOrder} out of order`)
  if (t.ticks.staleAsNews > 0) why.push(`${t.ticks.staleAsNews} stale ticks delivered as news (ts behind one already delivered)`)
  if (t.ticks.lateUntold > 0) why.push(`${t.ticks.lateUntold} stale ticks delivered as news (more than 5 s old, not told stale)`)
  if (t.worstUntoldStaleMs > maxUntoldStaleMs) why.push(`a client went ${(t.worstUntoldStaleMs / 1000).toFixed(1)} s without ticks, untold (limit ${maxUntoldStaleMs / 1000} s)`)
  return why
}

/**
 * @param {TickFigures[]} list
 * @returns {TickFigures}
 */
export function sumTicks (list) {
  const out = emptyTicks()
  for (const f of list) {
    for (const k of /** @type {(keyof TickFigures)[]} */ (Object.keys(out))) out[k] = k.endsWith('MaxMs') ? Math.max(out[k], f[k]) : out[k] + f[k]
  }
  return out
}

/**
 * @typedef {object} Episode findings of one rule close together in time, across clients and symbols
 * @property {string} rule
 * @property {number} from first finding
 * @property {number} to last finding
 * @property {number} count findings
 * @property {number} clients distinct clients
 * @property {string[]} symbols
 * @property {number} total sum of their values (ticks lost)
 * @property {number} max largest value (ms behind or late)
 * @property {string} example the first finding's detail
 */

/**
 * Groups findings into episodes: per rule, a finding more than `gapMs`
 * after the previous one starts a new episode.
 *
 * @param {Finding[]} findings
 * @param {{gapMs?: number}} [options]
 * @returns {Episode[]} by start time
 */
export function episodes (findings, { gapMs = 2000 } = {}) {
  /** @type {Episode[]} */
  const out = []
  /** @type {Map<string, {e: Episode, clients: Set<number | undefined>, symbols: Set<string>}>} */
  const open = new Map()
  for (const f of [...findings].sort((a, b) => a.at - b.at)) {
    let cur = open.get(f.rule)
    if (!cur || f.at - cur.e.to > gapMs) {
      cur = { e: { rule: f.rule, from: f.at, to: f.at, count: 0, clients: 0, symbols: [], total: 0, max: 0, example: f.detail }, clients: new Set(), symbols: new Set() }
      open.set(f.rule, cur)
      out.push(cur.e)
    }
    const { e } = cur
    e.to = f.at
    e.count++
    e.total += f.value
    e.max = Math.max(e.max, f.value)
    cur.clients.add(f.client)
    cur.symbols.add(f.s)
    e.clients = cur.clients.size
    e.symbols = [...cur.symbols].sort()
  }
  return out.sort((a, b) => a.from - b.from)
}
