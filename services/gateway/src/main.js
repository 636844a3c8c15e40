#!/usr/bin/env node
// Gateway entry point: config once, logger once, then serve until SIGTERM.

import { runService } from '@wsps/shared/run-service'
import { gatewaySettings, loadGatewayConfig } from './config.js'
import { createGateway } from './gateway.js'

await runService({ name: 'wsps-gateway', settings: gatewaySettings, load: loadGatewayConfig, create: createGateway })
