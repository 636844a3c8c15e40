#!/usr/bin/env node
// Regenerates harness/bench/fixtures/f5-nginx/: the nginx config the F5 NGINX
// Ingress Controller writes for the wsps chart's gateway Ingress, rendered by
// the controller's own Go code and templates from its vendored release
// (tools/versions.env NGINX_INGRESS_VERSION, checked against
// NGINX_INGRESS_SHA256), with:
//   - the Ingress `helm template` renders with className nginx and preset
//     f5-nginx (as the e2e installs it, infra/e2e/nginx.mjs);
//   - the ConfigMap entries the e2e's controller runs with
//     (infra/local-cluster/manifests/nginx-ingress-values.yaml);
//   - the gateway endpoint 127.0.0.1:8081 (the bench puts its gateway there).
// The bench runs that config (proxies/f5-conf.js says what it changes to run
// it outside a pod). Needs Go (tools/go.sh) and helm (tools/tools.sh helm);
// the controller's modules come from the module cache or the Go module proxy.
//
//   node harness/bench/scripts/f5-nginx-conf.js

import { execFileSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const OUT = join(ROOT, 'harness/bench/fixtures/f5-nginx')
const CACHE = join(process.env.WSPS_CACHE ?? join(homedir(), '.cache/wsps'), 'bench')
const versions = readFileSync(join(ROOT, 'tools/versions.env'), 'utf8')
const pin = (/** @type {string} */ k) => versions.match(new RegExp(`^${k}=(.+)$`, 'm'))?.[1] ?? ''
const VERSION = pin('NGINX_INGRESS_VERSION')
const SHA = pin('NGINX_INGRESS_SHA256')
export const ENDPOINT = '127.0.0.1:8081'
const say = (/** @type {string} */ m) => process.stderr.write(`\x1b[36m==>\x1b[0m ${m}\n`)
const run = (/** @type {string} */ cmd, /** @type {string[]} */ args, o = {}) => execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], ...o })

// The vendored source, unpacked once per checksum.
const src = join(CACHE, `f5-src-${VERSION}-${SHA.slice(0, 12)}`)
if (!existsSync(join(src, 'go.mod'))) {
  // tools/vendor.sh finds the archive outside the repository and checks its sha256.
  const TGZ = run(join(ROOT, 'tools/vendor.sh'), [`kubernetes-ingress-${VERSION}.tar.gz`, SHA]).trim()
  say(`unpacking ${TGZ}`)
  mkdirSync(CACHE, { recursive: true })
  const tmp = mkdtempSync(`${src}.`)
  run('tar', ['-xzf', TGZ, '-C', tmp])
  renameSync(join(tmp, `kubernetes-ingress-${VERSION}`), src)
  rmSync(tmp, { recursive: true, force: true })
}
cpSync(join(ROOT, 'harness/bench/f5-render/wsps_render_test.go'), join(src, 'internal/configs/wsps_render_test.go'))

say('rendering the chart\'s gateway Ingress (preset f5-nginx)')
run(join(ROOT, 'tools/tools.sh'), ['helm'], { stdio: ['ignore', 'ignore', 'inherit'] })
const helm = join(dirname(CACHE), 'bin/helm')
const ingress = run(helm, ['template', 'wsps', join(ROOT, 'charts/wsps'), '--namespace', 'wsps', '--show-only', 'templates/gateway-ingress.yaml',
  '--set', 'gateway.ingress.enabled=true', '--set', 'gateway.ingress.className=nginx', '--set', 'gateway.ingress.preset=f5-nginx'], { stdio: ['ignore', 'pipe', 'ignore'] })
  .split('\n').filter((l) => l !== '---' && !l.startsWith('# Source')).join('\n')

// The e2e controller's ConfigMap entries: `key: "value"` lines under controller.config.entries.
const values = readFileSync(join(ROOT, 'infra/local-cluster/manifests/nginx-ingress-values.yaml'), 'utf8')
const block = values.slice(values.indexOf('    entries:\n'))
/** @type {Record<string, string>} */
const entries = {}
for (const line of block.split('\n').slice(1)) {
  if (/^\s*#/.test(line)) continue
  const m = /^ {6}([a-z0-9-]+): "(.*)"$/.exec(line)
  if (!m) break
  entries[m[1]] = m[2]
}
if (!Object.keys(entries).length) throw new Error('no controller.config.entries in nginx-ingress-values.yaml')

say(`rendering with the controller's code (go test in ${src}; compiles its package once, a few minutes cold)`)
const tmp = mkdtempSync(join(CACHE, 'f5-out.'))
try {
  execFileSync('go', ['test', '-count=1', '-run', '^TestWspsRender$', './internal/configs/'], {
    cwd: src,
    stdio: 'inherit',
    env: { ...process.env, PATH: `${run(join(ROOT, 'tools/go.sh'), []).trim()}${process.env.PATH}`, WSPS_F5_OUT: tmp, WSPS_F5_INGRESS: ingress, WSPS_F5_ENTRIES: JSON.stringify(entries), WSPS_F5_ENDPOINT: ENDPOINT }
  })
  rmSync(OUT, { recursive: true, force: true })
  mkdirSync(join(OUT, 'conf.d'), { recursive: true })
  cpSync(join(tmp, 'nginx.conf'), join(OUT, 'nginx.conf'))
  for (const f of readdirSync(join(tmp, 'conf.d'))) cpSync(join(tmp, 'conf.d', f), join(OUT, 'conf.d', f))
} finally {
  rmSync(tmp, { recursive: true, force: true })
}
writeFileSync(join(OUT, 'README.md'), `# The F5 NGINX Ingress Controller's nginx config for wsps (generated)

Written by \`node harness/bench/scripts/f5-nginx-conf.js\`; do not edit. \`nginx.conf\`
and \`conf.d/\` are what the vendored F5 NGINX Ingress Controller ${VERSION} renders,
with its own Go code (\`generateNginxCfg\`, \`GenerateNginxMainConfig\`) and
templates (\`internal/configs/version1/nginx*.tmpl\`), for the Ingress the
chart renders with className \`nginx\` and preset \`f5-nginx\`, under the
ConfigMap entries of the e2e's controller
(\`infra/local-cluster/manifests/nginx-ingress-values.yaml\`) and the
controller's default flags; the gateway endpoint is ${ENDPOINT}. Inputs:
\`inputs.json\`. The bench's proxy section runs it through
\`harness/bench/src/proxies/f5-conf.js\`, which lists what it changes to run
outside a pod.
`)
writeFileSync(join(OUT, 'inputs.json'), JSON.stringify({ controller: `F5 NGINX Ingress Controller ${VERSION} (sha256 ${SHA})`, configMapEntries: entries, endpoint: ENDPOINT, ingress }, null, 2) + '\n')
say(`wrote ${OUT}`)
