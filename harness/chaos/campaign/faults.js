// The nemesis's hands: applies one planned fault (nemesis.js) to the
// campaign's stack and returns how to heal it. What each did, and the
// windows the readiness check compares /readyz against, go to the log.

import { execFileSync } from 'node:child_process'
import { Redis } from 'ioredis'
import { FAULTS } from './nemesis.js'
import { skewEnv } from './stack.js'

/**
 * @typedef {import('./nemesis.js').PlannedFault} PlannedFault
 * @typedef {import('./stack.js').CampaignStack} CampaignStack
 * @typedef {import('./checker.js').Window} Window
 * @typedef {object} AppliedFault
 * @property {PlannedFault} plan
 * @property {number} appliedAt
 * @property {number | null} healedAt
 * @property {string[]} notes what it did and measured
 * @property {string | null} error when applying or healing failed
 */

/**
 * What Node sees as its clock under `env` (libfaketime), against ours.
 *
 * @param {Record<string, string>} env
 * @returns {number} ms its Date.now() is ahead of ours
 */
export function measuredSkew (env) {
  const before = Date.now()
  const theirs = Number(execFileSync(process.execPath, ['-e', 'process.stdout.write(String(Date.now()))'], { env: { PATH: process.env.PATH ?? '', ...env } }))
  return Math.round(theirs - (before + Date.now()) / 2)
}

/**
 * An ioredis connection to the Redis primary as the stack has it now.
 *
 * @param {CampaignStack} stack
 */
async function primaryConnection (stack) {
  if (stack.redis) return new Redis({ host: '127.0.0.1', port: stack.redis.port, lazyConnect: true, maxRetriesPerRequest: 1 })
  const s = /** @type {NonNullable<CampaignStack['sentinel']>} */ (stack.sentinel)
  const port = await s.primary()
  return new Redis({ host: '127.0.0.1', port: port ?? 0, password: s.password, lazyConnect: true, maxRetriesPerRequest: 1 })
}

/**
 * Applies a fault; resolves once it is in force, with the heal to call
 * when its time is up.
 *
 * @param {PlannedFault} f
 * @param {CampaignStack} stack
 * @param {AppliedFault} rec notes are added to it
 * @returns {Promise<() => Promise<void>>}
 */
export async function applyFault (f, stack, rec) {
  const note = (/** @type {string} */ s) => rec.notes.push(s)
  const slot = f.role === 'redis' ? null : stack.slot(f.target)
  const proxy = () => {
    if (!slot?.proxy) throw new Error(`${f.kind} needs a proxied link (links variant)`)
    return slot.proxy
  }
  const handle = () => {
    if (!slot?.handle) throw new Error(`${f.target} is not running`)
    return slot.handle
  }
  switch (f.kind) {
    case 'kill': {
      await handle().kill()
      const s = /** @type {NonNullable<typeof slot>} */ (slot)
      s.handle = null
      return async () => { const t = Date.now(); await s.start(); note(`back ready in ${Date.now() - t} ms`) }
    }
    case 'pause': {
      const pid = handle().pid
      process.kill(pid, 'SIGSTOP')
      return async () => { process.kill(pid, 'SIGCONT') }
    }
    case 'drain': {
      const s = /** @type {NonNullable<typeof slot>} */ (slot)
      const t = Date.now()
      const { code, signal } = await handle().stop('SIGTERM')
      s.handle = null
      note(`exited (${code ?? signal}) ${Date.now() - t} ms after SIGTERM`)
      const t2 = Date.now()
      await s.start()
      note(`new one ready in ${Date.now() - t2} ms`)
      return async () => {}
    }
    case 'silence': await proxy().silence(); return () => proxy().heal()
    case 'slow': await proxy().slow(250); return () => proxy().heal()
    case 'reset': await proxy().resetPeer(); return () => proxy().heal()
    case 'pubsub': {
      const r = await primaryConnection(stack)
      try {
        await r.connect()
        note(`killed ${await r.client('KILL', 'TYPE', 'pubsub')} pub/sub connections`)
      } finally { r.disconnect() }
      return async () => {}
    }
    case 'failover': {
      const s = /** @type {NonNullable<CampaignStack['sentinel']>} */ (stack.sentinel)
      const t = Date.now()
      const old = await s.killPrimary()
      const now = await s.newPrimary(old)
      note(`primary ${old} killed, ${now} promoted ${Date.now() - t} ms later`)
      return async () => { await s.restart(old); note(`${old} back as a replica`) }
    }
    case 'switchover': {
      const s = /** @type {NonNullable<CampaignStack['sentinel']>} */ (stack.sentinel)
      const old = await s.primary()
      const c = new Redis({ host: '127.0.0.1', port: s.sentinelPorts[0], password: s.password, lazyConnect: true, maxRetriesPerRequest: 1 })
      const t = Date.now()
      try {
        await c.connect()
        await c.call('SENTINEL', 'FAILOVER', s.masterName)
      } finally { c.disconnect() }
      const now = await s.newPrimary(/** @type {number} */ (old))
      note(`SENTINEL FAILOVER: ${old} -> ${now} in ${Date.now() - t} ms`)
      return async () => { await s.healthy() }
    }
    case 'skew': {
      const s = /** @type {NonNullable<typeof slot>} */ (slot)
      const env = skewEnv(/** @type {number} */ (f.params.skewMs))
      await handle().stop('SIGTERM')
      s.handle = null
      await s.start(env)
      note(`restarted under FAKETIME=${env.FAKETIME}; node's Date.now() there is ${measuredSkew(env)} ms off ours`)
      return async () => {
        await handle().stop('SIGTERM')
        s.handle = null
        await s.start()
        note('restarted with the true clock')
      }
    }
  }
  throw new Error(`unknown fault ${f.kind}`)
}

/**
 * The readiness check's windows from the applied faults: when each
 * service's link was cut off, and when a service (or Redis as a whole) was
 * itself down, paused or restarting.
 *
 * @param {AppliedFault[]} applied
 * @param {number} endAt for a fault never healed
 * @returns {{cuts: Window[], own: Window[]}}
 */
export function faultWindows (applied, endAt) {
  /** @type {Window[]} */
  const cuts = []
  /** @type {Window[]} */
  const own = []
  for (const a of applied) {
    const w = { service: a.plan.role === 'redis' ? '*' : a.plan.target, from: a.appliedAt, to: a.healedAt ?? endAt, kind: a.plan.kind }
    if (FAULTS[a.plan.kind].link) cuts.push(w)
    else if (a.plan.kind !== 'slow') own.push(w)
  }
  return { cuts, own }
}
