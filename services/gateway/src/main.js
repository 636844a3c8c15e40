#!/usr/bin/env node
// Gateway entry point: config once, logger once, then serve until SIGTERM.

import { ConfigError, redacted } from '@wsps/shared/config'
import { createLogger } from '@wsps/shared/logger'
import { gatewaySettings, loadGatewayConfig } from './config.js'
import { createGateway } from './gateway.js'

let config
try {
  config = loadGatewayConfig(process.env)
} catch (err) {
  if (!(err instanceof ConfigError)) throw err
  process.stderr.write(`wsps-gateway: ${err.message}\n`)
  process.exit(78) // EX_CONFIG
}

const logger = createLogger({ level: config.logLevel, name: 'wsps-gateway', node: config.nodeName })
logger.info({ config: redacted(gatewaySettings, config) }, 'starting')

const gateway = await createGateway(config, logger)
const address = await gateway.listen()
logger.info({ address }, 'listening')

let signals = 0
for (const signal of /** @type {const} */ (['SIGTERM', 'SIGINT'])) {
  process.on(signal, () => {
    // A second signal means "now": skip the drain window.
    if (++signals > 1) {
      logger.warn({ signal }, 'second signal: exiting without drain')
      process.exit(1)
    }
    logger.info({ signal }, 'signal received')
    gateway.stop().then(() => process.exit(0), (err) => {
      logger.error({ err }, 'shutdown failed')
      process.exit(1)
    })
  })
}
process.on('unhandledRejection', (err) => logger.error({ err }, 'unhandled rejection'))
