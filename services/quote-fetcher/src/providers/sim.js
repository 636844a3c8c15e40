// A simulated market: each symbol follows a seeded random walk with a
// spread, sizes, volume and a day range. Every step is a pure function of
// (seed, symbol, seq, previous quote), so whichever replica fetches a symbol
// continues the same path, and a seed replays the same market.

/** 32-bit FNV-1a. @param {string} s */
export function hash (s) {
  let h = 0x811c9dc5
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return h >>> 0
}

/** mulberry32: small, fast, good enough for a simulation. @param {number} seed */
export function prng (seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** @param {() => number} rand */
function gaussian (rand) {
  const u = Math.max(rand(), 1e-12)
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rand())
}

/** Prices under $1 get 4 decimals, others 2 (like US equities). @param {number} p */
function tick (p) {
  return p < 1 ? 0.0001 : 0.01
}

/**
 * Rounds to a whole number of ticks, never to zero.
 * @param {number} p
 * @param {number} t
 */
function roundTo (p, t) {
  return Number((Math.round(p / t) * t).toFixed(t < 0.01 ? 4 : 2)) || t
}

/**
 * @param {{seed: number, volatility: number, now?: () => number}} options
 * @returns {import('./provider.js').Provider}
 */
export function createSimProvider ({ seed, volatility, now = Date.now }) {
  /**
   * @param {string} symbol
   * @param {(import('./provider.js').QuoteFields & {seq: number}) | undefined} prev
   * @returns {import('./provider.js').QuoteFields}
   */
  function step (symbol, prev) {
    const nextSeq = (prev?.seq ?? 0) + 1
    const rand = prng(hash(`${seed}:${symbol}:${nextSeq}`))
    const ts = now()
    if (!prev || prev.last === undefined || prev.bid === undefined || prev.ask === undefined) {
      const r0 = prng(hash(`${seed}:${symbol}`))
      const price = roundTo(5 + r0() * 495, 0.01)
      const spread = Math.max(0.01, roundTo(price * 0.0004, 0.01))
      return {
        symbol, ts,
        bid: roundTo(price - spread / 2, 0.01), ask: roundTo(price - spread / 2 + spread, 0.01), last: price,
        bidSize: 100 * (1 + Math.floor(r0() * 20)), askSize: 100 * (1 + Math.floor(r0() * 20)),
        volume: 0, open: price, high: price, low: price, prevClose: roundTo(price * (1 + gaussian(r0) * 0.01), 0.01)
      }
    }
    const q = { ...prev, ts }
    const t = tick(prev.last)
    const event = rand()
    if (event < 0.55) {
      // A trade moves the price.
      const last = roundTo(prev.last * Math.exp(volatility * gaussian(rand)), t)
      const spread = Math.max(t, roundTo(last * (0.0002 + rand() * 0.0004), t))
      q.last = last
      q.bid = roundTo(last - spread * rand(), t)
      q.ask = roundTo(Math.max(q.bid + t, q.bid + spread), t)
      q.volume = (prev.volume ?? 0) + 100 * (1 + Math.floor(rand() * 50))
      q.high = Math.max(prev.high ?? last, last)
      q.low = Math.min(prev.low ?? last, last)
    } else {
      // The book moves without a trade: sizes, sometimes a price level.
      q.bidSize = 100 * (1 + Math.floor(rand() * 20))
      q.askSize = 100 * (1 + Math.floor(rand() * 20))
      if (rand() < 0.3) q.bid = roundTo(Math.min(prev.bid + (rand() < 0.5 ? -t : t), prev.ask - t), t)
    }
    delete /** @type {any} */ (q).seq
    return q
  }

  return {
    name: 'sim',
    needsPrevious: true,
    async fetch (symbols, previous) {
      return symbols.map((s) => step(s, previous.get(s)))
    }
  }
}
