// Settings every wsps service has, declared once.

import { hostname } from 'node:os'

/** @type {readonly import('./config.js').Setting[]} */
export const commonSettings = Object.freeze([
  { env: 'WSPS_HOST', key: 'host', type: 'string', default: '0.0.0.0', doc: 'Address the HTTP/WebSocket server binds to.' },
  { env: 'WSPS_NODE_NAME', key: 'nodeName', type: 'string', default: hostname(), doc: 'Name of this process in logs, metrics and `hello.node` (the chart sets the pod name). Default: the host name.' },
  { env: 'WSPS_LOG_LEVEL', key: 'logLevel', type: 'enum', values: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], default: 'info', doc: 'pino log level.' },
  { env: 'WSPS_REDIS_URL', key: 'redisUrl', type: 'url', protocols: ['redis', 'rediss'], default: 'redis://127.0.0.1:6379', doc: '`redis://` or `rediss://` (TLS) URL of Redis. A password in the URL works but prefer WSPS_REDIS_PASSWORD.' },
  { env: 'WSPS_REDIS_MODE', key: 'redisMode', type: 'enum', values: ['standalone', 'cluster'], default: 'standalone', doc: '`standalone`: one Redis (or a primary behind a Service). `cluster`: WSPS_REDIS_URL is a seed node of a Redis Cluster; quotes travel by sharded pub/sub (SPUBLISH/SSUBSCRIBE), each channel on the shard that owns its symbol.' },
  { env: 'WSPS_REDIS_USERNAME', key: 'redisUsername', type: 'string', default: '', doc: 'Redis ACL user name (empty: the default user).' },
  { env: 'WSPS_REDIS_PASSWORD', key: 'redisPassword', type: 'string', default: '', secret: true, doc: 'Redis AUTH password (overrides one in the URL).' },
  { env: 'WSPS_REDIS_TLS_CA_FILE', key: 'redisTlsCaFile', type: 'string', default: '', doc: 'PEM file of the CA that signed the Redis server certificate (with `rediss://`). Empty: the system CAs.' },
  { env: 'WSPS_REDIS_AUTO_PIPELINE', key: 'redisAutoPipeline', type: 'bool', default: false, doc: '`cluster` only: let ioredis batch commands per node (auto-pipelining). Off by default: during a failover or resharding ioredis may then answer commands with a raw MOVED and keep routing them to the old node (ioredis #2075); the services retry either way, but recover faster without it.' },
  { env: 'WSPS_REDIS_KEY_PREFIX', key: 'redisKeyPrefix', type: 'string', default: 'wsps', doc: 'Prefix of every Redis key and channel, so several installs can share one Redis.' }
])
