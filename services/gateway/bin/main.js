#!/usr/bin/env node
// Gateway entry point: config once, logger once, then serve until SIGTERM.
// With WSPS_WORKERS above 1 this process supervises that many workers
// (src/workers.js), each of which runs this file again as a whole gateway.

import cluster from 'node:cluster'
import { runService } from '@wsps/shared/run-service'
import { gatewaySettings, loadGatewayConfig } from '../src/config.js'
import { createGateway } from '../src/gateway.js'
import { runPrimary, workerCount } from '../src/workers.js'

await runService({
  name: 'wsps-gateway',
  settings: gatewaySettings,
  load: loadGatewayConfig,
  create: createGateway,
  // The drain, then a few seconds to release Redis (under the chart's grace margin).
  stopTimeoutMs: (config) => config.shutdownDelayMs + config.drainMs + 5000,
  supervise: (config, logger) => {
    const workers = workerCount(config.workers)
    if (workers <= 1 || !cluster.isPrimary) return false
    runPrimary(workers, logger)
    return true
  }
})
