#!/usr/bin/env node
// Quote-fetcher entry point: config once, logger once, run until SIGTERM.

import { runService } from '@wsps/shared/run-service'
import { fetcherSettings, loadFetcherConfig } from '../src/config.js'
import { createFetcher } from '../src/fetcher.js'

await runService({
  name: 'wsps-quote-fetcher',
  settings: fetcherSettings,
  load: loadFetcherConfig,
  create: createFetcher,
  // Jobs in hand finish (one upstream request, one publish that may wait for replicas), then Redis is released.
  stopTimeoutMs: (config) => config.upstreamTimeoutMs + config.waitTimeoutMs + 10_000
})
