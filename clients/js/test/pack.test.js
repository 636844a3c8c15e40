// The tarball a user installs: packed the way `make client-js-pack` packs it,
// holding exactly its modules, their declarations, the README (and a
// license when the repository has one); installed offline into a scratch
// project, imported in Node and type-checked against.

import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { after, before, describe, it } from 'node:test'

const PACKAGE_DIR = resolve(import.meta.dirname, '..')
const REPO = resolve(PACKAGE_DIR, '../..')
const manifest = JSON.parse(readFileSync(join(PACKAGE_DIR, 'package.json'), 'utf8'))
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')

/**
 * @param {string} cwd
 * @param {string} file
 * @param {string[]} args
 */
function run (cwd, file, args) {
  return execFileSync(file, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
}

/** @param {unknown} value @returns {string[]} every path in an "exports" value */
function targets (value) {
  if (typeof value === 'string') return [value]
  return Object.values(/** @type {object} */ (value)).flatMap(targets)
}

describe('npm pack of @wsps/client', () => {
  const work = mkdtempSync(join(tmpdir(), 'wsps-client-test-'))
  /** @type {{filename: string, files: {path: string}[]}} */
  let report
  /** @type {string} */
  let tarball
  const scratch = join(work, 'scratch')

  before(() => {
    report = JSON.parse(run(REPO, process.execPath, [join(PACKAGE_DIR, 'scripts/pack.js'), '--out', work]))[0]
    tarball = join(work, report.filename)
  })
  after(() => rmSync(work, { recursive: true, force: true }))

  it('holds the modules, a declaration for each, the README, and nothing else', () => {
    const modules = readdirSync(join(PACKAGE_DIR, 'src')).filter((f) => f.endsWith('.js'))
    const license = ['LICENSE', 'LICENSE.md', 'LICENSE.txt'].filter((f) => existsSync(join(REPO, f)))
    const generated = readdirSync(join(PACKAGE_DIR, 'src/gen'))
    const want = ['package.json', 'README.md', ...license,
      ...modules.map((m) => `src/${m}`),
      ...modules.map((m) => `types/${m.replace(/\.js$/, '.d.ts')}`),
      ...generated.map((g) => `src/gen/${g}`),
      ...generated.filter((g) => g.endsWith('.d.ts')).map((g) => `types/gen/${g}`)]
    assert.deepEqual(report.files.map((f) => f.path).sort(), want.sort())
    assert.ok(modules.includes('protocol.js') && modules.includes('receiver.js') && modules.includes('proto-codec.js'), 'the wire contract goes in as files')
  })

  it('has every "exports" target, no scripts, and one dependency: the Protobuf runtime', () => {
    const packed = new Set(report.files.map((f) => f.path))
    for (const target of targets(manifest.exports)) assert.ok(packed.has(target.replace(/^\.\//, '')), `${target} is in the tarball`)
    const inside = JSON.parse(execFileSync('tar', ['-xOzf', tarball, 'package/package.json'], { encoding: 'utf8' }))
    assert.equal(inside.scripts, undefined)
    assert.deepEqual(inside.dependencies, { '@bufbuild/protobuf': manifest.dependencies['@bufbuild/protobuf'] }, 'the generated codecs\' runtime, pinned, and nothing else')
    assert.deepEqual(inside.peerDependenciesMeta, { ws: { optional: true } })
  })

  it('the browser entry imports nothing outside the package but the Protobuf runtime', () => {
    const tree = mkdtempSync(join(work, 'tree-'))
    execFileSync('tar', ['-xzf', tarball, '-C', tree])
    for (const file of readdirSync(join(tree, 'package/src'), { recursive: true }).map(String)) {
      if (file === 'node.js' || !file.endsWith('.js')) continue // the Node entry, which looks for ws
      const text = readFileSync(join(tree, 'package/src', file), 'utf8')
      const specifiers = [...text.matchAll(/^(?:import|export)\b[^'"]*?from\s+['"]([^'"]+)['"]/gm)].map((m) => m[1])
      for (const s of specifiers) assert.match(s, /^(\.\/|@bufbuild\/protobuf(\/wire|\/codegenv2)?$)/, `${file} imports ${s}`)
    }
  })

  it('installs offline into a scratch project, and Node imports every entry point', () => {
    execFileSync('mkdir', ['-p', scratch])
    writeFileSync(join(scratch, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module' }))
    run(scratch, 'npm', ['install', '--offline', '--no-audit', '--no-fund', tarball])
    const out = run(scratch, process.execPath, ['--input-type=module', '-e', `
      import { WspsClient, Status, CloseCode, ErrorCode, NO_RECONNECT_CODES } from '@wsps/client'
      import * as browser from '@wsps/client/browser'
      import { SseParser } from '@wsps/client/sse'
      import { PROTOCOL_VERSION } from '@wsps/client/protocol'
      const client = new WspsClient({ url: 'ws://127.0.0.1:9/ws' })
      console.log(JSON.stringify({
        status: client.status.state, idle: Status.IDLE, restart: CloseCode.SERVICE_RESTART, code: ErrorCode.BAD_SYMBOL,
        noReconnect: NO_RECONNECT_CODES, browser: typeof browser.WspsClient, sse: typeof SseParser, v: PROTOCOL_VERSION
      }))`])
    assert.deepEqual(JSON.parse(out), {
      status: 'idle', idle: 'idle', restart: 1012, code: 'BAD_SYMBOL', noReconnect: [1000, 4010, 4011, 4012, 4001, 4002, 4003], browser: 'function', sse: 'function', v: 1
    })
  })

  it('type-checks a TypeScript program against its declarations, and they are not `any`', () => {
    writeFileSync(join(scratch, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', lib: ['es2022', 'dom'], types: [], strict: true, noEmit: true },
      files: ['use.ts']
    }))
    writeFileSync(join(scratch, 'use.ts'), `
      import { WspsClient, ErrorCode, type Quote, type QuoteEvent, type WspsClientOptions } from '@wsps/client'
      import { SseParser } from '@wsps/client/sse'
      const options: WspsClientOptions = { url: ['ws://a/ws', 'ws://b/ws'], getToken: async () => 'jwt', transport: 'auto' }
      const client = new WspsClient(options)
      client.on('quote', (e: QuoteEvent) => { const q: Quote = e.quote; console.log(q.last + q.seq, e.snapshot) })
      client.on('recovery', ({ symbol, recovered }) => console.log(symbol, recovered === true))
      void client.subscribe(['AAPL'], { mode: 'distinct' }).then((r) => { if (!r.ok) console.log(r.error.code === ErrorCode.BAD_SYMBOL) })
      void client.subscribe(['MSFT'], { maxRate: 1 })
      new SseParser()
      // @ts-expect-error the modes are typed
      void client.subscribe(['AAPL'], { mode: 'every' })
      // @ts-expect-error the events are typed
      client.on('quotes', () => {})
      // @ts-expect-error a quote's fields are typed
      const wrong: string = client.quote('AAPL')?.last
      console.log(wrong)
    `)
    // Throws (with tsc's report) on any error, an unused @ts-expect-error included.
    try {
      run(scratch, process.execPath, [tsc, '-p', 'tsconfig.json'])
    } catch (err) {
      assert.fail(`tsc: ${/** @type {{stdout: string}} */ (err).stdout}`)
    }
  })
})
