// tools/vendor.sh: where a clean clone finds the vendored archives (the F5
// NGINX Ingress Controller's, which the e2e cluster builds). A clone made
// under mktemp -d has no shared folder beside it; it must still find the one
// beside the work tree it was cloned from, or the machine's cached copy, and
// it must refuse an archive whose checksum is wrong wherever it was found.
import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { fileURLToPath } from 'node:url'

const SCRIPT = fileURLToPath(new URL('../../../tools/vendor.sh', import.meta.url))
const NAME = 'some-release-1.0.0.tar.gz'
const BYTES = 'the vendored release\n'
const SUM = createHash('sha256').update(BYTES).digest('hex')

const base = mkdtempSync(join(tmpdir(), 'wsps-vendor-'))
after(() => rmSync(base, { recursive: true, force: true }))

/**
 * A work tree at base/<dir>/<tree> with tools/vendor.sh, optionally a clone of another.
 * @param {string} path
 * @param {string} [origin] the work tree it is cloned from
 */
function tree (path, origin) {
  const root = join(base, path)
  mkdirSync(join(root, 'tools'), { recursive: true })
  cpSync(SCRIPT, join(root, 'tools/vendor.sh'))
  execFileSync('git', ['init', '-q', root])
  if (origin) execFileSync('git', ['-C', root, 'remote', 'add', 'origin', join(base, origin)])
  return root
}

/**
 * @param {string} root
 * @param {string} sum
 * @param {Record<string, string>} [env]
 */
function run (root, sum, env = {}) {
  const r = spawnSync(join(root, 'tools/vendor.sh'), [NAME, sum], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, HOME: base, WSPS_CACHE: join(base, 'cache'), ...env }
  })
  return { code: r.status, out: r.stdout.trim(), err: r.stderr }
}

test('a clone with no shared folder beside it finds the one beside its origin, and the cache keeps a copy', () => {
  mkdirSync(join(base, 'work/shared/vendor'), { recursive: true })
  writeFileSync(join(base, 'work/shared/vendor', NAME), BYTES)
  tree('work/main')
  const clone = tree('elsewhere/x', 'work/main')
  const r = run(clone, SUM)
  assert.equal(r.code, 0, r.err)
  assert.equal(r.out, join(base, 'cache/vendor', NAME))
  assert.equal(readFileSync(r.out, 'utf8'), BYTES)

  // With the folder gone, a clone with no origin at all still has the cached copy.
  rmSync(join(base, 'work/shared'), { recursive: true })
  const orphan = tree('orphan/y')
  assert.equal(run(orphan, SUM).out, join(base, 'cache/vendor', NAME))
})

test('a wrong checksum is refused, naming the file and both sums; a missing archive names every folder tried', () => {
  const dir = join(base, 'bad')
  mkdirSync(dir)
  writeFileSync(join(dir, NAME), 'truncated')
  const root = tree('checks/z')
  const wrong = run(root, SUM, { WSPS_VENDOR_DIR: dir })
  assert.notEqual(wrong.code, 0)
  assert.match(wrong.err, new RegExp(`${dir}/${NAME}: sha256 [0-9a-f]{64}, tools/versions.env wants ${SUM}`))

  const missing = run(root, SUM.replace(/^./, '0'), { WSPS_CACHE: join(base, 'empty-cache') })
  assert.notEqual(missing.code, 0)
  assert.match(missing.err, new RegExp(`no ${NAME} in ${join(base, 'checks/shared/vendor')} ${join(base, 'empty-cache/vendor')}`))
  assert.ok(!existsSync(join(base, 'empty-cache/vendor', NAME)))
})
