// The bench's one publisher against a real Redis: what it writes by hand as
// RESP arrives as the quotes it says it published, every seq once, and its
// per-second count is what Redis answered.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Redis } from 'ioredis'
import { startRedis, waitFor } from '@wsps/testkit'
import { startProcess } from '@wsps/testkit/process'

const PUBLISHER = new URL('../src/publisher.js', import.meta.url).pathname

test('every quote published reaches a subscriber once, in seq order per symbol, and is counted', async (t) => {
  // A password makes the publisher AUTH on its hand-written connection too.
  const redis = await startRedis({ password: 'pub-test' })
  t.after(() => redis.close())
  const url = `redis://:pub-test@127.0.0.1:${redis.port}`
  const sub = new Redis(url)
  t.after(() => sub.disconnect())
  /** @type {Map<string, number[]>} */
  const seqs = new Map()
  sub.on('pmessage', (_p, channel, message) => {
    const q = JSON.parse(message)
    assert.equal(channel, `bt:{${q.symbol}}:q`)
    assert.ok(Math.abs(Date.now() - q.ts) < 5000, 'ts is the publish time')
    const list = seqs.get(q.symbol) ?? []
    list.push(q.seq)
    seqs.set(q.symbol, list)
  })
  await sub.psubscribe('bt:*')

  const pub = startProcess(process.execPath, [PUBLISHER, `--redis=${url}`, '--symbols=20', '--prefix=bt'], { name: 'publisher', stdin: true, json: true })
  t.after(() => pub.stop())
  await pub.waitLine((l) => l.type === 'ready', 10_000)
  const reader = new Redis(url)
  t.after(() => reader.disconnect())
  const last = await reader.get('bt:{S0003}:last')
  assert.equal(JSON.parse(/** @type {string} */ (last)).seq, 0, 'setLast at start: every symbol has a last quote')

  const from = pub.lines.length
  pub.send({ cmd: 'rate', rate: 3000, prefix: 'bt' })
  await waitFor(() => pub.lines.slice(from).filter((l) => l.type === 'tick' && l.published > 0).length >= 2, { timeout: 10_000, message: 'two ticks with publishes' })
  pub.send({ cmd: 'rate', rate: 0, prefix: 'bt' })
  const received = () => [...seqs.values()].reduce((n, l) => n + l.length, 0)
  // Counted once Redis answered: after a pause, what was counted arrived.
  await waitFor(() => {
    const ticks = pub.lines.slice(from).filter((l) => l.type === 'tick')
    const counted = ticks.reduce((n, l) => n + l.published, 0)
    return ticks.length >= 4 && ticks.at(-1).published === 0 && counted === received()
  }, { timeout: 10_000, message: 'published count equal to what the subscriber got' })

  assert.ok(received() >= 3000, `at 3000/s for over a second, got ${received()}`)
  assert.equal(seqs.size, 20, 'drawn from every symbol')
  for (const [symbol, list] of seqs) {
    assert.deepEqual(list, list.map((_, i) => i + 1), `${symbol}: every seq once, in order`)
  }
})

test('a Redis that refuses the password stops the publisher with the reason', async (t) => {
  const redis = await startRedis({ password: 'right' })
  t.after(() => redis.close())
  const pub = startProcess(process.execPath, [PUBLISHER, `--redis=redis://:wrong@127.0.0.1:${redis.port}`, '--symbols=5'], { name: 'publisher', stdin: true, json: true })
  t.after(() => pub.stop())
  await waitFor(() => !pub.alive, { timeout: 10_000, message: 'the publisher exits' })
  assert.match(pub.logs.join('\n'), /WRONGPASS|invalid password|NOAUTH/i)
})
