// The command line without a stack: verbs, usage errors and exit statuses,
// tokens checked by the gateway's own authenticator, settings by the
// services' own loaders, the publish input formats, the terminal table.
import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { test } from 'node:test'
import { CliErrorCode, Exit } from '../src/errors.js'
import { parseEnvFile } from '../src/check-config.js'
import { parseRows } from '../src/publish.js'
import { render } from '../src/top.js'
import { bookRecord, renderLadder } from '../src/book-view.js'
import { VERBS, main } from '../src/verbs.js'

const dir = mkdtempSync(join(tmpdir(), 'wsps-cli-'))
const secretFile = join(dir, 'secret')
writeFileSync(secretFile, 'a-secret-of-at-least-thirty-two-bytes\n')

/**
 * Runs a command line in-process with its own streams.
 *
 * @param {string[]} argv
 * @param {{input?: string, env?: Record<string, string>, tty?: boolean}} [o]
 */
async function run (argv, { input = '', env = {}, tty = false } = {}) {
  let out = ''
  let err = ''
  const stdout = Object.assign(new PassThrough(), { isTTY: tty })
  const stderr = Object.assign(new PassThrough(), { isTTY: false })
  stdout.on('data', (d) => { out += d })
  stderr.on('data', (d) => { err += d })
  const stdin = new PassThrough()
  stdin.end(input)
  const code = await main(argv, { out: stdout, err: stderr, in: stdin, signal: new AbortController().signal, env })
  return { code, out, err }
}

test('help lists every verb; each verb has a usage; a wrong command line is USAGE with exit 2', async () => {
  const help = await run(['help'])
  assert.equal(help.code, Exit.OK)
  for (const v of VERBS) {
    assert.match(help.out, new RegExp(`^  ${v.name} +${v.summary.replace(/[?()*]/g, '\\$&')}$`, 'm'))
    const one = await run([v.name, '--help'])
    assert.equal(one.code, Exit.OK)
    assert.ok(one.out.startsWith(`usage: wsps ${v.name}`), v.name)
  }
  assert.equal((await run([])).code, Exit.USAGE, 'no verb: the overview, exit 2')
  const unknown = await run(['frobnicate'])
  assert.equal(unknown.code, Exit.USAGE)
  assert.match(unknown.err, /^wsps frobnicate: USAGE: no verb frobnicate/)
  const option = await run(['token', '--nope'])
  assert.equal(option.code, Exit.USAGE)
  assert.match(option.err, /^wsps token: USAGE: Unknown option '--nope'/)
  const json = await run(['tail', '--json'])
  assert.equal(json.code, Exit.USAGE)
  assert.equal(JSON.parse(json.out).error.code, CliErrorCode.USAGE, '--json: the error as a record')
  const since = {
    'AAPL:12': /--since is SYMBOL:SEQ:EPOCH/,
    'AAPL:-1:abc': /--since is SYMBOL:SEQ:EPOCH/,
    'AAPL:1:not-an-epoch': /--since is SYMBOL:SEQ:EPOCH/,
    'MSFT:1:abc': /--since names MSFT, which is not tailed/,
    'AAPL:1:abc,aapl:2:abc': /--since names AAPL twice/
  }
  for (const [value, message] of Object.entries(since)) {
    const bad = await run(['tail', '--mode', 'distinct', '--since', value, 'AAPL'])
    assert.equal(bad.code, Exit.USAGE, value)
    assert.match(bad.err, message, value)
  }
  assert.match((await run(['tail', '--since', 'AAPL:1:abc', 'AAPL'])).err, /--since replays every tick: it needs --mode distinct/)
})

