// Runs a scenario function in a child process, optionally inside a private
// network namespace (`unshare -n`, root only) whose loopback has small TCP
// buffers.
//
// Why: on the host's loopback a socket whose reader stopped absorbs
// megabytes in the kernel (send buffer autotuned to net.ipv4.tcp_wmem max,
// 4 MiB here) before the gateway's own send buffer grows at all. A thousand
// stuck readers would then pin gigabytes of TCP memory, which is shared by
// every process on the machine (net.ipv4.tcp_mem), and take minutes to fill.
// tcp_wmem/tcp_rmem are per network namespace: inside our own the limits
// are small and nothing outside is touched.

import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const CHILD = fileURLToPath(new URL('./isolate-child.js', import.meta.url))

/** Socket buffer limits inside the namespace (bytes: min default max). */
export const NETNS_SYSCTL = Object.freeze({
  'net.ipv4.tcp_wmem': '4096 16384 16384',
  'net.ipv4.tcp_rmem': '4096 16384 16384'
})

/** @type {boolean | null} */
let netnsOk = null

/** @returns {boolean} whether `unshare -n` with our sysctls works here */
export function netnsAvailable () {
  if (netnsOk === null) {
    const r = spawnSync('unshare', ['-n', '--', 'sh', '-c', netnsSetup()], { stdio: 'ignore', timeout: 10_000 })
    netnsOk = r.status === 0
  }
  return netnsOk
}

function netnsSetup () {
  return ['ip link set lo up', ...Object.entries(NETNS_SYSCTL).map(([k, v]) => `sysctl -qw ${k}="${v}"`)].join(' && ')
}

/**
 * @param {string} modulePath absolute path of the module
 * @param {string} exportName the async function to call with (params, log)
 * @param {unknown} params JSON
 * @param {{netns?: boolean, timeoutMs?: number, onLine?: (line: string) => void}} [options]
 *   netns: run in a private network namespace if possible
 * @returns {Promise<{result: any, netns: boolean}>}
 */
export async function runIsolated (modulePath, exportName, params, { netns = false, timeoutMs = 600_000, onLine = () => {} } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'wsps-chaos-'))
  const out = join(dir, 'result.json')
  const args = [CHILD, modulePath, exportName, JSON.stringify(params), out]
  const inNetns = netns && netnsAvailable()
  const [cmd, argv] = inNetns
    ? ['unshare', ['-n', '--', 'sh', '-c', `${netnsSetup()} && exec "$0" "$@"`, process.execPath, ...args]]
    : [process.execPath, args]
  // Its own process group, so a timeout can end it and everything it started.
  const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'], detached: true, env: process.env })
  const killGroup = () => { try { process.kill(-(/** @type {number} */ (child.pid)), 'SIGKILL') } catch {} }
  process.on('exit', killGroup)
  /** @type {string[]} */
  const tail = []
  for (const stream of [child.stdout, child.stderr]) {
    let buf = ''
    stream.setEncoding('utf8')
    stream.on('data', (d) => {
      buf += d
      const lines = buf.split('\n')
      buf = lines.pop() ?? ''
      for (const l of lines) {
        onLine(l)
        tail.push(l)
        if (tail.length > 100) tail.shift()
      }
    })
  }
  const timer = setTimeout(killGroup, timeoutMs)
  const [code, signal] = await new Promise((resolve) => child.on('exit', (c, s) => resolve([c, s])))
  clearTimeout(timer)
  killGroup()
  process.off('exit', killGroup)
  try {
    if (code !== 0) throw new Error(`scenario ${exportName} failed (${code ?? signal}):\n${tail.join('\n')}`)
    return { result: JSON.parse(readFileSync(out, 'utf8')), netns: inNetns }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
