// What every competitor server shares: its command line (--port=, --redis=,
// --prefix= and its own --name=value flags), the wsps Redis names it is fed
// through, the `listening` line the bench waits for, and a quick exit on
// SIGTERM.

import { redisKeys } from '@wsps/shared/keys'

/**
 * @param {number} defaultPort
 */
export function serverOptions (defaultPort) {
  /** @type {Record<string, string>} */
  const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')))
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