test('tail --book: a depth not in BOOK_DEPTHS, or with quote options, is USAGE', async () => {
  for (const depth of ['7', '0', 'ten', '1000', '10.5']) {
    const bad = await run(['tail', '--book', depth, 'BTC-USD'])
    assert.equal(bad.code, Exit.USAGE, depth)
    assert.match(bad.err, new RegExp(`--book is one of 10, 25, 100, 500, got ${depth.replace('.', '\\.')}`), depth)
  }
  for (const extra of [['--mode', 'merge'], ['--mode', 'distinct', '--since', 'BTC-USD:1:abc'], ['--max-rate', '2'], ['--bars', '1m']]) {
    const bad = await run(['tail', '--book', '10', ...extra, 'BTC-USD'])
    assert.equal(bad.code, Exit.USAGE, extra.join(' '))
    assert.match(bad.err, new RegExp(`--book shows order books: it takes no .*${extra[0]}`), extra.join(' '))
  }
  assert.match((await run(['tail', '--book', '10'])).err, /name at least one symbol/)
  assert.match((await run(['help'])).out, /order books/)
  assert.match((await run(['tail', '--help'])).out, /--book 10\|25\|100\|500/)
})

test('tail --book: the ladder puts bids and asks side by side, best first, at most the rows asked; the JSON record is the whole window', () => {
  /** @type {import('@wsps/client').HeldBook} */
  const book = { symbol: 'BTC-USD', depth: 10, seq: 42, epoch: 'ep', sync: true, ts: 1, bids: [['100.5', '2'], ['100.4', '1.25'], ['100', '30']], asks: [['100.6', '3']] }
  assert.deepEqual(renderLadder('BTC-USD', book), [
    'BTC-USD  depth 10  seq 42  live',
    'BID SIZE    BID | ASK    ASK SIZE',
    '       2  100.5 | 100.6  3',
    '    1.25  100.4 |',
    '      30    100 |'
  ])
  assert.equal(renderLadder('BTC-USD', book, { rows: 2 }).length, 4, 'two levels a side')
  assert.match(renderLadder('BTC-USD', book, { stale: true })[0], /STALE$/)
  assert.deepEqual(renderLadder('BTC-USD', { ...book, sync: false, bids: [], asks: [] }), ['BTC-USD  depth 10  seq 42  OUT OF SYNC (waiting for the next snapshot)', 'BID SIZE  BID | ASK  ASK SIZE'])
  assert.deepEqual(renderLadder('ETH-USD', undefined), ['ETH-USD  waiting for the book'])
  assert.deepEqual(bookRecord({ symbol: 'BTC-USD', book, snapshot: false }), { type: 'book', symbol: 'BTC-USD', seq: 42, epoch: 'ep', sync: true, snapshot: false, depth: 10, bids: book.bids, asks: book.asks })
})

test('token --class and --venues: the claims the gateway reads; a class it would refuse, or usage without a month, is USAGE', async () => {
  const minted = await run(['token', '--json', '--secret-file', secretFile, '--sub', 'ann', '--class', 'nonpro', '--venues', 'XNAS,ARCX', '--delayed-venues', 'XNYS'])
  assert.equal(minted.code, Exit.OK, minted.err)
  const { token, claims } = JSON.parse(minted.out)
  assert.deepEqual([claims.sub, claims.userClass, claims.venues], ['ann', 'nonpro', { realtime: ['XNAS', 'ARCX'], delayed: ['XNYS'] }])
  const checked = JSON.parse((await run(['check-token', '--json', '--secret-file', secretFile, token])).out)
  assert.deepEqual([checked.sub, checked.class], ['ann', 'nonpro'])
  const plain = JSON.parse((await run(['token', '--json', '--secret-file', secretFile])).out).claims
  assert.ok(!('userClass' in plain) && !('venues' in plain), 'none asked: none written')
  assert.equal((await run(['token', '--secret-file', secretFile, '--class', 'retail'])).code, Exit.USAGE)
  for (const argv of [['usage'], ['usage', '--month', '2026-13'], ['usage', '--month', '2026-11', 'extra']]) {
    assert.equal((await run(argv)).code, Exit.USAGE, argv.join(' '))
  }
})

