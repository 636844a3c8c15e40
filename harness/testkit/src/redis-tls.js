// A redis-server that only speaks TLS, with a throwaway CA made by the
// openssl CLI: how managed Redis services (and the chart's external Redis
// option with `rediss://`) are reached.

import { execFileSync, spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { connect } from 'node:tls'
import { children, freePort, waitFor } from './index.js'

/**
 * A CA and a server certificate it signed, for localhost and 127.0.0.1.
 *
 * @param {string} dir
 * @param {string} name file prefix
 * @returns {{ca: string, cert: string, key: string}} PEM file paths
 */
export function makeCerts (dir, name) {
  const f = (/** @type {string} */ s) => join(dir, `${name}-${s}`)
  const run = (/** @type {string[]} */ args) => execFileSync('openssl', args, { stdio: 'pipe' })
  run(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', `/CN=${name} test CA`, '-keyout', f('ca.key'), '-out', f('ca.pem')])
  run(['req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost', '-keyout', f('server.key'), '-out', f('server.csr')])
  const ext = f('ext.cnf')
  writeFileSync(ext, 'subjectAltName=DNS:localhost,IP:127.0.0.1\n')
  run(['x509', '-req', '-in', f('server.csr'), '-CA', f('ca.pem'), '-CAkey', f('ca.key'), '-CAcreateserial', '-days', '1', '-extfile', ext, '-out', f('server.pem')])
  return { ca: f('ca.pem'), cert: f('server.pem'), key: f('server.key') }
}

/**
 * @param {{port: number, ca: string}} o
 * @returns {Promise<boolean>} PING answered over TLS, the server checked against `ca`
 */
function tlsPing ({ port, ca }) {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port, servername: 'localhost', ca: readFileSync(ca) }, () => s.write('PING\r\n'))
    s.setTimeout(1000, () => { s.destroy(); resolve(false) })
    s.on('data', (d) => { s.destroy(); resolve(String(d).startsWith('+PONG')) })
    s.on('error', () => resolve(false))
  })
}

/**
 * redis-server with TLS only (no plain port); clients are not asked for a
 * certificate.
 */
export async function startRedisTls () {
  const dir = mkdtempSync(join(tmpdir(), 'wsps-redis-tls-'))
  const certs = makeCerts(dir, 'redis')
  const port = await freePort()
  const proc = spawn('redis-server', ['--bind', '127.0.0.1', '--port', '0', '--tls-port', String(port),
    '--tls-cert-file', certs.cert, '--tls-key-file', certs.key, '--tls-ca-cert-file', certs.ca, '--tls-auth-clients', 'no',
    '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' })
  children.add(proc)
  const exited = once(proc, 'exit').then(() => { children.delete(proc) })
  await waitFor(() => tlsPing({ port, ca: certs.ca }), { timeout: 10_000, message: `redis TLS on ${port}` })
  return {
    port,
    /** The certificate names localhost, so that is the host to dial. */
    url: `rediss://localhost:${port}`,
    ca: certs.ca,
    dir,
    async close () {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM')
      await exited
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
