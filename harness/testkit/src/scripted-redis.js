// A test file's redis-server and one client with the wsps scripts loaded,
// started before its tests and stopped after them: the set-up the script
// tests (queue, history retire, stream slots) share.

import { after, before } from 'node:test'
import { Redis } from 'ioredis'
import { registerScripts } from '@wsps/shared/scripts'
import { startRedis } from './redis.js'

/**
 * Registers the file's before/after hooks; read `r` and `redis` inside tests.
 *
 * @returns {{readonly redis: Awaited<ReturnType<typeof startRedis>>, readonly r: import('@wsps/shared/scripts').ScriptedRedis}}
 */
export function useScriptedRedis () {
  /** @type {Awaited<ReturnType<typeof startRedis>> | undefined} */
  let redis
  /** @type {import('@wsps/shared/scripts').ScriptedRedis | undefined} */
  let r
  before(async () => {
    redis = await startRedis()
    r = registerScripts(new Redis(redis.url))
  })
  after(async () => {
    r?.disconnect()
    await redis?.close()
  })
  const started = () => {
    if (redis === undefined || r === undefined) throw new Error('useScriptedRedis: read it inside a test (the before hook starts it)')
    return { redis, r }
  }
  return {
    get redis () { return started().redis },
    get r () { return started().r }
  }
}
