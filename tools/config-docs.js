#!/usr/bin/env node
// Writes the settings tables of docs/configuration.md from the services'
// schemas (the one place settings are declared). `--check` fails instead of
// writing when the file is stale; `make test` runs it that way.

import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { markdownTable } from '../services/shared/src/config.js'
import { gatewaySettings } from '../services/gateway/src/config.js'
import { fetcherSettings } from '../services/quote-fetcher/src/config.js'

const file = fileURLToPath(new URL('../docs/configuration.md', import.meta.url))
const start = '<!-- generated:settings:start -->'
const end = '<!-- generated:settings:end -->'

// Defaults that depend on the machine are shown by what they mean.
/** @param {readonly import('../services/shared/src/config.js').Setting[]} schema */
const portable = (schema) => schema.map((s) => (s.key === 'nodeName' ? { ...s, default: '(host name)' } : s))

const generated = [
  start,
  '',
  '### Gateway (`services/gateway`)',
  '',
  markdownTable(portable(gatewaySettings)),
  '',
  '### Quote-fetcher (`services/quote-fetcher`)',
  '',
  markdownTable(portable(fetcherSettings)),
  '',
  end
].join('\n')

const current = readFileSync(file, 'utf8')
const from = current.indexOf(start)
const to = current.indexOf(end)
if (from === -1 || to === -1) {
  console.error(`${file}: markers ${start} / ${end} not found`)
  process.exit(1)
}
const next = current.slice(0, from) + generated + current.slice(to + end.length)
if (process.argv.includes('--check')) {
  if (next !== current) {
    console.error('docs/configuration.md is stale: run `node tools/config-docs.js` and commit it')
    process.exit(1)
  }
} else if (next !== current) {
  writeFileSync(file, next)
  console.log('docs/configuration.md updated')
}
