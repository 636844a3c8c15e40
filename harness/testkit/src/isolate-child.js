// Child side of isolate.js: node isolate-child.js <module> <export> <params-json> <out-file>

import { writeFileSync } from 'node:fs'
import { pathToFileURL } from 'node:url'

const [modulePath, exportName, params, out] = process.argv.slice(2)
const mod = await import(pathToFileURL(modulePath).href)
const result = await mod[exportName](JSON.parse(params), (/** @type {string} */ line) => console.log(line))
writeFileSync(out, JSON.stringify(result))
process.exit(0)
