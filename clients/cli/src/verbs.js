// The verbs of `wsps`, and the one way they are run: options parsed
// strictly (an unknown option is USAGE, not ignored), --json and --help on
// every verb, and an error printed once, by code.

import { parseArgs } from 'node:util'
import { checkConfig } from './check-config.js'
import { conn, disconnect, drain } from './connections.js'
import { CliError, CliErrorCode, Exit } from './errors.js'
import { emit } from './io.js'
import { publish } from './publish.js'
import { tail } from './tail.js'
import { top } from './top.js'
import { usage } from './usage.js'
import { checkToken, token } from './token.js'

/**
 * @typedef {import('./io.js').Io} Io
 * @typedef {{values: Record<string, string | boolean | string[] | undefined>, positionals: string[]}} Parsed
 * @typedef {object} Verb
 * @property {string} name
 * @property {string} summary one line, for `wsps help`
 * @property {string} usage the synopsis, then what it does
 * @property {import('node:util').ParseArgsConfig['options']} options
 * @property {(args: Parsed, io: Io) => Promise<number>} run the exit status
 */

/** @type {readonly Verb[]} */
export const VERBS = Object.freeze([tail, top, conn, disconnect, drain, usage, publish, token, checkToken, checkConfig])

const COMMON = /** @type {const} */ ({ json: { type: 'boolean', default: false }, help: { type: 'boolean', short: 'h', default: false } })

/** @returns {string} `wsps help` */
export function overview () {
  const width = Math.max(...VERBS.map((v) => v.name.length))
  return [
    'wsps: the operator\'s command line of wsps (docs/operations.md)',
    '',
    'usage: wsps VERB [OPTIONS] [ARGS]   (wsps help VERB, or wsps VERB --help, for one verb)',
    '',
    ...VERBS.map((v) => `  ${v.name.padEnd(width)}  ${v.summary}`),
    '',
    'Every verb takes --json (records for scripts). Exit status: 0 done, 1 failed',
    '(the error is printed as `wsps VERB: CODE: message`), 2 a wrong command line.',
    `Codes: ${Object.values(CliErrorCode).join(', ')}.`
  ].join('\n')
}

/**
 * Runs one command line.
 *
 * @param {string[]} argv without `node wsps`
 * @param {Io} io
 * @returns {Promise<number>} the exit status
 */
export async function main (argv, io) {
  const [name, ...rest] = argv
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    const verb = VERBS.find((v) => v.name === rest[0])
    if (rest.length && !verb) return fail(io, 'help', new CliError(CliErrorCode.USAGE, `no verb ${rest[0]}`), false)
    emit(io, verb ? `usage: ${verb.usage}` : overview())
    return name === undefined ? Exit.USAGE : Exit.OK
  }
  const verb = VERBS.find((v) => v.name === name)
  if (!verb) return fail(io, name, new CliError(CliErrorCode.USAGE, `no verb ${name} (wsps help lists them)`), false)
  let args
  try {
    args = parseArgs({ args: rest, options: { ...verb.options, ...COMMON }, allowPositionals: true, strict: true })
  } catch (err) {
    return fail(io, name, new CliError(CliErrorCode.USAGE, `${/** @type {Error} */ (err).message} (wsps help ${name})`), rest.includes('--json'))
  }
  if (args.values.help) {
    emit(io, `usage: ${verb.usage}`)
    return Exit.OK
  }
  try {
    return await verb.run(/** @type {Parsed} */ (args), io)
  } catch (err) {
    if (!(err instanceof CliError)) throw err
    return fail(io, name, err, Boolean(args.values.json))
  }
}

/**
 * @param {Io} io
 * @param {string} verb
 * @param {CliError} err
 * @param {boolean} json
 */
function fail (io, verb, err, json) {
  if (json) emit(io, { ok: false, error: { code: err.code, message: err.message, ...err.detail } })
  else io.err.write(`wsps ${verb}: ${err.code}: ${err.message}\n`)
  return err.exit
}
