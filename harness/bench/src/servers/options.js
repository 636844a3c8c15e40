// What every competitor server shares: its command line (--port=, --redis=,
// --prefix= and its own --name=value flags, read by parseFlags), the wsps Redis names it is fed
// through, the `listening` line the bench waits for, and a quick exit on
// SIGTERM.

import { redisKeys } from '@wsps/shared/keys'
import { parseFlags } from '../cli.js'

/**
 * @param {number} defaultPort
 * @param {string[]} [own] the server's own flags (string values) besides --port, --redis, --prefix
 */
export function serverOptions (defaultPort, own = []) {
  /** @type {Record<string, string | undefined>} */
  const args = parseFlags(Object.fromEntries(['port', 'redis', 'prefix', ...own].map((name) => [name, { type: /** @type {const} */ ('string') }])))
  const prefix = args.prefix ?? 'wsps'
  process.on('SIGTERM', () => process.exit(0))
  return {
    args,
    port: Number(args.port ?? defaultPort),
    redisUrl: args.redis ?? 'redis://127.0.0.1:6379',
    prefix,
    keys: redisKeys(prefix)
  }
}

/** @param {number} port the line (JSON) the bench's start() waits for */
export function announce (port) {
  process.stdout.write(JSON.stringify({ type: 'listening', port }) + '\n')
}
