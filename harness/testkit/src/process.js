// The one process starter of the harness: services, redis-server, nginx,
// load generators and the bench's servers all start here. It keeps what a
// child prints (JSON lines apart, for our own tools), waits for lines, stops
// a child politely or not, and makes sure no child outlives the process that
// started it.

import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { tree } from './proc.js'

/** How many lines of output a child keeps for error messages. */
const LOG_LINES = 200

/** @type {Set<Child>} children still running */
const live = new Set()
let hooked = false

/** Kills every child still running (and, for detached ones, all they started). */
function killAll () {
  const roots = [...live].map((c) => c.pid)
  const all = tree(roots)
  for (const c of live) if (c.detached) { try { process.kill(-c.pid, 'SIGKILL') } catch {} }
  for (const pid of all) { try { process.kill(pid, 'SIGKILL') } catch {} }
}

/**
 * Once, when the first child starts: kill the children at exit, and turn
 * SIGINT/SIGTERM into an exit (the default action would skip the exit hook
 * and leave them running).
 */
function hookExit () {
  if (hooked) return
  hooked = true
  process.on('exit', killAll)
  for (const sig of /** @type {const} */ (['SIGINT', 'SIGTERM'])) {
    process.on(sig, () => {
      killAll()
      process.exit(130)
    })
  }
}

/**
 * @typedef {object} StartOptions
 * @property {string} [name] for messages (default: the command)
 * @property {Record<string, string | number>} [env] set on top of the inherited environment
 * @property {boolean} [inheritEnv] start from this process's environment, minus
 *   every WSPS_* (the services refuse unknown ones); false: only PATH and HOME. Default true.
 * @property {string} [cwd]
 * @property {boolean} [stdin] give it a stdin pipe (our tools read commands there and stop at its end)
 * @property {boolean} [json] parse stdout as JSON lines into `lines` (what does not parse goes to `logs`)
 * @property {boolean} [detached] its own session and process group: its own scheduler autogroup, like a
 *   process another user starts, and stopping it stops what it started (nginx's workers, Pushpin's runner)
 * @property {string | null} [core] CPU list to pin it to (taskset)
 * @property {number} [nice] niceness (0: as we are)
 */

/** @typedef {import('node:child_process').ChildProcess & {stdout: import('node:stream').Readable, stderr: import('node:stream').Readable}} PipedChild */

/** A running child process. */
export class Child {
  #proc
  #stdin
  /** @type {any[]} */
  #lines = []
  /** @type {string[]} */
  #logs = []
  /** @type {Set<() => void>} */
  #waiters = new Set()

