// A real stack for the Python SDK's tests: redis-server, a quote-fetcher
// (sim feed, 100 ms) and two gateways on free loopback ports. Prints one
// JSON line {"gateways": [ws urls], "redis": url} when ready, then reads
// commands from stdin, one per line:
//   term <i>   SIGTERM gateway i (it drains: 1012 to its clients); prints {"terminated": i}
// and stops everything when stdin ends.

import { createInterface } from 'node:readline'
import { startFetcher, startGateway, startRedis } from '../../../harness/testkit/src/index.js'

const redis = await startRedis()
const fetcher = await startFetcher(redis.url, { WSPS_FETCH_INTERVAL_MS: 100 })
const gateways = await Promise.all([startGateway(redis.url), startGateway(redis.url)])
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
