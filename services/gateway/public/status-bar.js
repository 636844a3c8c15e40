// The connection line in the header: state word, retry countdown, serving
// node, transport (WebSocket or the SSE fallback) and latency. Only the
// state word is a live region; the countdown ticks every 100 ms and would
// flood a screen reader.

import { formatLatency } from './format.js'

/**
 * @typedef {import('./client/index.js').StatusInfo} StatusInfo
 *
 * @typedef {object} StatusElements
 * @property {HTMLElement} root carries data-state for the colours
 * @property {HTMLElement} state
 * @property {HTMLElement} detail countdown / close reason
 * @property {HTMLElement} node
 * @property {HTMLElement} latency
 * @property {HTMLElement} transport `websocket` or `sse`
 * @property {HTMLButtonElement} reconnect shown while offline
 */

export class StatusBar {
  #els
  /** @type {StatusInfo | null} */
  #status = null
  /** @type {ReturnType<typeof setInterval> | undefined} */
  #countdown

  /** @param {StatusElements} els */
  constructor (els) {
    this.#els = els
  }

  /** @param {StatusInfo} status */
  setStatus (status) {
    this.#status = status
    const { root, state, node, reconnect } = this.#els
    root.dataset.state = status.state
    if (state.textContent !== status.state) state.textContent = status.state
    node.textContent = status.node ?? '—'
    node.classList.toggle('muted', status.state !== 'live')
    this.#els.transport.textContent = status.transport ?? '—'
    this.#els.transport.classList.toggle('muted', status.state !== 'live')
    reconnect.hidden = status.state !== 'offline'
    clearInterval(this.#countdown)
    this.#countdown = undefined
    if (status.state === 'reconnecting' && status.retryAt !== null) {
      this.#countdown = setInterval(() => this.#renderDetail(), 100)
    }
    this.#renderDetail()
  }

  /** @param {number | null} ms */
  setLatency (ms) {
    const text = formatLatency(ms)
    if (this.#els.latency.textContent !== text) this.#els.latency.textContent = text
  }

  #renderDetail () {
    const s = this.#status
    let text = ''
    if (s?.state === 'reconnecting') {
      text = s.retryAt !== null
        ? `in ${(Math.max(0, s.retryAt - Date.now()) / 1000).toFixed(1)} s`
        : 'now…'
      if (s.attempt > 1) text += ` (attempt ${s.attempt})`
    } else if (s?.state === 'offline' && s.closeCode !== null && s.closeCode !== 1000) {
      text = `closed ${s.closeCode}${s.closeReason ? `: ${s.closeReason}` : ''}`
    }
    if (this.#els.detail.textContent !== text) this.#els.detail.textContent = text
  }
}
