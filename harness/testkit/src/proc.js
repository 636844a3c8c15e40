// /proc readers: CPU seconds and RSS of a process and its descendants, the
// CPU of every other process, and the machine's CPU steal (time a VM's CPUs
// waited for the hypervisor).

import { readdirSync, readFileSync } from 'node:fs'

const TICK = 100 // USER_HZ on Linux

/** @param {number} pid */
function stat (pid) {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ')
    // f[0] is field 3 (state): ppid = f[1], utime = f[11], stime = f[12]
    return { ppid: Number(f[1]), cpu: (Number(f[11]) + Number(f[12])) / TICK }
  } catch {
    return null
  }
}

/**
 * @typedef {Map<number, {ppid: number, cpu: number}>} ProcessTimes a
 *   processTimes() snapshot
 */

/** @returns {ProcessTimes} every process now: its parent and CPU seconds */
export function processTimes () {
  /** @type {ProcessTimes} */
  const out = new Map()
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue
    const s = stat(Number(d))
    if (s) out.set(Number(d), s)
  }
  return out
}

/**
 * @param {number[]} roots
 * @param {Map<number, {ppid: number}>} [procs] a processTimes() snapshot (read when not given)
 * @returns {number[]} the roots and every descendant
 */
export function tree (roots, procs = processTimes()) {
  /** @type {Map<number, number[]>} */
  const children = new Map()
  for (const [pid, s] of procs) {
    const list = children.get(s.ppid) ?? []
    list.push(pid)
    children.set(s.ppid, list)
  }
  const out = []
  const todo = [...roots]
  while (todo.length) {
    const p = /** @type {number} */ (todo.pop())
    out.push(p)
    todo.push(...(children.get(p) ?? []))
  }
  return out
}

/** @param {number[]} pids @returns {number} CPU seconds (user + system) */
export function cpuSeconds (pids) {
  let t = 0
  for (const p of pids) t += stat(p)?.cpu ?? 0
  return t
}

