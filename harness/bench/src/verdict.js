// What the windows measured at one rate decide: pass, fail, one more window,
// or not measurable because the host itself stalled in every one of them.

import { HICCUP_LIMIT_MS, MAX_WINDOWS } from './profiles.js'

/**
 * A window the host stalled in (hiccup >= HICCUP_LIMIT_MS on some core). A
 * window without a meter reading (hiccupMs null) counts as not stalled:
 * judged as before the meter existed.
 *
 * @param {{hiccupMs?: number | null}} s
 */
export function stalled (s) {
  return typeof s.hiccupMs === 'number' && s.hiccupMs >= HICCUP_LIMIT_MS
}

/**
 * The decision after the windows measured so far at one rate (oldest
 * first), or null: measure another one.
 *
 * - A window that passed decides (a stall only made it harder).
 * - A failed window the host stalled in is no measurement: another one,
 *   up to MAX_WINDOWS in all; if every one stalled, the step is not
 *   measurable (it ends the ramp like a fail, and is never a pass).
 * - A valid window that fell behind (deliveries or publisher) decides.
 * - A valid window that kept up and missed only the latency bound is
 *   measured once more (p99 over one window is one stall away from the
 *   bound even below what the meter calls a stall), and that one decides.
 *
 * @template {{pass: boolean, keptUp: boolean, publisherKeptUp: boolean, hiccupMs?: number | null}} S
 * @param {S[]} windows
 * @returns {{verdict: 'pass' | 'fail' | 'not measurable', step: S} | null}
 */
export function judge (windows) {
  const last = windows[windows.length - 1]
  if (last.pass) return { verdict: 'pass', step: last }
  const room = windows.length < MAX_WINDOWS
  if (stalled(last)) {
    if (!room) return windows.every(stalled) ? { verdict: 'not measurable', step: last } : { verdict: 'fail', step: validFails(windows).pop() ?? last }
    return null
  }
  if (!last.keptUp || !last.publisherKeptUp) return { verdict: 'fail', step: last }
  return validFails(windows).length === 1 && room ? null : { verdict: 'fail', step: last }
}

/** @template {{pass: boolean, hiccupMs?: number | null}} S @param {S[]} windows */
function validFails (windows) {
  return windows.filter((s) => !s.pass && !stalled(s))
}
