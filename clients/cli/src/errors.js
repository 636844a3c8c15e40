// The command line's errors, each defined once with its exit status: what
// a verb fails with, and what `wsps help` documents. A script matches on
// the code (printed as `wsps VERB: CODE: message`, or `{"error":{...}}`
// with --json), never on the message.

/** Exit statuses: 0 done, 1 the check or the request failed, 2 the command line was wrong. */
export const Exit = Object.freeze({ OK: 0, FAILED: 1, USAGE: 2 })

export const CliErrorCode = Object.freeze({
  /** Unknown verb or option, a missing or malformed argument. */
  USAGE: 'USAGE',
  /** A file named on the command line cannot be read. */
  UNREADABLE: 'UNREADABLE',
  /** The service did not answer (connection refused, timeout). */
  UNREACHABLE: 'UNREACHABLE',
  /** The service answered with an error (its code is in the message). */
  REFUSED: 'REFUSED',
  /** check-token: the token would be refused by a gateway so configured. */
  INVALID_TOKEN: 'INVALID_TOKEN',
  /** check-config: a service would refuse these settings at start-up. */
  BAD_CONFIG: 'BAD_CONFIG',
  /** publish: a row of the input is not a quote (before anything is sent). */
  BAD_INPUT: 'BAD_INPUT'
})

/** @typedef {typeof CliErrorCode[keyof typeof CliErrorCode]} CliErrorCodeName */

export class CliError extends Error {
  /**
   * @param {CliErrorCodeName} code
   * @param {string} message
   * @param {Record<string, unknown>} [detail] more for --json (a service's own error, the problems found)
   */
  constructor (code, message, detail = {}) {
    super(message)
    this.code = code
    this.detail = detail
  }

  get exit () {
    return this.code === CliErrorCode.USAGE ? Exit.USAGE : Exit.FAILED
  }
}

/**
 * @param {string} message
 * @returns {CliError}
 */
export function usage (message) {
  return new CliError(CliErrorCode.USAGE, message)
}
