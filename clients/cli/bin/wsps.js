#!/usr/bin/env node
// The `wsps` command (src/verbs.js): the process's streams and environment
// handed to a verb, Ctrl-C turned into a stop the verb finishes itself.

import { main } from '../src/verbs.js'

const stop = new AbortController()
process.once('SIGINT', () => stop.abort())
process.once('SIGTERM', () => stop.abort())
process.exitCode = await main(process.argv.slice(2), { out: process.stdout, err: process.stderr, in: process.stdin, signal: stop.signal, env: process.env })
