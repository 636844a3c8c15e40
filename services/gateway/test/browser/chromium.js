// Debian's chromium driven by playwright-core: a fresh profile per launch,
// removed again on close. No `npx playwright install`: the browser comes
// from apt (mk/browser.mk installs it).

import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after } from 'node:test'
import { chromium } from 'playwright-core'
import { decodeClientFrame, decodeServerFrame } from '@wsps/protocol/proto-codec'

export const CHROMIUM = '/usr/bin/chromium'

/**
 * A WebSocket frame the page sent or received, as playwright shows it (a
 * string for text, a Buffer for binary), read into its object: JSON, or
 * Protobuf of wsps.v1.proto (docs/protocol.md, Binary encoding).
 *
 * @param {string | Buffer} payload
 * @param {'sent' | 'received'} direction
 * @returns {any}
 */
export function wireFrame (payload, direction) {
  if (typeof payload === 'string') return JSON.parse(payload)
  return direction === 'sent' ? decodeClientFrame(payload) : decodeServerFrame(payload)
}

const ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'
]

/**
 * @param {import('playwright-core').BrowserContextOptions} [options]
 */
export async function launchChromium (options = {}) {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found: run \`make test-browser\` (installs it) or apt-get install chromium`)
  const profile = mkdtempSync(join(tmpdir(), 'wsps-chromium-'))
  let context
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ARGS,
      viewport: { width: 1100, height: 700 },
      ...options
    })
  } catch (err) {
    rmSync(profile, { recursive: true, force: true })
    throw err
  }
  return {
    context,
    async close () {
      await context.close().catch(() => {})
      rmSync(profile, { recursive: true, force: true })
    }
  }
}

/**
 * Fresh pages for one test file: each in a browser of its own (own
 * profile: no watchlist carried over), closed by an `after` hook. Call it
 * before the file's stack hook, so the pages close before their gateways.
 *
 * @returns {() => Promise<{browser: Awaited<ReturnType<typeof launchChromium>>, page: import('playwright-core').Page, errors: string[]}>}
 *   a page, and the errors it threw
 */
export function useBrowsers () {
  /** @type {Awaited<ReturnType<typeof launchChromium>>[]} */
  const browsers = []
  after(async () => { for (const b of browsers) await b.close() })
  return async () => {
    const browser = await launchChromium()
    browsers.push(browser)
    const page = browser.context.pages()[0] ?? await browser.context.newPage()
    /** @type {string[]} */
    const errors = []
    page.on('pageerror', (err) => errors.push(String(err)))
    return { browser, page, errors }
  }
}
