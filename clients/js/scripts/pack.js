#!/usr/bin/env node
// Packs @wsps/client into an npm tarball a user installs as it is.
//
//   node clients/js/scripts/pack.js [--out DIR]   (default: artifacts/)
//   node clients/js/scripts/pack.js --guard       (the package's prepack)
//
// Why not a plain `npm pack` in clients/js: the package's protocol.js and
// receiver.js are links to services/protocol (the one wire contract; the
// gateway serves the same links to the page), and npm pack leaves links
// out. So the package is staged in a temporary folder with the links
// resolved into files, its TypeScript declarations are generated there
// from the JSDoc (`tsc --declaration --emitDeclarationOnly`, into types/;
// they are never checked in), and npm pack packs the stage. The prepack
// guard stops a plain `npm pack` in clients/js from making a tarball
// without them.
//
// Prints npm pack's JSON report of the tarball (file name, file list).

import { execFileSync } from 'node:child_process'
import { copyFileSync, cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'

const PACKAGE_DIR = resolve(import.meta.dirname, '..')
const REPO = resolve(PACKAGE_DIR, '../..')
/** The license, when the repository has one, goes in beside the package's README. */
const LICENSE = ['LICENSE', 'LICENSE.md', 'LICENSE.txt']
/** The modules with an entry in package.json "exports": their declarations pull in the rest. */
const ENTRY_POINTS = ['index.js', 'node.js', 'sse-socket.js', 'protocol.js']

const { values: args } = parseArgs({
  options: {
    out: { type: 'string', default: join(REPO, 'artifacts') },
    guard: { type: 'boolean', default: false }
  }
})

if (args.guard) {
  if (lstatSync(join(PACKAGE_DIR, 'src/protocol.js')).isSymbolicLink()) {
    console.error('@wsps/client: pack it with `npm run pack:tarball -w @wsps/client` (or `make client-js-pack`): ' +
      'src/protocol.js and src/receiver.js are links into services/protocol, which a plain npm pack leaves out')
    process.exit(1)
  }
  process.exit(0)
}

const stage = mkdtempSync(join(tmpdir(), 'wsps-client-pack-'))
try {
  const manifest = JSON.parse(readFileSync(join(PACKAGE_DIR, 'package.json'), 'utf8'))
  // The scripts pack from the repository; a user installing the tarball has no use for them.
  delete manifest.scripts
  writeFileSync(join(stage, 'package.json'), JSON.stringify(manifest, null, 2) + '\n')
  copyFileSync(join(PACKAGE_DIR, 'README.md'), join(stage, 'README.md'))
  for (const name of LICENSE) {
    if (existsSync(join(REPO, name))) copyFileSync(join(REPO, name), join(stage, name))
  }
  // File by file: cpSync's `dereference` resolves only its top-level source, not the links inside a folder.
  // A linked folder (gen/, the generated Protobuf codecs) is copied whole from where it really is.
  mkdirSync(join(stage, 'src'))
  for (const name of readdirSync(join(PACKAGE_DIR, 'src'))) {
    const real = realpathSync(join(PACKAGE_DIR, 'src', name))
    if (lstatSync(real).isDirectory()) cpSync(real, join(stage, 'src', name), { recursive: true })
    else copyFileSync(real, join(stage, 'src', name))
  }

  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
  execFileSync(process.execPath, [tsc,
    '--allowJs', '--declaration', '--emitDeclarationOnly',
    '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', '--lib', 'es2022,dom',
    '--skipLibCheck', '--strict',
    '--rootDir', join(stage, 'src'), '--outDir', join(stage, 'types'),
    ...ENTRY_POINTS.map((f) => join(stage, 'src', f))
  ], { stdio: 'inherit' })
  // The generated codecs come with their declarations, which tsc does not emit again.
  if (existsSync(join(stage, 'src/gen'))) {
    mkdirSync(join(stage, 'types/gen'), { recursive: true })
    for (const name of readdirSync(join(stage, 'src/gen')).filter((f) => f.endsWith('.d.ts'))) copyFileSync(join(stage, 'src/gen', name), join(stage, 'types/gen', name))
  }

  mkdirSync(args.out, { recursive: true })
  // From inside the stage: npm would otherwise find the repository's workspaces around the current folder.
  const report = execFileSync('npm', ['pack', '--json', '--pack-destination', resolve(args.out)], { cwd: stage, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })
  process.stdout.write(report)
} finally {
  rmSync(stage, { recursive: true, force: true })
}

