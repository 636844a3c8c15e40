// What `wsps tail` shows on a terminal, redrawn in place: the lines of its
// view (a quote table, book ladders), then the connection's status and the
// last few notes. Redraws are coalesced (at most one per REDRAW_MS); lines a
// shorter view no longer uses are cleared.

/** @typedef {import('./io.js').Io} Io */

const REDRAW_MS = 200
const NOTES = 5

export class Screen {
  #io
  #view
  #status = 'connecting'
  /** @type {string[]} */
  #notes = []
  /** @type {NodeJS.Timeout | null} */
  #timer = null
  #drawn = 0

  /**
   * @param {Io} io
   * @param {() => string[]} view the lines above the status, as they are now
   */
  constructor (io, view) {
    this.#io = io
    this.#view = view
    this.draw()
  }

  /** @param {string} line the status line */
  status (line) {
    this.#status = line
    this.soon()
  }

  /** @param {string} line kept among the last few */
  note (line) {
    this.#notes.push(line)
    if (this.#notes.length > NOTES) this.#notes.shift()
    this.soon()
  }

  /** A redraw within REDRAW_MS (one for many changes). */
  soon () {
    this.#timer ??= setTimeout(() => { this.#timer = null; this.draw() }, REDRAW_MS)
  }

  /** The last redraw, now. */
  end () {
    if (this.#timer !== null) clearTimeout(this.#timer)
    this.#timer = null
    this.draw()
  }

  draw () {
    const lines = [...this.#view(), this.#status, ...this.#notes]
    // Back to the first line, then each line cleared and rewritten.
    const up = this.#drawn ? `\x1b[${this.#drawn}F` : ''
    const blank = Math.max(0, this.#drawn - lines.length)
    this.#io.out.write(up + lines.map((l) => `\x1b[2K${l}\n`).join('') + '\x1b[2K\n'.repeat(blank))
    this.#drawn = lines.length + blank
  }
}
