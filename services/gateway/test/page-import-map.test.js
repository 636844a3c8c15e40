// The page's import map (public/index.html) names every package the client
// modules import, the gateway serves what it maps to, and the page's CSP
// admits the map by its hash: a browser without any of the three would
// not load the client at all.
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { existsSync, readFileSync, readdirSync, realpathSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import Fastify from 'fastify'
import { BUNDLED_STATIC_DIR, VENDOR_PROTOBUF_DIR, VENDOR_PROTOBUF_PATH, registerHttpRoutes } from '../src/http-routes.js'

const page = readFileSync(join(BUNDLED_STATIC_DIR, 'index.html'), 'utf8')
const mapText = /** @type {string} */ (page.match(/<script type="importmap">(.*?)<\/script>/s)?.[1])
/** @type {Record<string, string>} */
const imports = JSON.parse(mapText).imports

/**
 * Every bare specifier the modules of a folder (and its subfolders) import.
 *
 * @param {string} dir
 * @returns {Set<string>}
 */
function bareImports (dir) {
  const found = new Set()
  for (const name of readdirSync(dir, { recursive: true })) {
    const file = join(dir, String(name))
    if (!file.endsWith('.js') || file.endsWith('node.js')) continue
    const text = readFileSync(realpathSync(file), 'utf8')
    for (const m of text.matchAll(/^(?:import|export)\b[^'"]*?from\s+['"]([^'"]+)['"]/gm)) if (!m[1].startsWith('.')) found.add(m[1])
  }
  return found
}

test('the import map names every package the client imports, and the files it maps to exist', () => {
  const client = join(BUNDLED_STATIC_DIR, 'client')
  assert.deepEqual([...bareImports(client)].sort(), Object.keys(imports).sort())
  for (const url of Object.values(imports)) {
    assert.ok(url.startsWith(`.${VENDOR_PROTOBUF_PATH}`), url)
    assert.ok(existsSync(join(VENDOR_PROTOBUF_DIR, url.slice(VENDOR_PROTOBUF_PATH.length + 1))), url)
  }
})

test('the page\'s CSP admits the import map by its hash', () => {
  const hash = createHash('sha256').update(mapText).digest('base64')
  const csp = /** @type {string} */ (page.match(/http-equiv="Content-Security-Policy" content="([^"]+)"/)?.[1])
  assert.match(csp, new RegExp(`script-src 'self' 'sha256-${hash.replace(/[+/=]/g, '\\$&')}'`))
})

test('the gateway serves the runtime at the mapped path', async (t) => {
  const app = Fastify()
  t.after(() => app.close())
  await registerHttpRoutes(app, { broker: () => ({ alive: true, aliveForMs: 0 }), readiness: () => ({}), registry: null, staticDir: '' })
  for (const url of Object.values(imports)) {
    const res = await app.inject({ url: url.slice(1) })
    assert.equal(res.statusCode, 200, url)
    assert.match(String(res.headers['content-type']), /javascript/)
  }
  const client = await app.inject({ url: '/client/gen/wsps.v1_pb.js' })
  assert.equal(client.statusCode, 200, 'the generated codecs beside the client')
})
