// The admin view (GET /admin/ beside /metrics): the fleet from
// GET /admin/fleet every 2 s, as `wsps top` shows it. The token is typed
// in (or given as #token=... in the URL fragment, which no server sees)
// and kept for this tab only.



const REFRESH_MS = 2000
const KEY = 'wsps.admin.token'

/** @param {string} id */
const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id))

const fromFragment = new URLSearchParams(location.hash.slice(1)).get('token')
if (fromFragment) {
  sessionStorage.setItem(KEY, fromFragment)
  history.replaceState(null, '', location.pathname)
}

$('login').addEventListener('submit', (e) => {
  e.preventDefault()
  sessionStorage.setItem(KEY, /** @type {HTMLInputElement} */ ($('token')).value)
  $('login').hidden = true
  refresh()
})

/**
 * @param {string} tableId
 * @param {{cells: string[], late: boolean, ready: boolean}[]} rows
 */
function fill (tableId, rows) {
  const body = /** @type {HTMLTableSectionElement} */ ($(tableId).querySelector('tbody'))
  body.replaceChildren(...rows.map(({ cells, late, ready }) => {
    const tr = document.createElement('tr')
    if (late) tr.className = 'late'
    else if (!ready) tr.className = 'unready'
    for (const c of cells) {
      const td = document.createElement('td')
      td.textContent = c
      tr.append(td)
    }
    return tr
  }))
}

/**
 * @param {string} listId
 * @param {string[]} items
 */
function list (listId, items) {
  $(listId).replaceChildren(...(items.length ? items : ['none']).map((text) => {
    const li = document.createElement('li')
    li.textContent = text
    return li
  }))
}

/** @param {Record<string, any>} p */
const seen = (p) => `${p.late ? 'LATE ' : ''}${Math.round(p.ageMs / 1000)}s ago`
/** @param {Record<string, any>} p */
const readiness = (p) => (p.draining ? 'draining' : p.ready ? 'yes' : 'NO')

/** @param {{at: number, processes: Record<string, any>[]}} fleet */
function show ({ at, processes }) {
  const gateways = processes.filter((p) => p.role === 'gateway')
  const fetchers = processes.filter((p) => p.role === 'fetcher')
  fill('gateways', gateways.map((g) => ({
    late: g.late,
    ready: g.ready,
    cells: [g.node, readiness(g), String(g.connections), String(g.channels), String(g.slowClients), String(g.quotesInPerS), `${g.loopDelayP99Ms} ms`, String(g.staleCount), seen(g)]
  })))
  fill('fetchers', fetchers.map((f) => ({
    late: f.late,
    ready: f.ready,
    cells: [f.node, readiness(f), String(f.provider), String(f.publishedPerS), String(f.refusedPerS), `${f.loopDelayP99Ms} ms`, seen(f)]
  })))
  list('stale', gateways.flatMap((g) => (g.stale ?? []).map((/** @type {{symbol: string, since: number}} */ s) => `${s.symbol} on ${g.node} since ${new Date(s.since).toLocaleTimeString()}`)))
  /** @type {Map<string, number>} */
  const watched = new Map()
  for (const g of gateways) for (const t of g.top ?? []) watched.set(t.symbol, (watched.get(t.symbol) ?? 0) + t.subscribers)
  list('watched', [...watched].sort((a, b) => b[1] - a[1]).slice(0, 10).map(([s, n]) => `${s}: ${n} subscribers`))
  const late = processes.filter((p) => p.late).length
  $('status').textContent = `${gateways.length} gateways, ${fetchers.length} fetchers${late ? `, ${late} late` : ''}; as of ${new Date(at).toLocaleTimeString()}`
}

async function refresh () {
  const token = sessionStorage.getItem(KEY)
  if (!token) {
    $('login').hidden = false
    $('status').textContent = 'give the admin token'
    return
  }
  try {
    const res = await fetch('fleet', { headers: { authorization: `Bearer ${token}` }, cache: 'no-store' })
    const body = await res.json()
    if (res.status === 401) {
      sessionStorage.removeItem(KEY)
      $('error').textContent = `${body.code}: ${body.message}`
      $('login').hidden = false
      return
    }
    if (!res.ok) throw new Error(`${body.code}: ${body.message}`)
    $('error').textContent = ''
    show(body)
  } catch (err) {
    $('error').textContent = `the fleet could not be read: ${/** @type {Error} */ (err).message}`
  }
  setTimeout(refresh, REFRESH_MS)
}

refresh()
