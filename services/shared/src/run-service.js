// The start-up and shutdown every service shares: read config once (exit 78
// with one line per problem), one logger, listen, and stop gracefully on
// SIGTERM/SIGINT. A second signal means "now": exit without the drain.

import { redacted } from './config.js'
import { Code, ConfigError } from './errors.js'
import { createLogger } from './logger.js'

/**
 * @template {{logLevel: string, nodeName: string}} C
 * @param {object} options
 * @param {string} options.name process name in logs and error lines
 * @param {readonly import('./config.js').Setting[]} options.settings for the redacted config log
 * @param {(env: Record<string, string | undefined>) => Readonly<C>} options.load
 * @param {(config: Readonly<C>, logger: import('pino').Logger) => Promise<{listen(): Promise<string>, stop(): Promise<void>}>} options.create
 * @param {(config: Readonly<C>) => number} options.stopTimeoutMs how long a graceful stop may take
 *   before the process exits anyway (code 1, logged with Code.SHUTDOWN_TIMEOUT)
 * @param {(config: Readonly<C>, logger: import('pino').Logger) => boolean} [options.supervise] called once
 *   the config is read: true when this process only supervises worker
 *   processes (it then neither creates the service nor listens)
 */
export async function runService ({ name, settings, load, create, stopTimeoutMs, supervise }) {
  let config
  try {
    config = load(process.env)
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    process.stderr.write(`${name}: ${err.message}\n`)
    process.exit(78) // EX_CONFIG
  }

  const logger = createLogger({ level: config.logLevel, name, node: config.nodeName })
  logger.info({ config: redacted(settings, config) }, 'starting')
  if (supervise?.(config, logger)) return
  const service = await create(config, logger)
  const address = await service.listen()
  logger.info({ address }, 'listening')

  let signals = 0
  for (const signal of /** @type {const} */ (['SIGTERM', 'SIGINT'])) {
    process.on(signal, () => {
      if (++signals > 1) {
        logger.warn({ signal }, 'second signal: exiting without drain')
        process.exit(1)
      }
      logger.info({ signal }, 'signal received')
      // Whatever a stop waits for (a Redis that is gone, a job that hangs),
      // the process ends: an orchestrator or a test waiting for the exit
      // must not wait for ever.
      const timeoutMs = stopTimeoutMs(config)
      setTimeout(() => {
        logger.error({ code: Code.SHUTDOWN_TIMEOUT, timeoutMs }, 'graceful stop took too long: exiting')
        process.exit(1)
      }, timeoutMs).unref()
      service.stop().then(() => process.exit(0), (err) => {
        logger.error({ err }, 'shutdown failed')
        process.exit(1)
      })
    })
  }
  process.on('unhandledRejection', (err) => logger.error({ err }, 'unhandled rejection'))
}
