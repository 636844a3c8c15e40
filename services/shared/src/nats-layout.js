// Where quotes live on NATS JetStream, the second engine (keys.js is the
// Redis one). Named here only:
//
//   stream   <PREFIX>_QUOTES          every symbol's quotes, one subject each
//   subject  <prefix>.q.<token>       a symbol's quotes as published (stored)
//   live     <prefix>.live.q.<token>  the same, republished by the stream once
//                                     stored (what gateways subscribe to)
//   stream   <PREFIX>_DEMAND          the symbols gateways watch: a lease per
//                                     gateway and symbol, the last one kept
//   subject  <prefix>.demand.<token>.<node hex>  one gateway's lease on a
//                                     symbol (its expiry, ms); the node name
//                                     in hex, as it may hold any character
//
// <token> is the symbol with `.` written `_`: a subject's tokens are split
// on `.`, and protocol SYMBOL_PATTERN ([A-Z0-9.^=-]) has no `_`, so the
// mapping is one to one; `^`, `=` and `-` are legal in a subject as they are.
// Gateways subscribe the live subject, never the stored one: a publish the
// stream refuses (a writer whose expected last sequence failed) still
// reaches core subscribers of the subject it was sent to, but is never
// republished.

/** Headers of a stored quote: the fence of the writer that published it (nats-publish.js). */
export const HEADER = Object.freeze({ token: 'Wsps-Token', ts: 'Wsps-Ts' })

/** What a prefix may hold: it names a stream and a subject token. */
const PREFIX_PATTERN = /^[A-Za-z0-9_-]{1,32}$/

/**
 * @param {string} [prefix] several installs can share one NATS (as WSPS_REDIS_KEY_PREFIX for Redis)
 */
export function natsLayout (prefix = 'wsps') {
  if (!PREFIX_PATTERN.test(prefix)) throw new TypeError(`NATS prefix ${JSON.stringify(prefix)}: letters, digits, _ and - only`)
  const token = (/** @type {string} */ symbol) => symbol.replaceAll('.', '_')
  const stored = `${prefix}.q.`
  const live = `${prefix}.live.q.`
  const demand = `${prefix}.demand.`
  return Object.freeze({
    stream: `${prefix.toUpperCase()}_QUOTES`,
    /** The stream's subjects. */
    subjects: `${stored}*`,
    /** Where the stream republishes what it stored, by the token of its subject. */
    republish: { src: `${stored}*`, dest: `${live}{{wildcard(1)}}` },
    subject: (/** @type {string} */ symbol) => stored + token(symbol),
    liveSubject: (/** @type {string} */ symbol) => live + token(symbol),
    /** @returns {string | null} the symbol of a live subject */
    symbolOfLive: (/** @type {string} */ subject) => subject.startsWith(live) ? subject.slice(live.length).replaceAll('_', '.') : null,
    demandStream: `${prefix.toUpperCase()}_DEMAND`,
    demandSubjects: `${demand}>`,
    /** One gateway's (node's) lease on a symbol. */
    demandSubject: (/** @type {string} */ symbol, /** @type {string} */ node) => `${demand}${token(symbol)}.${Buffer.from(node).toString('hex')}`,
    /** @returns {string | null} the symbol a lease's subject names */
    symbolOfDemand: (/** @type {string} */ subject) => subject.startsWith(demand) ? subject.slice(demand.length, subject.lastIndexOf('.')).replaceAll('_', '.') : null
  })
}

/** @typedef {ReturnType<typeof natsLayout>} NatsLayout */