  /**
   * @param {string} cmd
   * @param {string[]} args
   * @param {StartOptions} [options]
   */
  constructor (cmd, args, { name = cmd, env = {}, inheritEnv = true, cwd, stdin = false, json = false, detached = false, core = null, nice = 0 } = {}) {
    hookExit()
    let [c, a] = core === null ? [cmd, args] : ['taskset', ['-c', core, cmd, ...args]]
    if (nice !== 0) [c, a] = ['nice', ['-n', String(nice), c, ...a]]
    /** @type {Record<string, string>} */
    const childEnv = inheritEnv
      ? Object.fromEntries(Object.entries(process.env).filter((e) => !e[0].startsWith('WSPS_') && e[1] !== undefined).map(([k, v]) => [k, String(v)]))
      : { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' }
    for (const [k, v] of Object.entries(env)) childEnv[k] = String(v)
    this.name = name
    this.detached = detached
    this.#stdin = stdin
    this.#proc = spawn(c, a, { cwd, detached, env: childEnv, stdio: [stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'] })
    this.pid = /** @type {number} */ (this.#proc.pid)
    live.add(this)
    this.#proc.stdin?.on('error', () => {})
    this.#read(/** @type {import('node:stream').Readable} */ (this.#proc.stdout), json)
    this.#read(/** @type {import('node:stream').Readable} */ (this.#proc.stderr), false)
    /** Resolves when it has exited. @type {Promise<{code: number | null, signal: NodeJS.Signals | null}>} */
    this.exited = once(this.#proc, 'exit').then(([code, signal]) => {
      live.delete(this)
      this.#wake()
      return { code, signal }
    })
  }

  /**
   * @param {import('node:stream').Readable} stream
   * @param {boolean} json
   */
  #read (stream, json) {
    let buf = ''
    stream.setEncoding('utf8')
    stream.on('data', (chunk) => {
      buf += chunk
      let nl
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl)
        buf = buf.slice(nl + 1)
        if (!line.trim()) continue
        if (json) {
          try {
            this.#lines.push(JSON.parse(line))
            continue
          } catch {}
        }
        this.#logs.push(line)
        if (this.#logs.length > LOG_LINES) this.#logs.splice(0, this.#logs.length - LOG_LINES)
      }
      this.#wake()
    })
  }

  #wake () {
    for (const w of this.#waiters) w()
  }

  /**
   * The node:child_process object (its streams, exitCode). stdout and
   * stderr are always pipes.
   *
   * @returns {PipedChild}
   */
  get proc () { return /** @type {PipedChild} */ (this.#proc) }
  /** JSON lines it printed on stdout (with `json`), in order. */
  get lines () { return this.#lines }
  /** The last 200 other lines it printed (stderr, and stdout unless parsed). */
  get logs () { return this.#logs }
  get alive () { return this.#proc.exitCode === null && this.#proc.signalCode === null }

  /** @param {object} obj one JSON line to its stdin */
  send (obj) { this.#proc.stdin?.write(JSON.stringify(obj) + '\n') }

  /**
   * The first JSON line from index `from` on that `match`es.
   *
   * @param {(line: any) => boolean} match
   * @param {number} timeoutMs
   * @param {number} [from]
   * @returns {Promise<any>}
   */
  waitLine (match, timeoutMs, from = 0) {
    return new Promise((resolve, reject) => {
      const check = () => {
        for (let i = from; i < this.#lines.length; i++) {
          if (match(this.#lines[i])) { done(); return resolve(this.#lines[i]) }
        }
        if (!this.alive) { done(); reject(new Error(`${this.name} exited (${this.#proc.exitCode ?? this.#proc.signalCode}): ${this.#logs.slice(-10).join('\n')}`)) }
      }
      const timer = setTimeout(() => { done(); reject(new Error(`${this.name}: timed out after ${timeoutMs} ms\n${this.#logs.slice(-10).join('\n')}`)) }, timeoutMs)
      const done = () => { clearTimeout(timer); this.#waiters.delete(check) }
      this.#waiters.add(check)
      check()
    })
  }

  /**
   * Stops it and resolves when it has exited. Closes its stdin first; a child
   * that reads stdin gets `graceMs` to stop by itself before `signal`. With
   * `killAfterMs`, whatever still runs that long after the signal is
   * SIGKILLed; without, it may take as long as it takes (a draining gateway).
   *
   * @param {NodeJS.Signals} [signal]
   * @param {{graceMs?: number, killAfterMs?: number}} [options]
   */
  async stop (signal = 'SIGTERM', { graceMs = 0, killAfterMs } = {}) {
    if (this.alive) {
      this.#proc.stdin?.end()
      const t1 = setTimeout(() => { try { this.#proc.kill(signal) } catch {} }, this.#stdin ? graceMs : 0)
      const t2 = killAfterMs === undefined ? undefined : setTimeout(() => this.#killGroup(), (this.#stdin ? graceMs : 0) + killAfterMs)
      await this.exited
      clearTimeout(t1)
      clearTimeout(t2)
    }
    // Anything it left behind in its group.
    if (this.detached) { try { process.kill(-this.pid, 'SIGKILL') } catch {} }
    return this.exited
  }

  kill () { return this.stop('SIGKILL') }

  #killGroup () {
    try { process.kill(this.detached ? -this.pid : this.pid, 'SIGKILL') } catch {}
  }
}

/**
 * @param {string} cmd
 * @param {string[]} args
 * @param {StartOptions} [options]
 */
export function startProcess (cmd, args, options) {
  return new Child(cmd, args, options)
}
