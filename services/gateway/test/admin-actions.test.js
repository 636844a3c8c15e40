import assert from 'node:assert/strict'
import { test } from 'node:test'
import pino from 'pino'
import { Disconnect } from '@wsps/protocol'
import { AdminActions } from '../src/admin-actions.js'
import { targetOf } from '../src/admin-routes.js'
import { DISTINCT } from '../src/delivery.js'

/** The stream and answer lists of admin-commands.js, in memory. */
function channel () {
  /** @type {{id: string, command: any}[]} */
  const stream = []
  /** @type {Map<string, any[]>} */
  const answers = new Map()
  let failNext = false
  return {
    stream,
    got: answers,
    failOnce () { failNext = true },
    /** @param {any} command */
    async send (command) {
      const id = `${stream.length + 1}-0`
      stream.push({ id, command })
      return id
    },
    async lastId () { return stream.at(-1)?.id ?? '0-0' },
    /** @param {string} after */
    async readAfter (after) {
      if (failNext) {
        failNext = false
        throw new Error('Redis away')
      }
      return stream.filter((e) => Number(e.id.split('-')[0]) > Number(after.split('-')[0]))
    },
    /** @param {string} id @param {any} answer */
    async answer (id, answer) { answers.set(id, [...(answers.get(id) ?? []), answer]) },
    /** @param {string} id */
    async answers (id) { return answers.get(id) ?? [] }
  }
}

/**
 * A connection as admin-actions reads it.
 *
 * @param {number} id
 * @param {string | null} user
 */
function conn (id, user) {
  return {
    id,
    user,
    userClass: 'nonpro',
    ip: '127.0.0.1',
    authed: true,
    open: true,
    bufferedAmount: 12,
    lag: { slowForMs: 0, skipped: 0 },
    resumes: { recovered: 3, notRecovered: 1 },
    subscriptions: { symbols: ['AAPL'], deliveryOf: () => DISTINCT, delayedOf: () => false, barCount: 0 },
    /** @type {any[]} */
    closes: [],
    /** @param {any} d */
    close (d) { this.closes.push(d); this.open = false }
  }
}

function setup () {
  const ch = channel()
  const clients = [conn(1, 'alice'), conn(2, 'bob'), conn(3, 'alice')]
  let drained = 0
  const actions = new AdminActions({
    channel: /** @type {any} */ (ch),
    node: 'gw-a',
    connections: /** @type {any} */ ({ matching: (/** @type {(c: any) => boolean} */ m) => clients.filter((c) => c.open && m(c)) }),
    onDrain: () => { drained++ },
    logger: pino({ level: 'silent' })
  })
  return { ch, clients, actions, drained: () => drained }
}

test('commands sent before it started are not acted on; later ones are, once each', async () => {
  const { ch, clients, actions } = setup()
  await ch.send({ action: 'disconnect', user: 'alice' })
  await actions.poll()
  assert.deepEqual(clients.map((c) => c.closes.length), [0, 0, 0])
  const id = await ch.send({ action: 'disconnect', user: 'alice' })
  await actions.poll()
  await actions.poll()
  assert.deepEqual(clients.map((c) => c.closes), [[Disconnect.OPERATOR_DISCONNECT], [], [Disconnect.OPERATOR_DISCONNECT]])
  assert.deepEqual(ch.got.get(id), [{ node: 'gw-a', matched: 2 }])
})

test('a command for another node is not answered; one connection by id on this node is', async () => {
  const { ch, clients, actions } = setup()
  await actions.poll()
  const other = await ch.send({ action: 'disconnect', node: 'gw-b', connection: 2 })
  const here = await ch.send({ action: 'disconnect', node: 'gw-a', connection: 2 })
  await actions.poll()
  assert.equal(ch.got.get(other), undefined)
  assert.deepEqual(ch.got.get(here), [{ node: 'gw-a', matched: 1 }])
  assert.deepEqual(clients.map((c) => c.closes.length), [0, 1, 0])
})

test('inspect describes the matched connections; a read that fails is retried at the next poll', async () => {
  const { ch, actions } = setup()
  await actions.poll()
  const id = await ch.send({ action: 'inspect', user: 'bob' })
  ch.failOnce()
  await actions.poll()
  assert.equal(ch.got.get(id), undefined)
  await actions.poll()
  assert.deepEqual(ch.got.get(id), [{ node: 'gw-a', matched: 1, connections: [{ id: 2, user: 'bob', class: 'nonpro', ip: '127.0.0.1', authed: true, symbols: [{ symbol: 'AAPL', mode: 'distinct', delayed: false }], bars: 0, bufferedBytes: 12, slowForMs: 0, skipped: 0, resumes: { recovered: 3, notRecovered: 1 } }] }])
})

test('drain answers first, then stops the process; an unknown action is answered as such', async () => {
  const { ch, actions, drained } = setup()
  await actions.poll()
  const id = await ch.send({ action: 'drain', node: 'gw-a' })
  const odd = await ch.send({ action: 'reboot' })
  await actions.poll()
  assert.deepEqual(ch.got.get(id), [{ node: 'gw-a', matched: 1 }])
  assert.equal(drained(), 1)
  assert.deepEqual(ch.got.get(odd), [{ node: 'gw-a', matched: 0, error: 'unknown action' }])
})

test('targetOf: a connection with its node, or a user; everything else is told', () => {
  assert.deepEqual(targetOf({ user: 'alice' }), { user: 'alice' })
  assert.deepEqual(targetOf({ node: 'gw-a', connection: 3 }), { node: 'gw-a', connection: 3 })
  assert.deepEqual(targetOf({ node: 'gw-a', user: 'alice' }), { node: 'gw-a', user: 'alice' })
  for (const [body, told] of /** @type {[unknown, RegExp][]} */ ([
    [null, /JSON object/],
    [[], /JSON object/],
    [{}, /name a connection/],
    [{ connection: 3 }, /name its node too/],
    [{ node: 'gw-a', connection: 0 }, /positive integer/],
    [{ node: 'gw-a', connection: '3' }, /positive integer/],
    [{ user: '' }, /non-empty/],
    [{ node: 5, user: 'a' }, /gateway's name/],
    [{ user: 'a', role: 'x' }, /unknown field "role"/]
  ])) assert.match(String(targetOf(body)), told, JSON.stringify(body))
})
