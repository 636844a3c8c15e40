// Which gateway(s) the page talks to. Default: same-origin `/ws` (behind
// nginx or an ingress that balances). `?ws=ws://a/ws,ws://b/ws` lists
// gateways to rotate through on reconnect, for setups without a balancer
// (the browser tests, a bare pair of gateways). Only gateways on the page's
// own host are accepted: a crafted link must not point the page at a server
// that feeds it fake prices.

/**
 * @param {{href: string, search: string}} location the page's
 * @returns {string[]} absolute ws:/wss: URLs, at least one
 */
export function wsUrlsFromLocation (location) {
  const listed = new URLSearchParams(location.search).get('ws')
  const host = new URL(location.href).hostname
  const raw = listed ? listed.split(',').map((s) => s.trim()).filter(Boolean) : ['/ws']
  /** @type {string[]} */
  const urls = []
  for (const entry of raw) {
    let u
    try {
      u = new URL(entry, location.href)
    } catch {
      continue
    }
    if (u.protocol === 'http:') u.protocol = 'ws:'
    else if (u.protocol === 'https:') u.protocol = 'wss:'
    // Anything else (javascript:, data:, ...) is not a gateway.
    if ((u.protocol === 'ws:' || u.protocol === 'wss:') && u.hostname === host) urls.push(u.href)
  }
  return urls.length ? urls : wsUrlsFromLocation({ href: location.href, search: '' })
}
