// The bench's Go programs (harness/bench/loadgen/cmd/*): the load generator,
// the floor server of the hot section and the host hiccup meter.
// scripts/setup.sh builds them into one directory of the cache named by a
// hash of their source and links it as $WSPS_CACHE/bench/bin; a test builds
// its own from source with buildGoBin().

import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The Go module of the three programs. */
export const GO_SRC = fileURLToPath(new URL('../loadgen/', import.meta.url))

/** Where setup.sh links the programs built from the current source. */
export const GO_BIN_DIR = join(process.env.WSPS_CACHE ?? join(process.env.HOME ?? '/root', '.cache/wsps'), 'bench/bin')

/**
 * @typedef {object} GoBin paths of the bench's Go programs
 * @property {string} loadgen the load generator (cmd/loadgen)
 * @property {string} floor the floor server of the hot section (cmd/floor)
 * @property {string} hiccup the host hiccup meter (cmd/hiccup)
 * @property {string} centrifugo Centrifugo, a peer server (not ours: setup.sh builds the
 *   release pinned in tools/versions.env and links it beside the bin directory)
 */

/**
 * The programs in dir, as setup.sh and buildGoBin() name them.
 *
 * @param {string} [dir]
 * @returns {GoBin}
 */
export function goBin (dir = GO_BIN_DIR) {
  return { loadgen: join(dir, 'loadgen'), floor: join(dir, 'floor'), hiccup: join(dir, 'hiccup'), centrifugo: join(GO_BIN_DIR, '../centrifugo') }
}

/**
 * Builds the three programs from source into dir (setup.sh's build, without
 * the cache): for tests that run them.
 *
 * @param {string} dir
 * @returns {GoBin}
 */
export function buildGoBin (dir) {
  const go = existsSync('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : 'go'
  execFileSync(go, ['build', '-trimpath', '-o', `${dir}/`, './cmd/...'], { cwd: GO_SRC, env: { ...process.env, CGO_ENABLED: '0' }, stdio: 'inherit' })
  return goBin(dir)
}