/** @param {number[]} pids @returns {number} resident bytes */
export function rssBytes (pids) {
  let t = 0
  for (const p of pids) {
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${p}/status`, 'utf8'))
      if (m) t += Number(m[1]) * 1024
    } catch {}
  }
  return t
}

/** @param {number[]} pids @param {ProcessTimes} procs @returns {number} their CPU seconds in the snapshot */
function cpuIn (pids, procs) {
  let t = 0
  for (const p of pids) t += procs.get(p)?.cpu ?? 0
  return t
}

/**
 * A CPU meter over a set of root pids (descendants included, re-read each
 * time). Meters of one window can share its snapshots: they then start and
 * end at the same instant, and /proc is read once for all of them.
 */
export class CpuMeter {
  /**
   * @param {() => number[]} roots
   * @param {ProcessTimes} [procs] the snapshot to start from (read when not given)
   */
  constructor (roots, procs) {
    this.roots = roots
    /** @type {number[]} */
    this.pids = []
    this.t0 = 0
    this.c0 = 0
    this.mark(procs)
  }

  /** @param {ProcessTimes} [procs] the snapshot to start from (read when not given) */
  mark (procs = processTimes()) {
    this.pids = tree(this.roots(), procs)
    this.t0 = performance.now()
    this.c0 = cpuIn(this.pids, procs)
  }

  /**
   * @param {ProcessTimes} [procs] the snapshot to end at (when not given,
   *   each of the pids is read now)
   * @returns {number} cores used since mark() (1.0 = one full core)
   */
  read (procs) {
    const dt = (performance.now() - this.t0) / 1000
    const c1 = procs ? cpuIn(this.pids, procs) : cpuSeconds(this.pids)
    return dt > 0 ? (c1 - this.c0) / dt : 0
  }
}

/** The kernel's own threads: kthreadd (pid 2) and its children. */
const KTHREADD = 2

/**
 * CPU seconds that processes other than `ours` spent between two
 * processTimes() snapshots. Kernel threads do not count (their softirq work
 * is done for the processes measured). A process that started in between
 * counts with all its time; one that ended in between is missed, and so is
 * its time.
 *
 * @param {ProcessTimes} before
 * @param {ProcessTimes} after
 * @param {Set<number>} ours
 * @returns {number}
 */
export function othersSeconds (before, after, ours) {
  let t = 0
  for (const [pid, s] of after) {
    if (ours.has(pid) || pid === KTHREADD || s.ppid === KTHREADD) continue
    t += Math.max(0, s.cpu - (before.get(pid)?.cpu ?? 0))
  }
  return t
}

/**
 * The CPU of every process outside the trees of some roots since it was
 * made: on a benchmark's machine, another job (a test run, a build) that
 * shares its cores. Steal says what the host took; this says what the
 * guest's other processes took.
 */
export class OthersCpuMeter {
  #roots
  #t0 = performance.now()
  #before

  /**
   * @param {() => number[]} roots the processes measured (descendants included, re-read each time)
   * @param {ProcessTimes} [procs] the snapshot to start from (read when not given)
   */
  constructor (roots, procs = processTimes()) {
    this.#roots = roots
    this.#before = procs
  }

  /**
   * @param {ProcessTimes} [after] the snapshot to end at (read when not given)
   * @returns {number} cores used by the others since made (1.0 = one full core)
   */
  read (after = processTimes()) {
    const dt = (performance.now() - this.#t0) / 1000
    return dt > 0 ? othersSeconds(this.#before, after, new Set(tree(this.#roots(), after))) / dt : 0
  }
}

/**
 * @param {string} [text] the contents of /proc/stat (read when not given)
 * @returns {{steal: number, total: number}} the aggregate `cpu` line's steal and total, in ticks
 */
export function machineTimes (text = readFileSync('/proc/stat', 'utf8')) {
  const f = (/^cpu\s+(.*)$/m.exec(text)?.[1] ?? '').trim().split(/\s+/).map(Number)
  // user nice system idle iowait irq softirq steal [guest guest_nice]: guest
  // time is already counted in user, so the first eight are the total.
  const total = f.slice(0, 8).reduce((a, b) => a + (Number.isFinite(b) ? b : 0), 0)
  return { steal: Number.isFinite(f[7]) ? f[7] : 0, total }
}

/**
 * @param {string} core a CPU number ("1")
 * @param {string} [text] the contents of /proc/stat (read when not given)
 * @returns {{busy: number, softirq: number, total: number}} that CPU's busy,
 *   softirq and total ticks: busy is user, nice, system, irq and softirq
 *   (idle, iowait and steal are not)
 */
export function coreTimes (core, text = readFileSync('/proc/stat', 'utf8')) {
  const f = (new RegExp(`^cpu${core}\\s+(.*)$`, 'm').exec(text)?.[1] ?? '').trim().split(/\s+/).map(Number)
  const n = (/** @type {number} */ i) => (Number.isFinite(f[i]) ? f[i] : 0)
  return { busy: n(0) + n(1) + n(2) + n(5) + n(6), softirq: n(6), total: n(0) + n(1) + n(2) + n(3) + n(4) + n(5) + n(6) + n(7) }
}

/**
 * How busy one CPU was since it was made, whoever kept it busy. A process's
 * own CPU time misses the kernel work done for it in softirq context on its
 * core (on loopback, TCP delivery of what it writes, which the kernel may
 * hand to ksoftirqd under load): a core whose processes add up to 70% can be
 * full.
 */
export class CoreBusyMeter {
  #core
  #start

  /** @param {string} core a CPU number */
  constructor (core) {
    this.#core = core
    this.#start = coreTimes(core)
  }

  /** @returns {{busy: number, softirq: number}} shares of the core's time since made, 0..1 */
  read () {
    const now = coreTimes(this.#core)
    const total = now.total - this.#start.total
    return total > 0 ? { busy: (now.busy - this.#start.busy) / total, softirq: (now.softirq - this.#start.softirq) / total } : { busy: 0, softirq: 0 }
  }
}

/**
 * The share of the machine's CPU time stolen by the hypervisor since it was
 * made. On a shared VM, steal stalls every process at once: a latency step
 * that fails while steal is high failed for the host, not the server.
 */
export class StealMeter {
  #start = machineTimes()

  /** @returns {number} 0..1 */
  read () {
    const now = machineTimes()
    const total = now.total - this.#start.total
    return total > 0 ? (now.steal - this.#start.steal) / total : 0
  }
}
