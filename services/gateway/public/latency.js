// End-to-end latency estimate: now - quote.ts over recent ticks. The median
// shrugs off the odd slow frame (GC, a busy tab), unlike a mean.

export class LatencyMeter {
  /** @type {number[]} */
  #samples = []
  #size

  /** @param {number} [size] samples kept */
  constructor (size = 32) {
    this.#size = size
  }

  /** @param {number} ms */
  add (ms) {
    if (!Number.isFinite(ms)) return
    this.#samples.push(ms)
    if (this.#samples.length > this.#size) this.#samples.shift()
  }

  clear () {
    this.#samples = []
  }

  /** @returns {number | null} */
  median () {
    const n = this.#samples.length
    if (n === 0) return null
    const sorted = [...this.#samples].sort((a, b) => a - b)
    return n % 2 ? sorted[(n - 1) / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2
  }
}
