import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { loadGatewayConfig } from '../src/config.js'
import { usableCpus, workerCount } from '../src/workers.js'

const dir = mkdtempSync(join(tmpdir(), 'wsps-workers-'))
/** @param {string} text a cgroup v2 cpu.max */
const cpuMax = (text) => {
  const file = join(dir, `cpu.max-${Math.random()}`)
  writeFileSync(file, text)
  return file
}

test('auto: the CPUs this process may use, capped by a cgroup CPU quota (rounded up), at least 1', () => {
  const cpus = availableParallelism()
  assert.equal(usableCpus(cpuMax('max 100000\n')), cpus)
  assert.equal(usableCpus(cpuMax('100000 100000\n')), 1)
  assert.equal(usableCpus(cpuMax('150000 100000\n')), Math.min(cpus, 2))
  assert.equal(usableCpus(cpuMax('1000 100000\n')), 1)
  assert.equal(usableCpus(join(dir, 'absent')), cpus)
  assert.equal(workerCount('3'), 3)
})

test('WSPS_WORKERS takes 1-64 or auto; anything else is a config error', () => {
  assert.equal(loadGatewayConfig({}).workers, '1')
  for (const ok of ['1', '2', '64', 'auto']) assert.equal(loadGatewayConfig({ WSPS_WORKERS: ok }).workers, ok)
  for (const bad of ['0', '65', '-1', 'two', '1.5', '08']) assert.throws(() => loadGatewayConfig({ WSPS_WORKERS: bad }), /WSPS_WORKERS/, bad)
})
