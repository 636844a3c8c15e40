#!/usr/bin/env node
// Quote-fetcher entry point: config once, logger once, run until SIGTERM.

import { ConfigError, redacted } from '@wsps/shared/config'
import { createLogger } from '@wsps/shared/logger'
import { fetcherSettings, loadFetcherConfig } from './config.js'
import { createFetcher } from './fetcher.js'

let config
try {
  config = loadFetcherConfig(process.env)
} catch (err) {
  if (!(err instanceof ConfigError)) throw err
  process.stderr.write(`wsps-quote-fetcher: ${err.message}\n`)
  process.exit(78) // EX_CONFIG
}

const logger = createLogger({ level: config.logLevel, name: 'wsps-quote-fetcher', node: config.nodeName })
logger.info({ config: redacted(fetcherSettings, config) }, 'starting')

const fetcher = await createFetcher(config, logger)
const address = await fetcher.listen()
logger.info({ address, provider: config.provider }, 'listening')

let signals = 0
for (const signal of /** @type {const} */ (['SIGTERM', 'SIGINT'])) {
  process.on(signal, () => {
    if (++signals > 1) process.exit(1)
    logger.info({ signal }, 'signal received')
    fetcher.stop().then(() => process.exit(0), (err) => {
      logger.error({ err }, 'shutdown failed')
      process.exit(1)
    })
  })
}
process.on('unhandledRejection', (err) => logger.error({ err }, 'unhandled rejection'))
