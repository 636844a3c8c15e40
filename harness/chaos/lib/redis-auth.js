// A redis-server that requires AUTH (`--requirepass`). The testkit's
// startRedis() has no password option; this is the same idea with one.

import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createConnection } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, waitFor } from '../../testkit/src/index.js'

/** @type {Set<import('node:child_process').ChildProcess>} */
const procs = new Set()
process.on('exit', () => {
  for (const p of procs) p.kill('SIGKILL')
})

/**
 * @param {{password: string}} options
 */
export async function startRedisWithPassword ({ password }) {
  const port = await freePort()
  const dir = mkdtempSync(join(tmpdir(), 'wsps-redis-auth-'))
  // The password goes in through a config on stdin, not argv: argv is
  // world-readable in /proc and ps.
  const proc = spawn('redis-server', ['-'], { stdio: ['pipe', 'ignore', 'ignore'] })
  proc.stdin.end([
    'bind 127.0.0.1', `port ${port}`, 'save ""', 'appendonly no', `dir ${dir}`, `requirepass ${password}`
  ].join('\n') + '\n')
  procs.add(proc)
  const exited = new Promise((resolve) => proc.once('exit', () => {
    procs.delete(proc)
    resolve(undefined)
  }))
  await waitFor(() => ping(port, password), { timeout: 10_000, message: `redis with AUTH on ${port}` })
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    async close () {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL')
      await exited
      rmSync(dir, { recursive: true, force: true })
    }
  }
}

/**
 * Resolves with the reply to `AUTH password` + `PING` (inline commands).
 *
 * @param {number} port
 * @param {string | null} password null: PING without AUTH
 * @returns {Promise<string>}
 */
export function redisReply (port, password) {
  return new Promise((resolve) => {
    let out = ''
    const s = createConnection({ host: '127.0.0.1', port }, () => {
      s.write(password === null ? 'PING\r\n' : `AUTH ${password}\r\nPING\r\n`)
    })
    s.setTimeout(1000, () => { s.destroy(); resolve(out) })
    s.on('data', (d) => {
      out += d
      if (out.split('\r\n').length > (password === null ? 1 : 2)) { s.destroy(); resolve(out) }
    })
    s.on('error', () => resolve(out))
  })
}

/**
 * @param {number} port
 * @param {string} password
 */
async function ping (port, password) {
  return (await redisReply(port, password)).includes('+PONG')
}
