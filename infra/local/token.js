#!/usr/bin/env node
// Mints an HS256 token for the local stack started with `make up AUTH=hs256`
// (the gateways check tokens against the secret in .run/auth-secret). For
// trying the auth lifecycle locally (docs/protocol.md, "Authentication"),
// not for production: a real issuer signs tokens for its logged-in users.
//
//   node infra/local/token.js                      every symbol, valid 1 hour
//   node infra/local/token.js AAPL 'MS*'           only these (a prefix ends in *)
//   node infra/local/token.js --ttl 5 AAPL         expires in 5 s (then 4002)
//   node infra/local/token.js --delayed 'AAPL,NV*' MSFT
//                                                  MSFT real-time; AAPL and NV* delayed only
//                                                  (WSPS_DELAY_MS, 15 min by default)
//   node infra/local/token.js --secret-file PATH   another secret file
//
// Prints the token alone on stdout, so `TOKEN=$(node infra/local/token.js)`
// works (signed by jwt.js; the page gets its tokens from token-server.js).

import { parseArgs } from 'node:util'
import { SECRET_FILE, mintHs256, readSecret } from './jwt.js'

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    ttl: { type: 'string', default: '3600' },
    delayed: { type: 'string', default: '' },
    'secret-file': { type: 'string', default: SECRET_FILE }
  }
})

const ttl = Number(values.ttl)
if (!Number.isInteger(ttl) || ttl < 1) {
  process.stderr.write(`token.js: --ttl must be a whole number of seconds, got ${values.ttl}\n`)
  process.exit(2)
}
let secret
try {
  secret = readSecret(values['secret-file'])
} catch (err) {
  process.stderr.write(`token.js: ${/** @type {Error} */ (err).message}\n`)
  process.exit(1)
}
const delayed = values.delayed.split(',').map((x) => x.trim()).filter(Boolean)
process.stdout.write(`${mintHs256(secret, { ttl, symbols: positionals, delayed })}\n`)
