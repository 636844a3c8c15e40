// Child processes speaking JSON lines, optionally pinned to a CPU core.

import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { tree } from './proc.js'

/**
 * Niceness of everything the bench starts (WSPS_BENCH_NICE, default 0). On a
 * machine of your own a negative value keeps stray jobs from disturbing the
 * run; on a shared one leave it at 0 (and note that with autogroup
 * scheduling nice only ranks processes within one session).
 */
export const NICE = Number(process.env.WSPS_BENCH_NICE ?? 0)

/** @type {Set<import('node:child_process').ChildProcess>} */
const live = new Set()
const killAll = () => {
  const roots = [...live].map((p) => /** @type {number} */ (p.pid))
  const all = tree(roots)
  for (const pid of roots) { try { process.kill(-pid, 'SIGKILL') } catch {} }
  for (const pid of all) { try { process.kill(pid, 'SIGKILL') } catch {} }
}
process.on('exit', killAll)
for (const sig of /** @type {const} */ (['SIGINT', 'SIGTERM'])) process.on(sig, () => { killAll(); process.exit(130) })

/**
 * @param {string} cmd
 * @param {string[]} args
 * @param {{core?: string | null, env?: Record<string, string>, name?: string, cwd?: string, stdin?: boolean}} [opts]
 */
export function start (cmd, args, { core = null, env = {}, name = cmd, cwd, stdin = true } = {}) {
  let [c, a] = core === null ? [cmd, args] : ['taskset', ['-c', core, cmd, ...args]]
  if (NICE !== 0) [c, a] = ['nice', ['-n', String(NICE), c, ...a]]
  // detached: its own session, so its own scheduler autogroup, like any
  // process another user starts; and its own process group, so stopping it
  // stops what it started (Pushpin's runner, nginx's workers).
  // Children get no WSPS_* of ours (the gateway refuses unknown WSPS_ settings), only what is given.
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('WSPS_')))
  const proc = spawn(c, a, { cwd, detached: true, env: { ...base, ...env }, stdio: [stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'] })
  live.add(proc)
  /** @type {any[]} */
  const lines = []
  /** @type {string[]} */
  const errs = []
  /** @type {Set<() => void>} */
  const waiters = new Set()
  let buf = ''
  proc.stdout?.setEncoding('utf8')
  proc.stdout?.on('data', (chunk) => {
    buf += chunk
    let nl
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl)
      buf = buf.slice(nl + 1)
      if (!line.trim()) continue
      try { lines.push(JSON.parse(line)) } catch { errs.push(line) }
    }
    for (const w of waiters) w()
  })
  proc.stderr?.setEncoding('utf8')
  proc.stderr?.on('data', (chunk) => {
    errs.push(...String(chunk).split('\n').filter(Boolean))
    if (errs.length > 200) errs.splice(0, errs.length - 200)
  })
  proc.stdin?.on('error', () => {})
  const exited = once(proc, 'exit').then(([code, signal]) => { live.delete(proc); for (const w of waiters) w(); return { code, signal } })
  const h = {
    name,
    proc,
    pid: /** @type {number} */ (proc.pid),
    lines,
    errs,
    exited,
    get alive () { return proc.exitCode === null && proc.signalCode === null },
    /** @param {object} obj */
    send (obj) { proc.stdin?.write(JSON.stringify(obj) + '\n') },
    /**
     * @param {(line: any) => boolean} match
     * @param {number} timeoutMs
     * @param {number} [from]
     */
    waitLine (match, timeoutMs, from = 0) {
      return new Promise((resolve, reject) => {
        const check = () => {
          for (let i = from; i < lines.length; i++) {
            if (match(lines[i])) { done(); return resolve(lines[i]) }
          }
          if (!h.alive) { done(); reject(new Error(`${name} exited (${proc.exitCode ?? proc.signalCode}): ${errs.slice(-10).join('\n')}`)) }
        }
        const timer = setTimeout(() => { done(); reject(new Error(`${name}: timed out after ${timeoutMs} ms\n${errs.slice(-10).join('\n')}`)) }, timeoutMs)
        const done = () => { clearTimeout(timer); waiters.delete(check) }
        waiters.add(check)
        check()
      })
    },
    /** Closes stdin (the polite stop for our own tools), then SIGTERM, then SIGKILL. */
    async stop (graceMs = 3000) {
      if (!h.alive) return exited
      proc.stdin?.end()
      const t1 = setTimeout(() => { try { proc.kill('SIGTERM') } catch {} }, stdin ? graceMs : 0)
      const t2 = setTimeout(() => { try { process.kill(-h.pid, 'SIGKILL') } catch {} }, graceMs + 3000)
      await exited
      try { process.kill(-h.pid, 'SIGKILL') } catch {} // anything it left behind in its group
      clearTimeout(t1)
      clearTimeout(t2)
      return exited
    }
  }
  return h
}

/** @typedef {ReturnType<typeof start>} Child */

/** @param {number} ms */
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * @param {() => Promise<boolean> | boolean} check
 * @param {number} timeoutMs
 * @param {string} what
 */
export async function until (check, timeoutMs, what) {
  const end = Date.now() + timeoutMs
  for (;;) {
    try { if (await check()) return } catch {}
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await sleep(100)
  }
}

/** @param {string} url */
export async function httpOk (url) {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(1000) })
    await res.arrayBuffer()
    return res.ok
  } catch {
    return false
  }
}
