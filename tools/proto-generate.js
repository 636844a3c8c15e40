#!/usr/bin/env node
// Generates the Protobuf codecs of services/protocol/wsps.v1.proto into
// services/protocol/gen/ (JavaScript and its .d.ts, @bufbuild/protobuf v2),
// with the buf and protoc-gen-es that npm installed: offline, no remote
// plugin. `--check` generates into a temporary folder and fails when the
// checked-in files differ (make test-static runs it that way), so the code
// never drifts from the contract nor is edited by hand.

import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, mkdirSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'

const REPO = resolve(import.meta.dirname, '..')
const PROTO_DIR = join(REPO, 'services/protocol')
const OUT = join(PROTO_DIR, 'gen')
const BIN = join(REPO, 'node_modules/.bin')

const { values: args } = parseArgs({ options: { check: { type: 'boolean', default: false } } })

const stage = mkdtempSync(join(tmpdir(), 'wsps-proto-'))
try {
  const template = {
    version: 'v2',
    plugins: [{
      local: join(BIN, 'protoc-gen-es'),
      out: stage,
      // js+dts: plain ESM for Node, browsers and k6, typed for tsc --checkJs.
      opt: ['target=js+dts', 'import_extension=js']
    }]
  }
  execFileSync(join(BIN, 'buf'), ['generate', '--template', JSON.stringify(template), '--path', 'wsps.v1.proto'], {
    cwd: PROTO_DIR,
    stdio: ['ignore', 'inherit', 'inherit']
  })
  const made = readdirSync(stage).sort()
  if (args.check) {
    const stale = made.filter((f) => !existsSync(join(OUT, f)) || readFileSync(join(OUT, f), 'utf8') !== readFileSync(join(stage, f), 'utf8'))
    const extra = existsSync(OUT) ? readdirSync(OUT).filter((f) => !made.includes(f)) : []
    if (stale.length || extra.length) {
      console.error(`services/protocol/gen is stale (${[...stale, ...extra].join(', ')}): run node tools/proto-generate.js and commit the result`)
      process.exit(1)
    }
    console.log('services/protocol/gen: up to date')
  } else {
    rmSync(OUT, { recursive: true, force: true })
    mkdirSync(OUT)
    for (const f of made) writeFileSync(join(OUT, f), readFileSync(join(stage, f)))
    console.log(`services/protocol/gen: wrote ${made.join(', ')}`)
  }
} finally {
  rmSync(stage, { recursive: true, force: true })
}
