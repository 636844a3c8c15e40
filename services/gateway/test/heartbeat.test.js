import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Connection } from '../src/connection.js'
import { Heartbeat, SWEEP_MS } from '../src/heartbeat.js'

/** A connection whose peer answers pings (or not), on a fake transport. */
function peer (answers = true) {
  const transport = {
    readyState: 1,
    get open () { return this.readyState === 1 },
    bufferedAmount: 0,
    write () {},
    close () {},
    ping () {
      c.pings++
      if (answers) c.conn.markAlive()
    },
    terminate () {
      c.terminated = true
      transport.readyState = 3
    }
  }
  const conn = new Connection(/** @type {any} */ (transport), /** @type {any} */ ({}), { id: 0, ip: '', grants: null })
  const c = { pings: 0, terminated: false, conn, beat: () => conn.beat() }
  return c
}

const INTERVAL = 10_000
const SWEEPS_PER_INTERVAL = INTERVAL / SWEEP_MS

test('each connection is pinged once per interval, spread evenly over the sweeps', () => {
  const clients = new Set(Array.from({ length: 1000 }, () => peer()))
  const hb = new Heartbeat(clients, INTERVAL)
  const perSweep = []
  for (let i = 0; i < 3 * SWEEPS_PER_INTERVAL; i++) perSweep.push(hb.sweep())
  for (const c of clients) assert.equal(c.pings, 3)
  // 1000 connections over 100 sweeps: 10 each, never a burst.
  assert.ok(perSweep.every((n) => n === 10), `visits per sweep: ${[...new Set(perSweep)]}`)
})

test('a single connection is not pinged more often than the interval', () => {
  const c = peer()
  const hb = new Heartbeat(new Set([c]), INTERVAL)
  for (let i = 0; i < 5 * SWEEPS_PER_INTERVAL; i++) hb.sweep()
  assert.equal(c.pings, 5)
})

test('a peer that did not answer by its next visit is terminated; answering peers stay', () => {
  const silent = peer(false)
  const clients = new Set([peer(), silent, peer()])
  const hb = new Heartbeat(clients, INTERVAL)
  for (let i = 0; i < SWEEPS_PER_INTERVAL; i++) hb.sweep()
  assert.equal(silent.pings, 1)
  assert.equal(silent.terminated, false)
  for (let i = 0; i < SWEEPS_PER_INTERVAL; i++) hb.sweep()
  assert.equal(silent.terminated, true)
  for (const c of clients) if (c !== silent) assert.equal(c.terminated, false)
})

test('connections joining and leaving between sweeps are handled', () => {
  const clients = new Set(Array.from({ length: 100 }, () => peer()))
  const hb = new Heartbeat(clients, INTERVAL)
  const gone = [...clients].slice(0, 50)
  for (let i = 0; i < SWEEPS_PER_INTERVAL / 2; i++) hb.sweep()
  for (const c of gone) clients.delete(c)
  const joined = Array.from({ length: 50 }, () => peer())
  for (const c of joined) clients.add(c)
  for (let i = 0; i < 2 * SWEEPS_PER_INTERVAL; i++) hb.sweep()
  for (const c of clients) assert.ok(c.pings >= 1 && c.pings <= 3, `pinged ${c.pings} times in 2.5 intervals`)
})

test('an empty gateway sweeps nothing and owes nothing', () => {
  const clients = new Set()
  const hb = new Heartbeat(clients, INTERVAL)
  for (let i = 0; i < 1000; i++) assert.equal(hb.sweep(), 0)
  const c = peer()
  clients.add(c)
  hb.sweep()
  assert.equal(c.pings, 0, 'no burst of visits saved up while empty')
})
