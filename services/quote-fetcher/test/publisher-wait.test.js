// The Publisher waiting for replicas (WSPS_PUBLISH_WAIT_REPLICAS) against a
// real redis-server primary and replica: what is published, when, and what
// each wait's outcome counts as.
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { Redis } from 'ioredis'
import { redisKeys } from '@wsps/shared/keys'
import { latestQuotes } from '@wsps/shared/latest'
import { registerScripts } from '@wsps/shared/scripts'
import { startRedis, waitFor } from '@wsps/testkit'
import { Publisher } from '../src/publisher.js'

/** @type {Awaited<ReturnType<typeof startRedis>>} */
let primary
/** @type {Awaited<ReturnType<typeof startRedis>>} */
let replica
/** @type {import('@wsps/shared/scripts').ScriptedRedis} */
let r
/** @type {Redis} */
let rep

before(async () => {
  primary = await startRedis()
  replica = await startRedis()
  rep = new Redis(replica.url)
  await rep.call('REPLICAOF', '127.0.0.1', String(primary.port))
  await waitFor(async () => (await rep.info('replication')).includes('master_link_status:up'), { timeout: 10_000, message: 'the replica in sync' })
  r = registerScripts(new Redis(primary.url))
})
after(async () => {
  r.disconnect()
  rep.disconnect()
  await replica.close()
  await primary.close()
})

let n = 0
/** @param {number} waitReplicas @param {number} [waitTimeoutMs] */
function publisher (waitReplicas, waitTimeoutMs = 2000) {
  /** @type {string[]} */
  const waits = []
  const keys = redisKeys(`w${n++}`)
  const pub = new Publisher({ redis: r, keys, ttlMs: 60_000, sharded: false, historySize: 100, historyTtlMs: 60_000, waitReplicas, waitTimeoutMs, onWait: (x) => waits.push(x) })
  return { pub, keys, waits }
}

/**
 * @param {import('@wsps/shared/keys').RedisKeys} keys
 * @param {string[]} symbols
 */
async function listen (keys, symbols) {
  const sub = new Redis(primary.url)
  /** @type {any[]} */
  const got = []
  sub.on('message', (_ch, msg) => got.push(JSON.parse(msg)))
  await sub.subscribe(...symbols.map(keys.channel))
  return { got, close: () => sub.disconnect() }
}

test('waiting for 1 replica: the quotes are published once the replica holds them, with the same message, seq and epoch as the script wrote', async () => {
  const { pub, keys, waits } = publisher(1)
  const l = await listen(keys, ['A', 'B'])
  const res = await pub.publish([{ symbol: 'A', ts: 1 }, { symbol: 'B', ts: 2 }, { symbol: 'A', ts: 3 }], { pushLeaseMs: 5000 })
  assert.deepEqual(res, { published: 3, refused: { pushed: 0, fenced: 0, old: 0, late: 0 }, seqs: [1, 1, 2] })
  assert.deepEqual(waits, ['acked'])
  // The replica has every write (WAIT came back before the PUBLISH); the
  // newest history entry is the latest quote.
  assert.deepEqual((await rep.xrange(keys.history('A'), '-', '+')).map(([id]) => id), ['1-0', '2-0'])
  assert.deepEqual(await rep.xrange(keys.history('A'), '-', '+'), await r.xrange(keys.history('A'), '-', '+'))
  await waitFor(() => l.got.length === 3, { message: 'three messages' })
  assert.deepEqual(l.got.map((m) => [m.symbol, m.seq, m.ts]), [['A', 1, 1], ['B', 1, 2], ['A', 2, 3]])
  assert.ok(l.got.every((m) => typeof m.epoch === 'string' && m.epoch.length > 0))
  assert.deepEqual([JSON.stringify(l.got.at(-1))], await latestQuotes(r, keys, ['A']), 'the message published is the latest quote, byte for byte')
  l.close()
})

