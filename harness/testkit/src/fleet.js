// A WebSocket client fleet spread over child processes (fleet-worker.js).

import { fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const WORKER = fileURLToPath(new URL('./fleet-worker.js', import.meta.url))

/** @param {number} processes */
export async function startFleet (processes) {
  let nextId = 1
  /** @type {Map<number, {resolve: (v: any) => void, reject: (e: Error) => void}>} */
  const pending = new Map()
  const workers = Array.from({ length: processes }, () => {
    const w = fork(WORKER, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
    w.on('message', (/** @type {any} */ msg) => {
      const p = pending.get(msg.id)
      if (!p) return
      pending.delete(msg.id)
      if (msg.error) p.reject(new Error(msg.error))
      else p.resolve(msg.result)
    })
    w.on('exit', (code, signal) => {
      for (const [id, p] of pending) {
        pending.delete(id)
        p.reject(new Error(`fleet worker exited (${code ?? signal})`))
      }
    })
    return w
  })
  const kill = () => { for (const w of workers) w.kill('SIGKILL') }
  process.on('exit', kill)

  /**
   * @param {number} i worker index
   * @param {Record<string, unknown>} msg
   * @returns {Promise<any>}
   */
  function call (i, msg) {
    const id = nextId++
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject })
      workers[i].send({ ...msg, id })
    })
  }

  return {
    size: processes,
    call,
    /** @param {Record<string, unknown>} msg */
    all: (msg) => Promise.all(workers.map((_, i) => call(i, msg))),
    async close () {
      await Promise.allSettled(workers.map((_, i) => call(i, { cmd: 'exit' })))
      await Promise.all(workers.map((w) => w.exitCode !== null || w.signalCode !== null ? null : new Promise((resolve) => {
        const t = setTimeout(() => { w.kill('SIGKILL') }, 3000)
        w.once('exit', () => { clearTimeout(t); resolve(undefined) })
      })))
      process.off('exit', kill)
    }
  }
}
