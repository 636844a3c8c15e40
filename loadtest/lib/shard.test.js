// Tests of the pure parts of ../shard.js (address ranges, the split, reading summaries).
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { expandIps, planShards, readSummaries } from '../shard.js'

test('expandIps reads ranges, short ranges and lists', () => {
  assert.deepEqual(expandIps('127.0.0.2-127.0.0.4'), ['127.0.0.2', '127.0.0.3', '127.0.0.4'])
  assert.deepEqual(expandIps('127.0.0.8-9,127.0.1.1'), ['127.0.0.8', '127.0.0.9', '127.0.1.1'])
  assert.deepEqual(expandIps('127.0.0.255-127.0.1.0'), ['127.0.0.255', '127.0.1.0'])
  assert.throws(() => expandIps('127.0.0.9-127.0.0.2'), /bad address range/)
  assert.throws(() => expandIps('localhost'), /not an IPv4/)
})

test('planShards splits the target exactly and gives each shard its own addresses', () => {
  const ips = expandIps('127.0.0.2-127.0.0.9')
  const plan = planShards(40001, 4, ips)
  assert.deepEqual(plan.map((p) => p.target), [10001, 10000, 10000, 10000])
  assert.deepEqual(plan[0].ips, ['127.0.0.2', '127.0.0.6'])
  assert.equal(new Set(plan.flatMap((p) => p.ips)).size, 8)
  const few = planShards(10, 3, ['127.0.0.2'])
  assert.deepEqual(few.map((p) => p.ips), [['127.0.0.2'], ['127.0.0.2'], ['127.0.0.2']])
  assert.throws(() => planShards(10, 0, ips), /at least 1/)
})

test('readSummaries takes summary.json files and logs with WSPS_SUMMARY lines', () => {
  const dir = mkdtempSync(join(tmpdir(), 'wsps-shard-'))
  try {
    writeFileSync(join(dir, 'summary.json'), JSON.stringify({ version: 1, shards: 1 }))
    writeFileSync(join(dir, 'pods.log'), 'k6 noise\nWSPS_SUMMARY {"version":1,"shards":1,"n":1}\nmore\nWSPS_SUMMARY {"version":1,"shards":1,"n":2}\n')
    const list = readSummaries([join(dir, 'summary.json'), join(dir, 'pods.log')])
    assert.equal(list.length, 3)
    assert.deepEqual(list.map((s) => s.n), [undefined, 1, 2])
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
