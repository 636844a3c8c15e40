// Debian's chromium driven by playwright-core: a fresh profile per launch,
// removed again on close. No `npx playwright install`: the browser comes
// from apt (mk/browser.mk installs it).

import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium } from 'playwright-core'

export const CHROMIUM = '/usr/bin/chromium'

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