test('token, then check-token: the gateway\'s authenticator accepts it with its grants; expired, forged and badly granted tokens are refused with the client\'s code', async () => {
  const minted = await run(['token', '--secret-file', secretFile, '--delayed', 'NV*', 'AAPL', 'MS*'])
  assert.equal(minted.code, Exit.OK)
  const jwt = minted.out.trim()
  const ok = await run(['check-token', '--json', '--secret-file', secretFile, jwt])
  assert.equal(ok.code, Exit.OK)
  const report = JSON.parse(ok.out)
  assert.deepEqual([report.sub, report.realtime, report.delayed], ['local-user', ['AAPL', 'MS*'], ['NV*']])
  assert.ok(report.expiresInS > 3500 && report.expiresInS <= 3600)
  assert.equal((await run(['check-token', '--secret-file', secretFile, '-'], { input: `${jwt}\n` })).code, Exit.OK, 'from stdin')

  const every = JSON.parse((await run(['check-token', '--json', '--secret-file', secretFile, (await run(['token', '--secret-file', secretFile])).out.trim()])).out)
  assert.equal(every.realtime, '*', 'no symbols claim: every symbol')

  const other = join(dir, 'other')
  writeFileSync(other, 'another-secret-of-thirty-two-bytes-or-more')
  const forged = await run(['check-token', '--json', '--secret-file', other, jwt])
  assert.equal(forged.code, Exit.FAILED)
  assert.deepEqual([JSON.parse(forged.out).error.code, JSON.parse(forged.out).error.errorCode], [CliErrorCode.INVALID_TOKEN, 'UNAUTHORIZED'])

  const expiring = (await run(['token', '--secret-file', secretFile, '--ttl', '1'])).out.trim()
  await new Promise((resolve) => setTimeout(resolve, 2100))
  const expired = await run(['check-token', '--secret-file', secretFile, expiring])
  assert.equal(expired.code, Exit.FAILED)
  assert.match(expired.err, /INVALID_TOKEN: refused: ERR_JWT_EXPIRED \(a client gets UNAUTHORIZED\)/)

  const renamed = (await run(['token', '--secret-file', secretFile, '--symbols-claim', 'tickers', 'AAPL'])).out.trim()
  const grants = JSON.parse((await run(['check-token', '--json', '--secret-file', secretFile, '--symbols-claim', 'tickers', renamed])).out)
  assert.deepEqual(grants.realtime, ['AAPL'], 'a claim of another name, as WSPS_AUTH_SYMBOLS_CLAIM says')

  const short = join(dir, 'short')
  writeFileSync(short, 'short')
  const weak = await run(['check-token', '--secret-file', short, jwt])
  assert.equal(weak.code, Exit.FAILED)
  assert.match(weak.err, /BAD_CONFIG: WSPS_AUTH_HS256_SECRET must be at least 32 bytes/, 'the gateway\'s own start-up check')
  assert.equal((await run(['check-token', jwt])).code, Exit.USAGE, 'a secret or a JWKS URL is needed')
  assert.equal((await run(['token', '--secret-file', join(dir, 'none')])).code, Exit.FAILED, 'UNREADABLE')
})

test('check-config: the service\'s loader decides, in its own words; env files and the environment', async () => {
  const good = join(dir, 'good.env')
  writeFileSync(good, '# the gateway\nexport WSPS_HTTP_PORT=8081\nWSPS_LOG_LEVEL="debug"\n\n')
  const ok = await run(['check-config', 'gateway', good])
  assert.equal(ok.code, Exit.OK)
  assert.match(ok.out, /^wsps-gateway: ok \(2 of \d+ settings given, the rest default\)$/m)

  const bad = join(dir, 'bad.env')
  writeFileSync(bad, 'WSPS_SEND_MAX_BYTES=10\nWSPS_NOT_A_SETTING=1\n')
  const refused = await run(['check-config', 'gateway', bad, '--json'])
  assert.equal(refused.code, Exit.FAILED)
  assert.deepEqual(JSON.parse(refused.out).error.problems, ['WSPS_SEND_MAX_BYTES="10": must be >= 1024', 'WSPS_NOT_A_SETTING: unknown setting (see docs/configuration.md)'])

  const fetcher = await run(['check-config', 'fetcher'], { env: { WSPS_AUTH_MODE: 'hs256', HOME: '/root' } })
  assert.equal(fetcher.code, Exit.FAILED, 'a gateway setting is unknown to the fetcher')
  assert.match(fetcher.err, /^wsps check-config: BAD_CONFIG: wsps-quote-fetcher: invalid configuration:\n {2}- WSPS_AUTH_MODE: unknown setting/)
  assert.equal((await run(['check-config', 'fetcher'], { env: { WSPS_PROVIDER: 'sim' } })).code, Exit.OK)
  assert.equal((await run(['check-config', 'router'])).code, Exit.USAGE)
  assert.throws(() => parseEnvFile('WSPS_A=1\nnot a line\n', 'f.env'), /f\.env:2: not a KEY=VALUE line/)
})

