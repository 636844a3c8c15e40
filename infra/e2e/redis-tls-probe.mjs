// What a client of the release's Redis meets at each node and Sentinel with
// redis.tls on. Run where the services run: in a gateway pod, through
// `kubectl exec ... node --input-type=module -e <this file>`, by
// infra/e2e/redis-tls.mjs (the NetworkPolicies let a gateway reach Redis, so
// whatever is refused here is refused by TLS). Also runs on the host against
// the testkit's TLS Sentinel group.
// Env: PROBE_TARGETS (host:port,...), PROBE_WRONG_CA (PEM of a CA that did
// not sign Redis' certificate), and the service's own WSPS_REDIS_* settings
// (the chart's ConfigMap in the pod). Prints one JSON line.
import { readFileSync, writeFileSync } from 'node:fs'
import { createConnection } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { connect as tlsConnect } from 'node:tls'
import { loadConfig } from '@wsps/shared/config'
import { commonSettings } from '@wsps/shared/common-settings'
import { connectRedis } from '@wsps/shared/redis'

const WAIT_MS = 4000

/**
 * @param {string} entry
 * @returns {{host: string, port: number}}
 */
const parse = (entry) => ({ host: entry.slice(0, entry.lastIndexOf(':')), port: Number(entry.slice(entry.lastIndexOf(':') + 1)) })

/** PING in plain text: 'answered' when Redis replies, 'refused' when it closes or stays silent. @param {{host: string, port: number}} t */
function plain (t) {
  return new Promise((resolve) => {
    let out = ''
    const s = createConnection(t, () => s.write('PING\r\n'))
    const done = (/** @type {string} */ r) => { s.destroy(); resolve(r) }
    s.setTimeout(WAIT_MS, () => done(out ? 'answered' : 'refused'))
    s.on('data', (d) => { out += d; if (/^[+-]/.test(out)) done('answered') })
    s.on('error', () => done('refused'))
    s.on('close', () => done(/^[+-]/.test(out) ? 'answered' : 'refused'))
  })
}

/**
 * A TLS handshake, then PING: the protocol and the reply's first line, or the error's code.
 * @param {{host: string, port: number}} t
 * @param {import('node:tls').ConnectionOptions} o
 * @returns {Promise<{ok: boolean, protocol?: string | null, reply?: string, code?: string}>}
 */
function handshake (t, o) {
  return new Promise((resolve) => {
    let out = ''
    /** @type {string | null} */
    let protocol = null
    const s = tlsConnect({ ...o, host: t.host, port: t.port }, () => { protocol = s.getProtocol(); s.write('PING\r\n') })
    const done = (/** @type {any} */ r) => { s.destroy(); resolve(r) }
    s.setTimeout(WAIT_MS, () => done({ ok: false, code: 'TIMEOUT' }))
    s.on('data', (d) => { out += d; if (out.includes('\r\n')) done({ ok: true, protocol, reply: out.split('\r\n')[0] }) })
    s.on('error', (/** @type {any} */ err) => done({ ok: false, code: err.code || err.message }))
  })
}

const settings = new Set(commonSettings.flatMap((s) => [s.env, `${s.env}_FILE`]))
/** @type {any} */
const config = loadConfig(commonSettings, Object.fromEntries(Object.entries(process.env).filter(([k]) => settings.has(k))))
const ca = readFileSync(config.redisTlsCaFile)
const wrongCaFile = join(tmpdir(), `e2e-wrong-ca-${process.pid}.crt`)
writeFileSync(wrongCaFile, process.env.PROBE_WRONG_CA ?? '')
const wrongCa = readFileSync(wrongCaFile)

const targets = []
for (const entry of (process.env.PROBE_TARGETS ?? '').split(',').filter(Boolean)) {
  const t = parse(entry)
  const [p, right, tls12, wrong] = await Promise.all([
    plain(t),
    handshake(t, { ca }),
    handshake(t, { ca, maxVersion: 'TLSv1.2' }),
    handshake(t, { ca: wrongCa })
  ])
  targets.push({ target: entry, plain: p, right, tls12, wrong })
}

/**
 * The service's own connection code and settings: a PING, or (with the wrong CA) the first error's code.
 * @param {any} c settings
 */
async function service (c) {
  /** @type {any[]} */
  const errors = []
  const client = connectRedis(c, { name: 'e2e-tls-probe', onError: (err) => errors.push(err) })
  try {
    // A PING that cannot reach the server fails after WSPS_REDIS_COMMAND_TIMEOUT_MS.
    const pong = await Promise.race([client.ping().catch(() => null), new Promise((resolve) => setTimeout(resolve, 15000, null))])
    if (pong) return { ok: true, reply: pong, protocol: /** @type {any} */ (client).stream?.getProtocol?.() }
    const coded = errors.find((e) => e.code === 'WSPS_ERR_REDIS_TLS') ?? errors.at(-1)
    return { ok: false, code: coded?.code, message: coded?.message }
  } finally {
    client.disconnect()
  }
}

const [own, wrongOwn] = await Promise.all([service(config), service({ ...config, redisTlsCaFile: wrongCaFile })])
console.log(JSON.stringify({ targets, service: own, serviceWrongCa: wrongOwn }))
process.exit(0)
