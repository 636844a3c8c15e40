#!/usr/bin/env node
// Quote-fetcher entry point: config once, logger once, run until SIGTERM.

import { runService } from '@wsps/shared/run-service'
import { fetcherSettings, loadFetcherConfig } from './config.js'
import { createFetcher } from './fetcher.js'

await runService({ name: 'wsps-quote-fetcher', settings: fetcherSettings, load: loadFetcherConfig, create: createFetcher })
