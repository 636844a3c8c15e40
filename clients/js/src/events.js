// Listeners by event type. A listener that throws does not break the
// caller: its error is re-thrown from a separate task, the way an uncaught
// error in an event handler is reported.

/** @template {Record<string, any>} E event type -> detail */
export class Emitter {
  /** @type {Map<keyof E, Set<Function>>} */
  #listeners = new Map()

  /**
   * Listens to an event; returns a function that stops listening.
   * @template {keyof E} K
   * @param {K} type
   * @param {(detail: E[K]) => void} listener
   * @returns {() => void}
   */
  on (type, listener) {
    let set = this.#listeners.get(type)
    if (!set) this.#listeners.set(type, set = new Set())
    set.add(listener)
    return () => { set.delete(listener) }
  }

  /**
   * @template {keyof E} K
   * @param {K} type
   * @param {E[K]} detail
   */
  emit (type, detail) {
    const set = this.#listeners.get(type)
    if (!set) return
    for (const fn of [...set]) {
      try {
        fn(detail)
      } catch (err) {
        // A broken listener must not break the connection state machine.
        setTimeout(() => { throw err })
      }
    }
  }
}
