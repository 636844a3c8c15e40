// HTTP endpoints beside the WebSocket: health, readiness, metrics and the
// browser client.

import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import fastifyStatic from '@fastify/static'
import { registerProbes } from '@wsps/shared/http-app'

export const BUNDLED_STATIC_DIR = fileURLToPath(new URL('../public/', import.meta.url))

/**
 * The Protobuf runtime the page's client imports (through its import map,
 * public/index.html), served at VENDOR_PROTOBUF_PATH: the ESM build of the
 * @bufbuild/protobuf this gateway runs on.
 */
export const VENDOR_PROTOBUF_DIR = dirname(fileURLToPath(import.meta.resolve('@bufbuild/protobuf')))
export const VENDOR_PROTOBUF_PATH = '/vendor/protobuf/'

/**
 * @param {import('fastify').FastifyInstance<any, any, any, any>} app
 * @param {object} options
 * @param {() => {alive: boolean, aliveForMs: number}} options.broker this process's Redis links: alive
 *   (ready and answering) and for how long (GET /broker: a cut-off peer asks, isolation.js)
 * @param {() => Record<string, boolean> | Promise<Record<string, boolean>>} options.readiness checks; ready when all pass
 * @param {import('@wsps/shared/http-app').MetricsSource | null} options.registry null: /metrics is served elsewhere
 * @param {string} options.staticDir '' bundled client, '-' none
 * @param {string} [options.pageTokenUrl] '' none; else written into the page (WSPS_PAGE_TOKEN_URL)
 */
export async function registerHttpRoutes (app, { broker, readiness, registry, staticDir, pageTokenUrl = '' }) {
  registerProbes(app, readiness, registry)
  app.get('/broker', (_req, reply) => { reply.header('Cache-Control', 'no-store').send(broker()) })

  if (staticDir !== '-') {
    const root = staticDir || BUNDLED_STATIC_DIR
    if (pageTokenUrl) {
      // The page is rendered once, at start: the file with the token URL's
      // meta tag (token-provider.js reads it) before the first module runs.
      const page = withTokenUrl(readFileSync(join(root, 'index.html'), 'utf8'), pageTokenUrl)
      const servePage = (/** @type {any} */ _req, /** @type {import('fastify').FastifyReply} */ reply) => reply
        .header('Cache-Control', 'public, max-age=0')
        .header('X-Content-Type-Options', 'nosniff')
        .type('text/html; charset=utf-8')
        .send(page)
      app.get('/', servePage)
      app.get('/index.html', servePage)
    }
    await app.register(fastifyStatic, {
      root,
      index: pageTokenUrl ? false : undefined,
      // The client is small and changes with each release; let browsers
      // revalidate instead of pinning an old protocol module.
      cacheControl: true,
      maxAge: 0,
      setHeaders: (res) => {
        res.setHeader('X-Content-Type-Options', 'nosniff')
      }
    })
    await app.register(fastifyStatic, {
      root: VENDOR_PROTOBUF_DIR,
      prefix: VENDOR_PROTOBUF_PATH,
      // The first registration decorates the reply already.
      decorateReply: false,
      index: false,
      cacheControl: true,
      maxAge: 0,
      setHeaders: (res) => {
        res.setHeader('X-Content-Type-Options', 'nosniff')
      }
    })
  }
}

/**
 * The page with `<meta name="wsps-token-url">` for url, right after its
 * charset (the URL is validated by the config: a path with no quote or
 * angle bracket, so it needs no escaping).
 *
 * @param {string} html
 * @param {string} url
 */
export function withTokenUrl (html, url) {
  const at = html.indexOf('<meta charset')
  const end = at < 0 ? -1 : html.indexOf('>', at)
  if (end < 0) throw new Error('index.html has no <meta charset> to put the token URL after')
  return `${html.slice(0, end + 1)}\n  <meta name="wsps-token-url" content="${url}">${html.slice(end + 1)}`
}