test('waiting for more replicas than there are: after the timeout the quotes are published all the same, and the wait counts as short', async () => {
  const { pub, keys, waits } = publisher(2, 50)
  const l = await listen(keys, ['S'])
  const started = performance.now()
  assert.deepEqual(await pub.publish([{ symbol: 'S', ts: 1 }]), { published: 1, refused: { pushed: 0, fenced: 0, old: 0, late: 0 }, seqs: [1] })
  assert.ok(performance.now() - started >= 45, 'it waited out the timeout')
  assert.deepEqual(waits, ['short'])
  await waitFor(() => l.got.length === 1, { message: 'the quote published anyway' })
  l.close()
})

test('a refused quote (its symbol is pushed) is neither published nor waited on as a quote; the seq floor rises only with what the publisher itself published', async () => {
  const { pub, keys } = publisher(1)
  await pub.publish([{ symbol: 'P', ts: 1 }], { pushLeaseMs: 5000 })
  const l = await listen(keys, ['P', 'Q'])
  assert.deepEqual(await pub.publish([{ symbol: 'P', ts: 2 }, { symbol: 'Q', ts: 3 }]), { published: 1, refused: { pushed: 1, fenced: 0, old: 0, late: 0 }, seqs: [0, 1] })
  await waitFor(() => l.got.length === 1, { message: 'one message' })
  assert.equal(l.got[0].symbol, 'Q')
  // A seq read from Redis (a latest quote) does not raise the floor while
  // waiting: the read may see writes whose wait never came back.
  pub.remember('Q', 500)
  assert.equal(pub.lastSeq.get('Q'), 1)
  const { pub: plain } = publisher(0)
  plain.remember('Q', 500)
  assert.equal(plain.lastSeq.get('Q'), 500)
  l.close()
})

test('the connection breaks while waiting: nothing is published, the call fails, and no seq is remembered', async () => {
  const { pub, keys, waits } = publisher(2, 5000)
  const l = await listen(keys, ['K'])
  // Its outcome taken at once: it fails while the kill is still being sent.
  const call = pub.publish([{ symbol: 'K', ts: 1 }]).then(() => null, (err) => err)
  // Kill the publisher's connection from the server side while it waits,
  // as a dying primary would.
  const admin = new Redis(primary.url)
  let waiting = ''
  await waitFor(async () => {
    // Blocked (flag b) in WAIT now: not a connection whose last command was one.
    waiting = /id=(\d+) [^\n]* flags=[a-zA-Z]*b[a-zA-Z]* [^\n]*cmd=wait/.exec(String(await admin.call('CLIENT', 'LIST')))?.[1] ?? ''
    return waiting !== ''
  }, { message: 'the WAIT blocked' })
  await admin.call('CLIENT', 'KILL', 'ID', waiting)
  admin.disconnect()
  assert.ok(await call instanceof Error, 'the call failed')
  assert.deepEqual(waits, ['failed'])
  assert.equal(pub.lastSeq.get('K'), undefined)
  await new Promise((resolve) => setTimeout(resolve, 100))
  assert.deepEqual(l.got, [])
  l.close()
  await waitFor(() => r.status === 'ready', { message: 'the publisher reconnected' })
})

test('a quote built on the previous one (seq and epoch copied along) is published with the script\'s seq and epoch only', async () => {
  const { pub, keys } = publisher(0)
  await pub.publish([{ symbol: 'E', ts: 1 }])
  const [raw] = /** @type {string[]} */ (await latestQuotes(r, keys, ['E']))
  await pub.publish([/** @type {any} */ ({ ...JSON.parse(raw), epoch: 'stale', seq: 99, ts: 2 })])
  const [next] = /** @type {string[]} */ (await latestQuotes(r, keys, ['E']))
  assert.equal((next.match(/"epoch"/g) ?? []).length, 1, next)
  assert.equal((next.match(/"seq"/g) ?? []).length, 1, next)
  assert.deepEqual([JSON.parse(next).seq, JSON.parse(next).epoch], [2, await r.get(keys.epoch('E'))])
})
