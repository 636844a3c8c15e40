// What a verb is given to talk to the world: the streams (a test hands its
// own), where it runs, and a signal that ends long-running verbs (tail) on
// Ctrl-C. One place decides between people and scripts: a table on a
// terminal, JSON when piped or asked (--json).

import { readFileSync } from 'node:fs'
import { CliError, CliErrorCode } from './errors.js'

/**
 * @typedef {object} Io
 * @property {NodeJS.WritableStream & {isTTY?: boolean, columns?: number}} out
 * @property {NodeJS.WritableStream & {isTTY?: boolean}} err
 * @property {NodeJS.ReadableStream & {isTTY?: boolean}} in
 * @property {AbortSignal} signal aborted: stop and return
 * @property {Record<string, string | undefined>} env the environment (check-config reads its WSPS_* settings)
 */

/**
 * Writes one line to stdout: a record as JSON, or a line of text.
 *
 * @param {Io} io
 * @param {unknown} record
 */
export function emit (io, record) {
  io.out.write(typeof record === 'string' ? `${record}\n` : `${JSON.stringify(record)}\n`)
}

/**
 * Progress for people, on stderr and only on a terminal (a script's stderr stays quiet).
 *
 * @param {Io} io
 * @param {string} line
 */
export function progress (io, line) {
  if (io.err.isTTY) io.err.write(`\r\x1b[2K${line}`)
}

/**
 * Ends a progress line (if one was written).
 *
 * @param {Io} io
 */
export function progressDone (io) {
  if (io.err.isTTY) io.err.write('\r\x1b[2K')
}

/**
 * @param {NodeJS.ReadableStream} stream
 * @returns {Promise<string>}
 */
export async function readAll (stream) {
  let text = ''
  for await (const chunk of stream) text += chunk
  return text
}

/**
 * A file named on the command line, or UNREADABLE saying why not.
 *
 * @param {string} path
 * @returns {string}
 */
export function readFile (path) {
  try {
    return readFileSync(path, 'utf8')
  } catch (err) {
    throw new CliError(CliErrorCode.UNREADABLE, `${path}: ${/** @type {Error} */ (err).message}`)
  }
}
