// Counting ticks (not subscriptions) at a distinct subscriber: the seq of
// every quote it got, per symbol, in arrival order. seq counts every quote
// published for the symbol, so a hole in it is a tick the subscriber never
// got.

/**
 * Ticks between the first and the newest quote of each symbol that never
 * arrived, and how many did.
 *
 * @param {Map<string, number[]>} seqs
 * @returns {{lost: number, got: number}}
 */
export function ticksLost (seqs) {
  let lost = 0
  let got = 0
  for (const list of seqs.values()) {
    const seen = new Set(list)
    lost += (list.at(-1) ?? 0) - list[0] + 1 - seen.size
    got += seen.size
  }
  return { lost, got }
}

/**
 * Quotes received twice or out of order.
 *
 * @param {Map<string, number[]>} seqs
 */
export function ticksDisordered (seqs) {
  let n = 0
  for (const list of seqs.values()) for (let i = 1; i < list.length; i++) if (list[i] <= list[i - 1]) n++
  return n
}

/**
 * The longest stretch within [from, to] without a quote.
 *
 * @param {readonly number[]} times when quotes arrived, in order
 * @param {number} from
 * @param {number} to
 */
export function longestSilence (times, from, to) {
  const ts = [from, ...times.filter((x) => x > from && x < to), to]
  let worst = 0
  for (let i = 1; i < ts.length; i++) worst = Math.max(worst, ts[i] - ts[i - 1])
  return worst
}
