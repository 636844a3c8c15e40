// results.proxy (sections/proxy.js) -> the report's proxy section: the main
// layout's table (what `make bench` prints at the end of the section too),
// every layout side by side, and the 2026-11-22 run repeated.

const f = (/** @type {number | null | undefined} */ x, d = 0) => (x === null || x === undefined || Number.isNaN(x) ? 'n/a' : Number(x).toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d }))
const signed = (/** @type {number | null | undefined} */ x) => (x === null || x === undefined ? 'n/a' : `${x >= 0 ? '+' : ''}${f(x, 1)}`)
const pct = (/** @type {number | undefined} */ x) => (x === undefined || x === null ? 'n/a' : `${Math.round(x * 100)}%`)

/**
 * @param {any} pr results.proxy
 * @param {any} p the profile's parameters
 * @returns {string[]} Markdown lines
 */
export function proxySection (pr, p) {
  if (!pr) return []
  const out = ['## Proxies in front of one gateway: direct, nginx, HAProxy, the F5 controller\'s nginx', '']
  if (pr.error) return [...out, `failed: ${pr.error}`, '']
  const main = pr.scenarios.find((/** @type {any} */ s) => s.id === 'main')
  const label = (/** @type {string} */ path) => (path === 'direct' ? 'direct' : pr.proxies?.[path]?.label ?? path)
  out.push(`${f(p.proxyConns)} connections (${p.k} of ${f(p.symbols)} symbols each, Zipf ${p.zipf}) per path, one path at a time; each scenario's paths alternate round by round (each round starts with the next path), ${f(p.proxyMeasureMs)} ms measured per run after ${f(p.settleMs)} ms at the rate. Every proxy is started afresh for its run and pinned with taskset.`, '')
  out.push('Configs: ' + Object.entries(pr.proxies ?? {}).map(([k, v]) => `**${k}**: ${/** @type {any} */ (v).config}`).join('; ') + '.', '')
  out.push('How each figure is measured: **held**: sockets the clients still had open at the end of the window (of those that connected); **proxy RSS per conn**: the proxy\'s resident memory (VmRSS of its processes, /proc) at the end of the window minus before the clients connected, over the connections; **handshakes/s**: connections over the time to connect, subscribe and get the snapshots, 64 in flight per load generator process; **quotes/s received**: quote entries the clients got per second (offered: published × subscribers); **p50 / p99**: publish→client latency at the fixed delivery rate; **added**: the proxied run minus the direct run of the same round, median over rounds; **µs per frame**: the process\'s CPU (utime + stime from /proc/<pid>/stat) over the window per frame the clients received.', '')
  if (main) out.push(...mainTable(main, pr.summary?.[main.id] ?? {}, pr, label))
  out.push('Every scenario (layout) side by side: cores busy are the sums of what each party used (load generator, Redis, publisher, gateway, proxy) on the core the layout put it on; other processes on the machine are not in them. Steal and host stall (the hiccup meter\'s longest late wake-up in the window) say how much the machine itself stalled a run (medians over its rounds).', '')
  out.push('| scenario | layout | deliveries/s offered | client | path | quotes/s received | p50 / p99 (ms) | added p50 / p99 (ms) | proxy µs/frame | core 0 busy | core 1 busy | steal % | host stall (ms) |')
  out.push('| --- | --- | ---: | --- | --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: |')
  for (const sc of pr.scenarios) {
    const s = pr.summary?.[sc.id] ?? {}
    for (const path of sc.paths) {
      const x = s[path]
      if (!x) { out.push(`| ${sc.title} | ${sc.layout} | ${f(sc.deliveries)} | ${sc.mode} | ${label(path)} | failed | | | | | | | |`); continue }
      out.push(`| ${sc.title} | ${sc.layout} | ${f(sc.deliveries)} | ${sc.mode} | ${label(path)} | ${f(x.entries)} | ${f(x.p50, 1)} / ${f(x.p99, 1)} | ${path === 'direct' ? '' : `${signed(x.addedP50)} / ${signed(x.addedP99)}`} | ${path === 'direct' ? '' : f(x.proxyUsPerFrame, 1)} | ${pct(x.coreBusy?.['0'])} | ${pct(x.coreBusy?.['1'])} | ${x.steal === null || x.steal === undefined ? 'n/a' : f(x.steal * 100, 1)} | ${f(x.hiccupMs, 1)} |`)
    }
  }
  out.push('')
  for (const sc of pr.scenarios) out.push(`- **${sc.title}** (${sc.layout}): ${pr.layouts?.[sc.layout]?.text ?? ''}.`)
  out.push('')
  const old = pr.summary?.['old-run']?.nginx
  const same = pr.summary?.['with-loadgen']?.nginx
  if (old) {
    const o = pr.scenarios.find((/** @type {any} */ s) => s.id === 'old-run')
    out.push(`The 2026-11-22 measurement (nginx +107 ms p50, +182 ms p99) repeated: its layout, ${f(o.deliveries)} deliveries/s and the goroutine client: nginx added ${signed(old.addedP50)} / ${signed(old.addedP99)} ms with core 0 (load generator, Redis, publisher, nginx) ${pct(old.coreBusy?.['0'])} busy (direct: ${pct(pr.summary['old-run'].direct?.coreBusy?.['0'])}).${same ? ` The same layout at ${f(pr.scenarios.find((/** @type {any} */ s) => s.id === 'with-loadgen').deliveries)} deliveries/s with the epoll client: ${signed(same.addedP50)} / ${signed(same.addedP99)} ms, core 0 ${pct(same.coreBusy?.['0'])} busy.` : ''}`, '')
  }
  return out
}

