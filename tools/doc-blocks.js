#!/usr/bin/env node
// Executed docs: the shell blocks of the README and docs/ are run (or at
// least parsed), so a documented command that drifts from the code fails
// `make test` (tools/test-up.sh runs this against `make up`'s stack).
//
// Every ```sh (bash, shell, console: commands without prompts) block carries a mark after the language:
//
//   ```sh test:up        run against `make up`, from the repository root
//   ```sh test:auth      run against `make up AUTH=hs256`
//   ```sh test:syntax    only parsed (`bash -n`): a cluster, a vendor, a placeholder
//
// An unlabeled block whose first line starts like a command (`make `,
// `curl `, ...) counts as a shell block without its mark.
//
// plus, for a block that does not end by itself (a stream, a socket):
//
//   ```sh test:up stream  started, and stopped once it printed what it must
//
// What a block must print is written in the block, as a reader sees it: a
// comment line `# => text` (the output must contain `text`). A block must
// exit 0 (`stream`: print every `# =>` text, or at least one line, in time).
// The blocks of one file run in order and share their shell variables
// (`TOKEN=...` in one block is there in the next), as they would in the
// reader's terminal.
//
//   node tools/doc-blocks.js check          every block marked, and parses
//   node tools/doc-blocks.js run up         run the test:up blocks
//   node tools/doc-blocks.js run auth       run the test:auth blocks

import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const SHELLS = new Set(['sh', 'bash', 'shell', 'console'])
const MARKS = new Set(['test:up', 'test:auth', 'test:syntax'])
// An unlabeled block that starts like a command is a shell block without its
// language (it would escape the checks): it must be labeled too.
const LOOKS_LIKE_SHELL = /^(make|node|npm|curl|k6|helm|kubectl|kustomize|export|sudo|apt-get) /
const BLOCK_TIMEOUT_MS = 60_000
const STREAM_TIMEOUT_MS = 20_000

/**
 * @typedef {object} Block
 * @property {string} file path relative to the repository
 * @property {number} line of the opening fence
 * @property {string | undefined} mark test:up, test:auth, test:syntax
 * @property {boolean} stream
 * @property {string} code
 * @property {string[]} expect texts of its `# =>` lines
 */

/** The documents whose shell blocks are checked. */
export function documents (root = ROOT) {
  const docs = ['README.md', 'charts/wsps/README.md', 'charts/wsps/README.md.gotmpl', 'kustomize/README.md']
  /** @param {string} dir */
  const walk = (dir) => {
    for (const e of readdirSync(join(root, dir), { withFileTypes: true })) {
      const p = join(dir, e.name)
      if (e.isDirectory()) walk(p)
      else if (e.name.endsWith('.md')) docs.push(p)
    }
  }
  walk('docs')
  return docs.filter((d) => {
    try { readFileSync(join(root, d)); return true } catch { return false }
  })
}

/**
 * The shell blocks of one markdown text.
 *
 * @param {string} file
 * @param {string} text
 * @returns {Block[]}
 */
