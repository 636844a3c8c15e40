#!/usr/bin/env node
// Mints an HS256 token for the local stack started with `make up AUTH=hs256`
// (the gateways check tokens against the secret in .run/auth-secret). For
// trying the auth lifecycle locally (docs/protocol.md, "Authentication"),
// not for production: a real issuer signs tokens for its logged-in users.
//
//   node infra/local/token.js                      every symbol, valid 1 hour
//   node infra/local/token.js AAPL 'MS*'           only these (a prefix ends in *)
//   node infra/local/token.js --ttl 5 AAPL         expires in 5 s (then 4002)
//   node infra/local/token.js --secret-file PATH   another secret file
//
// Prints the token alone on stdout, so `TOKEN=$(node infra/local/token.js)`
// works. Signed with node:crypto: a JWT is two base64url JSON documents and
// an HMAC over them, no library needed.

import { createHmac } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    ttl: { type: 'string', default: '3600' },
    'secret-file': { type: 'string', default: join(ROOT, '.run', 'auth-secret') }
  }
})

const ttl = Number(values.ttl)
if (!Number.isInteger(ttl) || ttl < 1) {
  process.stderr.write(`token.js: --ttl must be a whole number of seconds, got ${values.ttl}\n`)
  process.exit(2)
}
let secret
try {
  secret = readFileSync(values['secret-file'], 'utf8').trim()
} catch (err) {
  process.stderr.write(`token.js: ${/** @type {Error} */ (err).message}\n  (start the stack with \`make up AUTH=hs256\`: it writes the secret)\n`)
  process.exit(1)
}

/** @param {object} doc */
const b64 = (doc) => Buffer.from(JSON.stringify(doc)).toString('base64url')
const now = Math.floor(Date.now() / 1000)
/** @type {Record<string, unknown>} */
const claims = { sub: 'local-user', iat: now, exp: now + ttl }
// The gateway's default WSPS_AUTH_SYMBOLS_CLAIM; no claim grants every symbol.
if (positionals.length) claims.symbols = positionals
const unsigned = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64(claims)}`
const signature = createHmac('sha256', secret).update(unsigned).digest('base64url')
process.stdout.write(`${unsigned}.${signature}\n`)
