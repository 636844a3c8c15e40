// What a chaos scenario hands back: figures (measured numbers, some with a
// limit they must stay within) and checks (pass/fail with a detail).

/**
 * @typedef {{scenario?: string, name: string, value: number | string, unit: string, limit?: string, ok?: boolean}} Figure
 * @typedef {{scenario?: string, name: string, ok: boolean, detail: string, knownBug?: string}} Check
 *   knownBug: a reported bug that makes it fail; listed, but not failing the run
 * @typedef {{figures: Figure[], checks: Check[], details: Record<string, unknown>}} ScenarioReport
 */

export class Report {
  constructor () {
    /** @type {Figure[]} */
    this.figures = []
    /** @type {Check[]} */
    this.checks = []
    /** @type {Record<string, unknown>} */
    this.details = {}
  }

  /**
   * @param {string} name
   * @param {number | string} value
   * @param {string} unit
   * @param {{max?: number, min?: number}} [limit] also records a check
   */
  figure (name, value, unit, limit) {
    /** @type {Figure} */
    const f = { name, value: typeof value === 'number' ? Math.round(value * 10) / 10 : value, unit }
    if (limit) {
      const ok = typeof value === 'number' && Number.isFinite(value) &&
        (limit.max === undefined || value <= limit.max) && (limit.min === undefined || value >= limit.min)
      const show = (/** @type {number} */ x) => (Math.round(x * 10) / 10).toLocaleString('en-US')
      f.limit = [limit.min !== undefined ? `>= ${show(limit.min)}` : '', limit.max !== undefined ? `<= ${show(limit.max)}` : ''].filter(Boolean).join(', ')
      f.ok = ok
    }
    this.figures.push(f)
    return this
  }

  /**
   * @param {string} name
   * @param {boolean} ok
   * @param {unknown} [detail]
   * @param {{knownBug?: string}} [options]
   */
  check (name, ok, detail = '', { knownBug } = {}) {
    /** @type {Check} */
    const c = { name, ok: Boolean(ok), detail: typeof detail === 'string' ? detail : JSON.stringify(detail) }
    if (knownBug) c.knownBug = knownBug
    this.checks.push(c)
    return this
  }

  /** @returns {ScenarioReport} */
  toJSON () {
    return { figures: this.figures, checks: this.checks, details: this.details }
  }
}
