// The services' error codes are defined once (their errors.js) and
// docs/operations.md lists exactly those: no code spelled anywhere else in
// the services' sources, none documented that the code does not have.
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { Code as Shared } from '@wsps/shared/errors'
import { Code as Fetcher } from '../src/errors.js'

const SERVICES = fileURLToPath(new URL('../../', import.meta.url))
const REGISTRIES = ['shared/src/errors.js', 'quote-fetcher/src/errors.js']

/** @param {string} dir @returns {string[]} */
const sources = (dir) => readdirSync(dir, { withFileTypes: true, recursive: true })
  .filter((e) => e.isFile() && e.name.endsWith('.js') && !e.parentPath.includes('node_modules') && !e.parentPath.includes('/test'))
  .map((e) => join(e.parentPath, e.name))

test('docs/operations.md lists every error code of the registries, and no other', () => {
  const doc = readFileSync(new URL('../../../docs/operations.md', import.meta.url), 'utf8')
  const table = doc.slice(doc.indexOf('### Error codes in the logs'), doc.indexOf('## Failure modes'))
  const documented = [...table.matchAll(/^\| `(WSPS_ERR_[A-Z_]+)` \| (both|quote-fetcher) \|/gm)].map((m) => `${m[1]} ${m[2]}`)
  const defined = [...Object.values(Shared).map((c) => `${c} both`), ...Object.values(Fetcher).map((c) => `${c} quote-fetcher`)]
  assert.deepEqual(documented.sort(), defined.sort())
})

test('no service source spells a WSPS_ERR_ code outside the registries (settings\' docs excepted)', () => {
  /** @type {string[]} */
  const spelled = []
  for (const file of sources(SERVICES)) {
    const rel = file.slice(SERVICES.length)
    if (REGISTRIES.includes(rel) || rel === 'shared/src/common-settings.js') continue
    const text = readFileSync(file, 'utf8')
    for (const m of text.matchAll(/['"`]WSPS_ERR_[A-Z_]+['"`]/g)) spelled.push(`${rel}: ${m[0]}`)
  }
  assert.deepEqual(spelled, [])
})
