// A TCP proxy on a free loopback port whose link can go silent on demand,
// like Toxiproxy's `timeout` toxic without the close: every connection stays
// open, nothing is lost, and nothing passes either way until heal(). What a
// client wrote meanwhile waits in the socket buffers and arrives, in order,
// at the heal: the half-dead network link that TCP alone does not notice.

import { once } from 'node:events'
import { createConnection, createServer } from 'node:net'

/**
 * @param {number} targetPort a port on 127.0.0.1 to forward to
 */
export async function startSilentProxy (targetPort) {
  /** @type {Set<import('node:net').Socket>} */
  const sockets = new Set()
  let silent = false
  const server = createServer((client) => {
    const upstream = createConnection({ host: '127.0.0.1', port: targetPort })
    for (const s of [client, upstream]) {
      sockets.add(s)
      s.on('error', () => { client.destroy(); upstream.destroy() })
      s.on('close', () => { sockets.delete(s); client.destroy(); upstream.destroy() })
      if (silent) s.pause()
    }
    // Not pipe(): its backpressure handling resumes a source on 'drain',
    // which would end a silence. Test volumes need no backpressure.
    client.on('data', (d) => upstream.write(d))
    upstream.on('data', (d) => client.write(d))
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = /** @type {import('node:net').AddressInfo} */ (server.address())
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    /** Nothing passes from now on (read by neither side; connections stay open). */
    silence () {
      silent = true
      for (const s of sockets) s.pause()
    },
    /** What waited passes, and the link is a link again. */
    heal () {
      silent = false
      for (const s of sockets) s.resume()
    },
    async close () {
      for (const s of sockets) s.destroy()
      server.close()
      await once(server, 'close')
    }
  }
}
