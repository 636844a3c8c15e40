#!/usr/bin/env node
// The local stack's token endpoint for the page (`make up AUTH=hs256`): the
// gateways run with WSPS_PAGE_TOKEN_URL=/local-token and nginx proxies that
// path here, so the watchlist at http://localhost:8080/ fetches its tokens
// from its own origin, as it would from an application's token endpoint.
// Every GET mints a token for every symbol, valid --ttl seconds (a short
// one shows the page's in-band refresh). Loopback only; not for production.
//
//   node infra/local/token-server.js --port 8088 [--ttl 3600] [--secret-file PATH]

import { createServer } from 'node:http'
import { parseArgs } from 'node:util'
import { SECRET_FILE, mintHs256, readSecret } from '@wsps/cli/jwt'

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '8088' },
    ttl: { type: 'string', default: '3600' },
    'secret-file': { type: 'string', default: SECRET_FILE }
  }
})
const port = Number(values.port)
const ttl = Number(values.ttl)
if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`token-server.js: --port must be a TCP port, got ${values.port}`)
if (!Number.isInteger(ttl) || ttl < 1) throw new Error(`token-server.js: --ttl must be a whole number of seconds, got ${values.ttl}`)
const secret = readSecret(values['secret-file'])

const server = createServer((req, res) => {
  if (req.method !== 'GET' || new URL(req.url ?? '/', 'http://x').pathname !== '/local-token') {
    res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found: GET /local-token\n')
    return
  }
  res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' }).end(mintHs256(secret, { ttl, sub: 'local-page' }))
})
server.listen(port, '127.0.0.1', () => console.log(`token server on http://127.0.0.1:${port}/local-token (ttl ${ttl}s)`))
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => server.close(() => process.exit(0)))
