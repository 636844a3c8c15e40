// Loopback network helpers: a free port, and HTTP probes that never hang
// (each request is bounded to 2 s).

import { once } from 'node:events'
import { createServer } from 'node:net'

/** @returns {Promise<number>} a TCP port free on 127.0.0.1 right now */
export async function freePort () {
  const srv = createServer()
  srv.listen(0, '127.0.0.1')
  await once(srv, 'listening')
  const { port } = /** @type {import('node:net').AddressInfo} */ (srv.address())
  srv.close()
  await once(srv, 'close')
  return port
}

/**
 * @param {string} url
 * @returns {Promise<boolean>} it answered 2xx (never throws)
 */
export async function httpOk (url) {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2000) })
    await res.arrayBuffer()
    return res.ok
  } catch {
    return false
  }
}

/**
 * @param {string} url
 * @returns {Promise<{status: number, body: any}>}
 */
export async function getJson (url) {
  const res = await fetch(url, { signal: AbortSignal.timeout(2000) })
  const text = await res.text()
  let body = text
  try { body = JSON.parse(text) } catch {}
  return { status: res.status, body }
}
