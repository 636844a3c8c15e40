// The command line of the bench's scripts: `--name=value` flags read by
// node:util parseArgs. An unknown flag, a missing value or a stray argument
// ends the script with the parser's message (exit 2), not a stack trace.

import { basename } from 'node:path'
import { parseArgs } from 'node:util'

/**
 * @template {NonNullable<import('node:util').ParseArgsConfig['options']>} T
 * @param {T} options every flag the script takes
 * @param {string[]} [args] default: this process's arguments
 * @returns {ReturnType<typeof parseArgs<{args: string[], options: T, strict: true, allowPositionals: false}>>['values']}
 */
export function parseFlags (options, args = process.argv.slice(2)) {
  try {
    return parseArgs({ args, options, strict: true, allowPositionals: false }).values
  } catch (err) {
    if (!String(/** @type {{code?: string}} */ (err).code).startsWith('ERR_PARSE_ARGS_')) throw err
    console.error(`${basename(process.argv[1] ?? 'script')}: ${/** @type {Error} */ (err).message}`)
    process.exit(2)
  }
}