test('publish input: CSV with a header, NDJSON and JSON, each row named for its messages; a bad row stops everything before a request', async () => {
  assert.deepEqual(parseRows('symbol,bid,ask\nAAPL,1.5,1.6\n\nMSFT,,2\n', 'auto', 'q.csv'), [
    { quote: { symbol: 'AAPL', bid: 1.5, ask: 1.6 }, row: 'q.csv:2' },
    { quote: { symbol: 'MSFT', ask: 2 }, row: 'q.csv:4' }
  ])
  assert.deepEqual(parseRows('{"symbol":"A","last":1}\n{"symbol":"B","last":2}\n', 'auto', 'stdin').map((r) => r.row), ['stdin:1', 'stdin:2'])
  assert.deepEqual(parseRows('{"quotes":[{"symbol":"A","last":1}]}', 'auto', 'stdin'), [{ quote: { symbol: 'A', last: 1 }, row: 'stdin: quote 0' }])
  assert.deepEqual(parseRows('[{"symbol":"A"}]', 'auto', 'x').length, 1)
  assert.deepEqual(parseRows('{"symbol":"A","last":1}', 'auto', 'x'), [{ quote: { symbol: 'A', last: 1 }, row: 'x:1' }], 'one quote alone is a line of NDJSON')
  assert.throws(() => parseRows('symbol,bid\nA,1,2\n', 'csv', 'q.csv'), /q\.csv:2: 3 cells, the header has 2/)
  assert.throws(() => parseRows('{"symbol":"A"}\n{oops\n', 'auto', 'in'), /^Error: in:2: not JSON/, 'the line named')
  assert.throws(() => parseRows('{"symbol":"A"}', 'json', 'in'), /in: must be \{"quotes":\[\.\.\.\]\} or an array of quotes/)
  const bad = await run(['publish', '--token', 'x', '--url', 'http://127.0.0.1:1'], { input: 'symbol,bid\nAAPL,1\nAAPL,abc\n' })
  assert.equal(bad.code, Exit.FAILED)
  assert.match(bad.err, /BAD_INPUT: stdin:3: bid must be a finite number; nothing was sent/, 'checked before any request (the URL is unreachable)')
  const unreachable = await run(['publish', '--token', 'x', '--url', 'http://127.0.0.1:1', '--tries', '1', '--json'], { input: 'symbol,bid\nAAPL,1\n' })
  assert.equal(JSON.parse(unreachable.out).error.code, CliErrorCode.UNREACHABLE)
})

