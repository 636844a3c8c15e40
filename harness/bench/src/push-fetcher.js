// A push-only quote-fetcher (WSPS_PROVIDER=push) for the parts of the bench
// that feed quotes through its publish API (docs/feeding.md): the ingest
// section and the history section's recovery storm.

import { FETCHER_MAIN, freePort, httpOk, waitFor } from '@wsps/testkit'
import { start } from './spawn.js'

/** The publish token of every bench fetcher (loopback only). */
const TOKEN = 'bench-publish-token-0123456789abcdef'

/**
 * Starts the fetcher and waits until it is ready.
 *
 * @param {object} o
 * @param {string} o.redisUrl
 * @param {string} o.prefix WSPS_REDIS_KEY_PREFIX
 * @param {string | null} o.core CPU list for taskset
 * @param {string} o.name process and node name
 * @param {Record<string, string>} [o.env] more settings
 */
export async function startPushFetcher ({ redisUrl, prefix, core, name, env = {} }) {
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const proc = start(process.execPath, [FETCHER_MAIN], {
    core,
    name,
    stdin: false,
    env: {
      WSPS_HTTP_PORT: String(port), WSPS_HOST: '127.0.0.1', WSPS_LOG_LEVEL: 'warn', WSPS_NODE_NAME: name, WSPS_REDIS_URL: redisUrl,
      WSPS_REDIS_KEY_PREFIX: prefix, WSPS_PROVIDER: 'push', WSPS_PUBLISH_TOKEN: TOKEN, ...env
    }
  })
  try {
    await waitFor(() => httpOk(`${url}/readyz`), { timeout: 20_000, message: `the fetcher ${name}` })
  } catch (err) {
    await proc.stop('SIGTERM', { killAfterMs: 3000 })
    throw err
  }
  return {
    pid: () => proc.pid,
    /** POST /v1/quotes */
    api: `${url}/v1/quotes`,
    /** What a publish request carries besides its body. */
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    stop: () => proc.stop('SIGTERM', { killAfterMs: 3000 })
  }
}
