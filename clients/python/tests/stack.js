// A real stack for the Python SDK's tests: redis-server, a quote-fetcher
// (sim feed, 100 ms) and two gateways on free loopback ports; with
// `--auth-secret S` they want HS256 tokens signed with S, and serve
// delayed grants 1.5 s late. Prints one
// JSON line {"gateways": [ws urls], "redis": url} when ready, then reads
// commands from stdin, one per line:
//   term <i>   SIGTERM gateway i (it drains: 1012 to its clients); prints {"terminated": i}
// and stops everything when stdin ends.

import { createInterface } from 'node:readline'
import { parseArgs } from 'node:util'
import { startFetcher, startGateway, startRedis } from '../../../harness/testkit/src/index.js'

const { values: args } = parseArgs({ options: { 'auth-secret': { type: 'string' } } })
const secret = args['auth-secret']
/** @type {Record<string, string>} */
// A short delay (docs/protocol.md, "Delayed grants"): a delayed grant's quotes come within seconds.
const auth = secret === undefined ? {} : { WSPS_AUTH_MODE: 'hs256', WSPS_AUTH_HS256_SECRET: secret, WSPS_DELAY_MS: '1500' }

const redis = await startRedis()
const fetcher = await startFetcher(redis.url, { WSPS_FETCH_INTERVAL_MS: 100 })
const gateways = await Promise.all([startGateway(redis.url, auth), startGateway(redis.url, auth)])
process.stdout.write(JSON.stringify({ gateways: gateways.map((g) => g.wsUrl), redis: redis.url }) + '\n')

/** @param {string} line */
async function command (line) {
  const [verb, arg] = line.trim().split(/\s+/)
  if (verb === 'term') {
    const i = Number(arg)
    await gateways[i].stop('SIGTERM')
    process.stdout.write(JSON.stringify({ terminated: i }) + '\n')
  } else if (verb) {
    process.stdout.write(JSON.stringify({ error: `unknown command: ${line}` }) + '\n')
  }
}

const rl = createInterface({ input: process.stdin })
for await (const line of rl) await command(line)
await Promise.allSettled(gateways.map((g) => g.stop()))
await fetcher.stop()
await redis.close()
process.exit(0)