test('top\'s view: gateways then fetchers, a late record marked LATE, stale symbols with where and for how long, the most watched summed over gateways', () => {
  const now = 100_000
  const gw = (node, more) => ({ role: 'gateway', node, ready: true, draining: false, connections: 3, channels: 2, slowClients: 0, quotesInPerS: 5, loopDelayP99Ms: 1.5, rssBytes: 2 ** 27, staleCount: 0, stale: [], top: [], ageMs: 900, late: false, ...more })
  const lines = render({
    at: now,
    processes: [
      gw('gw-1', { top: [{ symbol: 'AAPL', subscribers: 3 }, { symbol: 'MSFT', subscribers: 1 }] }),
      gw('gw-2', { ready: false, late: true, ageMs: 9400, staleCount: 1, stale: [{ symbol: 'AAPL', since: now - 7000 }], top: [{ symbol: 'AAPL', subscribers: 2 }] }),
      { role: 'fetcher', node: 'f-1', ready: true, provider: 'sim', publishedPerS: 10, refusedPerS: 0, loopDelayP99Ms: 0.4, rssBytes: 2 ** 26, ageMs: 100, late: false }
    ]
  }, now)
  assert.match(lines[0], /^GATEWAY +READY +CONN/)
  assert.match(lines[1], /^gw-1 +yes +3 +2 +0 +5 +1\.5 ms +0 +128 MiB +1s$/)
  assert.match(lines[2], /^gw-2 +NO .* LATE 9s$/)
  assert.match(lines[5], /^f-1 +yes +sim +10 +0 +0\.4 ms +64 MiB +0s$/)
  assert.ok(lines.includes('STALE: AAPL on gw-2 for 7s'))
  assert.ok(lines.includes('MOST WATCHED: AAPL 5, MSFT 1'))
})

test('check-config --rendered: each gateway and fetcher Deployment\'s environment as its pod gets it, through the service\'s loader', async () => {
  const manifests = join(dir, 'rendered.yaml')
  const deployment = (/** @type {string} */ name, /** @type {string} */ component, /** @type {string} */ env) => `---
apiVersion: apps/v1
kind: Deployment
metadata: {name: ${name}, labels: {app.kubernetes.io/component: ${component}}}
spec:
  template:
    spec:
      containers:
        - name: main
          envFrom: [{configMapRef: {name: ${name}}}]
          env:
${env}
`
  writeFileSync(manifests, `apiVersion: v1
kind: ConfigMap
metadata: {name: gw}
data: {WSPS_HTTP_PORT: "8080", WSPS_SEND_HIGH_WATER_BYTES: "9000000", WSPS_SEND_MAX_BYTES: "100000"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: fe}
data: {WSPS_PROVIDER: sim, WSPS_REDIS_PASSWORD_FILE: /var/run/secrets/redis/password}
${deployment('gw', 'gateway', '            - {name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}\n            - {name: WSPS_NODE_NAME, value: "$(POD)"}')}
${deployment('fe', 'fetcher', '            - {name: WSPS_NODE_NAME, value: "fe-$$x"}')}
---
apiVersion: v1
kind: Service
metadata: {name: other}
`)
  const r = await run(['check-config', '--rendered', manifests, '--json'])
  assert.equal(r.code, Exit.FAILED)
  const [gw, fe, verdict] = r.out.trim().split('\n').map((l) => JSON.parse(l))
  assert.deepEqual([gw.deployment, gw.ok, gw.problems], ['gw', false, ['WSPS_SEND_MAX_BYTES must be larger than WSPS_SEND_HIGH_WATER_BYTES']])
  assert.deepEqual([fe.deployment, fe.ok, fe.secretFiles], ['fe', true, ['WSPS_REDIS_PASSWORD_FILE']], 'a secret file stood in for')
  assert.deepEqual(verdict.error, { code: CliErrorCode.BAD_CONFIG, message: '1 of 2 Deployments would refuse to start' })
  const { podEnvironments } = await import('../src/chart-env.js')
  const [gwEnv, feEnv] = podEnvironments((await import('node:fs')).readFileSync(manifests, 'utf8'))
  assert.equal(gwEnv.env.WSPS_NODE_NAME, 'wsps-pod-0', '$(NAME) from the downward API')
  assert.equal(feEnv.env.WSPS_NODE_NAME, 'fe-$x', '$$ escapes')
  assert.equal((await run(['check-config', '--rendered'])).code, Exit.USAGE)
  assert.equal((await run(['check-config', '--values', manifests, '--rendered', manifests])).code, Exit.USAGE)
})