export function shellBlocks (file, text) {
  /** @type {Block[]} */
  const out = []
  const lines = text.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*(\S.*)?$/.exec(lines[i])
    if (!open) continue
    const [, indent, fence, info = ''] = open
    let j = i + 1
    while (j < lines.length && !(lines[j].startsWith(indent + fence) && lines[j].trim() === fence)) j++
    const words = info.trim().split(/\s+/)
    const unlabeledShell = info.trim() === '' && LOOKS_LIKE_SHELL.test(lines[i + 1]?.trim() ?? '')
    if (SHELLS.has(words[0]) || unlabeledShell) {
      const code = lines.slice(i + 1, j).map((l) => l.startsWith(indent) ? l.slice(indent.length) : l).join('\n')
      out.push({
        file,
        line: i + 1,
        mark: words.find((w) => MARKS.has(w)),
        stream: words.includes('stream'),
        code,
        expect: [...code.matchAll(/^\s*# => (.+)$/gm)].map((m) => m[1].trim())
      })
    }
    i = j
  }
  return out
}

/** @param {string} root */
function allBlocks (root) {
  return documents(root).flatMap((d) => shellBlocks(d, readFileSync(join(root, d), 'utf8')))
}

/**
 * Every block marked and parsed by bash.
 *
 * @param {string} root
 * @returns {string[]} problems
 */
export function check (root = ROOT) {
  /** @type {string[]} */
  const problems = []
  for (const b of allBlocks(root)) {
    const where = `${b.file}:${b.line}`
    if (!b.mark) problems.push(`${where}: shell block without a mark (\`\`\`sh test:up, test:auth or test:syntax)`)
    const r = spawnSync('bash', ['-n'], { input: b.code, encoding: 'utf8' })
    if (r.status !== 0) problems.push(`${where}: bash -n: ${r.stderr.trim()}`)
  }
  return problems
}

/**
 * Runs one block in bash with the file's shell variables so far (stateFile)
 * and saves them back after it.
 *
 * @param {Block} b
 * @param {string} root
 * @param {string} stateFile
 * @returns {Promise<{ok: boolean, why?: string, output: string, ms: number}>}
 */
function runBlock (b, root, stateFile) {
  const state = JSON.stringify(stateFile)
  const script = [
    'set -o errexit -o pipefail -o allexport',
    `if [[ -f ${state} ]]; then . ${state}; fi`,
    // the variables for the file's next blocks, also when a stream block is
    // stopped (readonly ones cannot be set again)
    `trap 'export -p | grep -v -E "^declare -[a-zA-Z]*r" > ${state}' EXIT`,
    "trap 'exit 143' TERM",
    b.code
  ].join('\n')
  const t0 = Date.now()
  return new Promise((resolve) => {
    const child = spawn('bash', ['-c', script], { cwd: root, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    /** @type {{ok: boolean, why?: string, ms: number} | null} */
    let verdict = null
    const missing = () => b.expect.filter((e) => !output.includes(e))
    // The verdict is given once; the block's shell and whatever it started
    // are then stopped (as a process group), and the promise settles when the
    // shell is gone (its EXIT trap has saved the variables by then).
    /** @param {boolean} ok @param {string} [why] */
    const finish = (ok, why) => {
      if (verdict) return
      verdict = { ok, why, ms: Date.now() - t0 }
      clearTimeout(timer)
      try { process.kill(-/** @type {number} */ (child.pid), 'SIGTERM') } catch {}
      setTimeout(() => { try { process.kill(-/** @type {number} */ (child.pid), 'SIGKILL') } catch {} }, 5000).unref()
    }
    /** @param {Buffer} d */
    const take = (d) => {
      output += d
      if (b.stream && missing().length === 0 && (b.expect.length > 0 || output.includes('\n'))) finish(true)
    }
    child.stdout.on('data', take)
    child.stderr.on('data', take)
    const limit = b.stream ? STREAM_TIMEOUT_MS : BLOCK_TIMEOUT_MS
    const timer = setTimeout(() => finish(false, `no end within ${limit / 1000} s${missing().length ? `; never printed: ${missing().join(' | ')}` : ''}`), limit)
    child.on('close', (code) => {
      if (code !== 0) finish(false, `exit ${code}`)
      else if (missing().length) finish(false, `did not print: ${missing().join(' | ')}`)
      else if (b.stream && !output.includes('\n')) finish(false, 'a stream block printed nothing')
      else finish(true)
      resolve({ .../** @type {{ok: boolean, why?: string, ms: number}} */ (verdict), output })
    })
  })
}

/**
 * Runs the blocks marked test:<stack>, file by file.
 *
 * @param {string} stack up or auth
 * @param {string} root
 * @returns {Promise<number>} failures
 */
export async function run (stack, root = ROOT) {
  const blocks = allBlocks(root).filter((b) => b.mark === `test:${stack}`)
  const dir = mkdtempSync(join(tmpdir(), 'wsps-doc-blocks-'))
  let failures = 0
  try {
    for (const b of blocks) {
      const r = await runBlock(b, root, join(dir, b.file.replaceAll('/', '_')))
      const where = `${b.file}:${b.line}`
      if (r.ok) {
        process.stdout.write(`[doc-blocks] ok   ${where} (${r.ms} ms)\n`)
      } else {
        failures++
        process.stdout.write(`[doc-blocks] FAIL ${where}: ${r.why}\n--- the block\n${b.code}\n--- its output\n${r.output.slice(-4000)}\n---\n`)
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  process.stdout.write(`[doc-blocks] ${blocks.length - failures}/${blocks.length} test:${stack} blocks passed\n`)
  return failures
}

async function main () {
  const [cmd, stack] = process.argv.slice(2)
  const root = process.cwd()
  if (cmd === 'check') {
    const problems = check(root)
    for (const p of problems) process.stderr.write(`[doc-blocks] ${p}\n`)
    const n = allBlocks(root).length
    process.stdout.write(`[doc-blocks] ${n} shell blocks in ${documents(root).length} documents, ${problems.length} problems\n`)
    process.exit(problems.length ? 1 : 0)
  }
  if (cmd === 'run' && (stack === 'up' || stack === 'auth')) process.exit(await run(stack, root) ? 1 : 0)
  process.stderr.write('usage: node tools/doc-blocks.js check | run up | run auth\n')
  process.exit(2)
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main()
