// Test harness: real redis-server and real service processes on free
// loopback ports, and a WebSocket client that checks the protocol as it
// reads. Everything started here is stopped by its handle or at exit.
//
// Only re-exports: every module of the testkit imports the module it needs,
// never this file (the lint's import/no-cycle keeps it so).

/** @typedef {import('./recording-subscriber.js').Ev} Ev */
/** @typedef {import('./services.js').ServiceHandle} ServiceHandle */
/** @typedef {import('./toxiproxy.js').ToxiproxyHandle} ToxiproxyHandle */
/** @typedef {import('./otel-collector.js').CollectorHandle} CollectorHandle */
/** @typedef {import('./otlp-spans.js').Span} Span */

export { booksAsInRedis, holdBooks } from './book-holders.js'
export { parseMetrics, sumMetrics } from './metrics.js'
export { freePort, getJson, httpOk } from './net.js'
export { startNginx } from './nginx.js'
export { writeNginxConf } from './nginx-conf.js'
export { otelcolBin, startCollector } from './otel-collector.js'
export { parseSpanFile } from './otlp-spans.js'
export { startProcess } from './process.js'
export { RecordingSubscriber } from './recording-subscriber.js'
export { failoverVictim, killPrimary, redisCommand, slotOwner, startRedis, startRedisCluster, startRedisSentinel } from './redis.js'
export { ALPACA_STREAM_ENV, FAKE_VENDOR_MAIN, FETCHER_MAIN, GATEWAY_MAIN, NODE_FLAGS, ROOT, startFakeVendor, startFetcher, startGateway, startService } from './services.js'
export { startSilentProxy } from './silent-proxy.js'
export { SseStream } from './sse-stream.js'
export { longestSilence, ticksDisordered, ticksLost } from './ticks.js'
export { Stack, setUp, useClusterStack, useSentinelStack, useStack } from './stack.js'
export { ClientPool, TestClient } from './test-client.js'
export { QUOTE_PATH, checkChain, formatChain, traceChains } from './trace-chain.js'
export { ToxiProxy, startToxiproxy, toxiproxyBin } from './toxiproxy.js'
export { sleep, waitFor } from './wait.js'
