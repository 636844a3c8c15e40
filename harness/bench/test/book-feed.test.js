// The book section's feed and baseline against a real Redis: the book
// publisher writes through the book script, the naive book server resends
// the whole top 25 on every change, and the reference receiver finds every
// frame's checksum right (what the section counts as mismatches).

import { test } from 'node:test'
import assert from 'node:assert/strict'
import WebSocket from 'ws'
import { BookReceiver, BookVerdict } from '@wsps/protocol/book-receiver'
import { freePort, startRedis, waitFor } from '@wsps/testkit'
import { startProcess } from '@wsps/testkit/process'

const PUBLISHER = new URL('../src/book-publisher.js', import.meta.url).pathname
const NAIVE = new URL('../src/servers/naive-books.js', import.meta.url).pathname

test('the naive book server sends the published books whole, every checksum right', async (t) => {
  const redis = await startRedis()
  t.after(() => redis.close())
  const pub = startProcess(process.execPath, [PUBLISHER, `--redis=${redis.url}`, '--books=3'], { name: 'book-publisher', stdin: true, json: true })
  t.after(() => pub.stop())
  await pub.waitLine((l) => l.type === 'ready', 10_000)
  const port = await freePort()
  const naive = startProcess(process.execPath, [NAIVE, `--port=${port}`, `--redis=${redis.url}`], { name: 'naive-books', json: true })
  t.after(() => naive.stop())
  await naive.waitLine((l) => l.type === 'listening', 10_000)

  const receiver = new BookReceiver()
  receiver.want('S0001', 25)
  /** @type {Record<string, number>} */
  const verdicts = {}
  /** @type {any[]} */
  const frames = []
  const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`)
  t.after(() => ws.terminate())
  ws.on('open', () => ws.send(JSON.stringify({ op: 'sub', id: 4, symbols: ['S0001'], book: 25 })))
  ws.on('message', (data) => {
    const msg = JSON.parse(String(data))
    frames.push(msg)
    if (msg.op === 'book') {
      const v = receiver.frame(msg)
      verdicts[v] = (verdicts[v] ?? 0) + 1
    }
  })
  await waitFor(() => frames.length >= 2, { timeout: 10_000, message: 'ack and the first book' })
  assert.deepEqual(frames[0], { op: 'ack', id: 4, book: 25, symbols: ['S0001'] })
  pub.send({ cmd: 'rate', perBook: 50 })
  await waitFor(() => (verdicts[BookVerdict.APPLIED] ?? 0) >= 30, { timeout: 10_000, message: '30 books applied' })
  pub.send({ cmd: 'rate', perBook: 0 })
  assert.deepEqual(Object.keys(verdicts), [BookVerdict.APPLIED], 'no mismatch')
  const books = frames.filter((f) => f.op === 'book')
  for (let i = 1; i < books.length; i++) assert.ok(books[i].seq > books[i - 1].seq, 'seq grows frame by frame')
  assert.ok(books.every((b) => b.symbol === 'S0001' && b.depth === 25 && b.bids.length === 25 && b.asks.length === 25), 'the whole top 25 every time')
  assert.ok(books.every((b) => Math.abs(Date.now() - b.ts) < 10_000), 'ts is the write\'s')
  await waitFor(() => pub.lines.some((l) => l.type === 'tick' && l.published > 0 && l.refused === 0), { timeout: 5000, message: 'a tick counting writes, none refused' })
})