/**
 * The main layout's table, one row per path.
 *
 * @param {any} sc the scenario
 * @param {Record<string, any>} s its summary by path
 * @param {any} pr
 * @param {(path: string) => string} label
 * @returns {string[]}
 */
function mainTable (sc, s, pr, label) {
  const out = [`**${sc.title}**: ${pr.layouts?.[sc.layout]?.text ?? sc.layout}; ${f(sc.deliveries)} deliveries/s offered to every path, median of ${sc.reps} round(s).`, '']
  out.push('| path | proxy processes | held (connected) | proxy RSS per conn | handshakes/s | handshake p50 / p99 (ms) | quotes/s received (offered) | frames/s | p50 / p99 (ms) | added p50 / p99 (ms) | proxy CPU µs/frame | proxy CPU (cores) | gateway µs/frame |')
  out.push('| --- | ---: | --- | ---: | ---: | --- | ---: | ---: | --- | --- | ---: | ---: | ---: |')
  for (const path of sc.paths) {
    const x = s[path]
    if (!x) { out.push(`| ${label(path)} | | failed: ${pr.runs.find((/** @type {any} */ r) => r.scenario === sc.id && r.path === path && r.error)?.error ?? 'no run'} | | | | | | | | | | |`); continue }
    const proxied = path !== 'direct'
    out.push(`| ${label(path)} | ${proxied ? f(x.proxyProcesses) : ''} | ${f(x.held)} (${f(x.conns)}) | ${proxied ? `${f(x.proxyBytesPerConn / 1024, 1)} KiB` : ''} | ${f(x.handshakesPerSec)} | ${f(x.handshakeP50, 1)} / ${f(x.handshakeP99, 1)} | ${f(x.entries)} (${f(x.expected)}) | ${f(x.frames)} | ${f(x.p50, 1)} / ${f(x.p99, 1)} | ${proxied ? `${signed(x.addedP50)} / ${signed(x.addedP99)}` : ''} | ${proxied ? f(x.proxyUsPerFrame, 1) : ''} | ${proxied ? f(x.proxyCpu, 2) : ''} | ${f(x.gatewayUsPerFrame, 1)} |`)
  }
  out.push('')
  return out
}
