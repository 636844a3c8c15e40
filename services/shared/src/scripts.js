// Lua scripts that make the demand -> schedule -> fetch -> publish pipeline
// atomic. Registered on a connection with registerScripts(); ioredis sends
// EVALSHA and falls back to EVAL after a Redis restart flushed the script cache.

/**
 * Gateway lease renewal. KEYS: demand, due. ARGV: expiryMs, nowMs, symbols...
 * Extends each symbol's lease (never shortens one another gateway holds) and
 * makes a symbol nobody fetched yet due at once.
 */
const DEMAND = `
local expiry, now = ARGV[1], ARGV[2]
local lease, due = {}, {}
for i = 3, #ARGV do
  lease[#lease + 1] = expiry; lease[#lease + 1] = ARGV[i]
  due[#due + 1] = now; due[#due + 1] = ARGV[i]
end
if #lease > 0 then
  redis.call('ZADD', KEYS[1], 'GT', unpack(lease))
  redis.call('ZADD', KEYS[2], 'NX', unpack(due))
end
return #ARGV - 2
`

/**
 * The ventilator of the push/pull queue, run by every fetcher replica each
 * tick. Because it runs atomically, a due symbol is pushed exactly once per
 * interval no matter how many replicas tick.
 * KEYS: demand, due, jobs. ARGV: nowMs, intervalMs, batchSize, maxSymbols.
 * Returns {symbolsScheduled, jobsPushed, leasesExpired}.
 */
const SCHEDULE = `
local now, interval, batch, max = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
for i = 1, #expired, 1000 do
  redis.call('ZREM', KEYS[2], unpack(expired, i, math.min(i + 999, #expired)))
end
if #expired > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now) end
local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'WITHSCORES', 'LIMIT', 0, max)
local n = #due / 2
if n == 0 then return {0, 0, #expired} end
local nextDue, jobs, chunk = {}, 0, {}
for i = 1, #due, 2 do
  local sym, at = due[i], tonumber(due[i + 1])
  local nxt = at + interval
  if nxt <= now then nxt = now + interval end
  nextDue[#nextDue + 1] = nxt; nextDue[#nextDue + 1] = sym
  chunk[#chunk + 1] = sym
  if #chunk == batch or i + 1 == #due then
    redis.call('RPUSH', KEYS[3], cjson.encode({s = chunk, t = now}))
    jobs = jobs + 1
    chunk = {}
  end
end
for i = 1, #nextDue, 1000 do
  redis.call('ZADD', KEYS[2], unpack(nextDue, i, math.min(i + 999, #nextDue)))
end
return {n, jobs, #expired}
`

/**
 * Publishes one quote. KEYS: seq, latest. ARGV: channel, quote JSON without
 * seq (starts with '{"symbol"'), ttlMs, floorSeq, sharded (0/1).
 * seq = INCR, but never at or below floorSeq: the fetcher passes the last seq
 * it knows, so a Redis restart that lost the counter does not rewind it.
 * Returns the seq.
 */
const PUBLISH = `
local seq = redis.call('INCR', KEYS[1])
local floor = tonumber(ARGV[4])
if seq <= floor then
  seq = floor + 1
  redis.call('SET', KEYS[1], seq)
end
local msg = '{"seq":' .. seq .. ',' .. string.sub(ARGV[2], 2)
redis.call('SET', KEYS[2], msg, 'PX', ARGV[3])
if ARGV[5] == '1' then redis.call('SPUBLISH', ARGV[1], msg) else redis.call('PUBLISH', ARGV[1], msg) end
return seq
`

/**
 * @typedef {import('ioredis').Redis & {
 *   wspsDemand(demand: string, due: string, expiry: number, now: number, ...symbols: string[]): Promise<number>,
 *   wspsSchedule(demand: string, due: string, jobs: string, now: number, interval: number, batch: number, max: number): Promise<[number, number, number]>,
 *   wspsPublish(seq: string, latest: string, channel: string, body: string, ttlMs: number, floor: number, sharded: 0 | 1): Promise<number>
 * }} ScriptedRedis
 */

/**
 * @param {import('./redis.js').RedisClient} client a single Redis or a Cluster (typed as the former)
 * @returns {ScriptedRedis}
 */
export function registerScripts (client) {
  client.defineCommand('wspsDemand', { numberOfKeys: 2, lua: DEMAND })
  client.defineCommand('wspsSchedule', { numberOfKeys: 3, lua: SCHEDULE })
  client.defineCommand('wspsPublish', { numberOfKeys: 2, lua: PUBLISH })
  return /** @type {ScriptedRedis} */ (client)
}
