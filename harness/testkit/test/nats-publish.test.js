// The NATS writer's seq and epoch, as the Redis publish script gives them
// (docs/protocol.md: seq rises by exactly 1 per quote of a symbol; the
// epoch names one unbroken count), on a real nats-server: where they
// agree, and where NATS differs (a count that aged out starts a new epoch).

import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { jetstreamManager } from '@nats-io/jetstream'
import { Code } from '@wsps/shared/errors'
import { connectNats, ensureQuoteStream } from '@wsps/shared/nats'
import { natsLayout } from '@wsps/shared/nats-layout'
import { natsPublisher } from '@wsps/shared/nats-publish'
import { cursorOf } from '@wsps/shared/published'
import { startNats } from '../src/nats.js'
import { sleep, waitFor } from '../src/wait.js'

const layout = natsLayout('wsps')
/** @type {import('../src/nats.js').NatsHandle} */
let nats
/** @type {import('@nats-io/transport-node').NatsConnection} */
let nc

/** @param {string} symbol @param {number} ts @param {number} [floor] */
const quote = (symbol, ts, floor = 0) => ({ symbol, body: `{"symbol":"${symbol}","ts":${ts}}`, floor, ts })

/** @param {string} symbol */
async function newest (symbol) {
  const jsm = await jetstreamManager(nc)
  const m = await jsm.direct.getMessage(layout.stream, { last_by_subj: layout.subject(symbol) })
  return m && cursorOf(m.string())
}

before(async () => {
  nats = await startNats()
  nc = await connectNats({ servers: [nats.url], name: 'nats-publish-test' })
  // A short MaxAge: the expiry case waits it out.
  await ensureQuoteStream(nc, layout, { historySize: 10, historyTtlMs: 1500, replicas: 1 })
})
after(async () => {
  await nc?.close()
  await nats?.close()
})

test('seq from 1, one epoch, the same for a second writer that goes on', async () => {
  const a = await natsPublisher(nc, layout)
  const b = await natsPublisher(nc, layout)
  const ts = Date.now()
  assert.deepEqual([await a.publish(quote('SEQ', ts)), await a.publish(quote('SEQ', ts + 1))], [1, 2])
  const first = await newest('SEQ')
  assert.match(String(first?.epoch), /^[a-z0-9]{1,32}$/)
  assert.equal(await b.publish(quote('SEQ', ts + 2)), 3)
  assert.equal(await a.publish(quote('SEQ', ts + 3)), 4, 'the first writer expected seq 2 stored last: it reads again and goes on')
  assert.deepEqual(await newest('SEQ'), { seq: 4, epoch: first?.epoch })
})

test('a floor above what is stored: seq floor + 1, a new epoch (the count was lost)', async () => {
  const w = await natsPublisher(nc, layout)
  const ts = Date.now()
  await w.publish(quote('FLOOR', ts))
  const before = await newest('FLOOR')
  assert.equal(await w.publish(quote('FLOOR', ts + 1, 41)), 42)
  const now = await newest('FLOOR')
  assert.equal(now?.seq, 42)
  assert.notEqual(now?.epoch, before?.epoch)
  assert.equal(await w.publish(quote('FLOOR', ts + 2, 42)), 43, 'a floor at the stored seq goes on')
  assert.equal((await newest('FLOOR'))?.epoch, now?.epoch)
})

test('NATS differs: a symbol whose quotes all aged out (MaxAge) starts a new epoch from its floor', async () => {
  const w = await natsPublisher(nc, layout)
  const ts = Date.now()
  assert.equal(await w.publish(quote('AGED', ts)), 1)
  const before = await newest('AGED')
  await waitFor(async () => (await newest('AGED')) === null, { timeout: 10_000, interval: 200, message: 'AGED aged out' })
  assert.equal(await w.publish(quote('AGED', ts + 1)), 1, 'the count went with its last quote')
  assert.notEqual((await newest('AGED'))?.epoch, before?.epoch)
})

test('a quote stamped in the future does not hold its symbol beyond FENCE_FUTURE_MS', async () => {
  const w = await natsPublisher(nc, layout)
  const ts = Date.now()
  assert.equal(await w.publish(quote('FUT', ts + 3_600_000)), 1)
  await sleep(1100)
  assert.equal(await w.publish(quote('FUT', Date.now())), 2)
})

test('while its connection is down a publish is refused at once, not held', async () => {
  const own = await connectNats({ servers: [nats.url], name: 'nats-publish-down' })
  try {
    const w = await natsPublisher(own, layout)
    assert.equal(await w.publish(quote('DOWNW', Date.now())), 1)
    await nats.kill()
    // Once the client has seen the link go (a closed socket: at once; a
    // silent one: two missed PINGs), every publish is refused on the spot.
    await sleep(200)
    const t0 = performance.now()
    await assert.rejects(w.publish(quote('DOWNW', Date.now())), (/** @type {any} */ err) => err.code === Code.NATS_DOWN)
    assert.ok(performance.now() - t0 < 100, 'at once')
  } finally {
    await nats.start()
    await own.close()
  }
})
