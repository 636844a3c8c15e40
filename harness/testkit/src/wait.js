// Waiting in tests and tools: a sleep, and a poll of a condition with a
// deadline whose timeout message names what was awaited.

/** @param {number} ms */
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Calls `check` every `interval` ms until it returns something truthy (that
 * value is returned) or `timeout` ms have passed (then it throws, quoting the
 * last value or error). A `check` that throws is tried again.
 *
 * @param {() => unknown | Promise<unknown>} check returns truthy when done
 * @param {{timeout?: number, interval?: number, message?: string}} [options]
 */
export async function waitFor (check, { timeout = 10_000, interval = 50, message = 'condition' } = {}) {
  const end = Date.now() + timeout
  let last
  for (;;) {
    try {
      last = await check()
      if (last) return last
    } catch (err) {
      last = err
    }
    if (Date.now() > end) throw new Error(`timed out after ${timeout} ms waiting for ${message} (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`)
    await sleep(interval)
  }
}
