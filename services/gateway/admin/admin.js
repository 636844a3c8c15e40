// The admin view (GET /admin/ beside /metrics): the fleet from
// GET /admin/fleet every 2 s, as `wsps top` shows it; a user's connections
// on every gateway, and the actions `wsps disconnect` and `wsps drain` take.
// The token is typed in (or given as #token=... in the URL fragment, which
// no server sees) and kept for this tab only.



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
 * A call of the admin API with the tab's token.
 *
 * @param {string} path
 * @param {unknown} [body] POSTed when given
 * @returns {Promise<any>} the answer; throws `CODE: message` when refused
 */
async function call (path, body) {
  const res = await fetch(path, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${sessionStorage.getItem(KEY)}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    cache: 'no-store'
  })
  const answer = await res.json()
  if (!res.ok) throw Object.assign(new Error(`${answer.code}: ${answer.message}`), { status: res.status })
  return answer
}

/**
 * @param {string} label
 * @param {() => Promise<void>} act
 */
function button (label, act) {
  const b = document.createElement('button')
  b.type = 'button'
  b.textContent = label
  b.addEventListener('click', () => {
    b.disabled = true
    act().catch((err) => { $('action').textContent = err.message }).finally(() => { b.disabled = false })
  })
  return b
}

/**
 * @param {string} tableId
 * @param {{cells: string[], late?: boolean, ready?: boolean, action?: HTMLElement}[]} rows
 */
function fill (tableId, rows) {
  const body = /** @type {HTMLTableSectionElement} */ ($(tableId).querySelector('tbody'))
  body.replaceChildren(...rows.map(({ cells, late = false, ready = true, action }) => {
    const tr = document.createElement('tr')
    if (late) tr.className = 'late'
    else if (!ready) tr.className = 'unready'
    for (const c of cells) {
      const td = document.createElement('td')
      td.textContent = c
      tr.append(td)
    }
    if (action) {
      const td = document.createElement('td')
      td.className = 'action'
      td.append(action)
      tr.append(td)
    }
    return tr
  }))
}

/**
 * @param {string} what
 * @param {{matched: number, missing: string[]}} answer
 */
function told (what, answer) {
  $('action').textContent = `${what}: ${answer.matched}${answer.missing.length ? ` (not answered in time: ${answer.missing.join(', ')})` : ''}`
}

/** The connections of the user typed in, on every gateway. */
async function lookup () {
  const user = /** @type {HTMLInputElement} */ ($('user')).value
  const answer = await call(`connections?user=${encodeURIComponent(user)}`)
  const rows = answer.answers.flatMap((/** @type {any} */ a) => (a.connections ?? []).map((/** @type {any} */ c) => ({
    cells: [a.node, String(c.id), c.class ?? '', c.ip, c.symbols.map((/** @type {any} */ s) => `${s.symbol}${s.mode === 'merge' ? '' : ` (${s.mode})`}${s.delayed ? ' delayed' : ''}`).join(', '), `${c.bufferedBytes} B`, c.slowForMs ? `${Math.round(c.slowForMs / 1000)} s` : '', `${c.resumes.recovered} / ${c.resumes.notRecovered}`],
    action: button('Disconnect', async () => {
      told('disconnected', await call('disconnect', { node: a.node, connection: c.id }))
      await lookup()
    })
  })))
  fill('connections', rows)
  told(`connections of ${user}`, answer)
}

$('lookup').addEventListener('submit', (e) => {
  e.preventDefault()
  lookup().catch((err) => { $('action').textContent = err.message })
})
$('disconnect-user').addEventListener('click', () => {
  const user = /** @type {HTMLInputElement} */ ($('user')).value
  if (!user) return
  call('disconnect', { user }).then((answer) => {
    told(`disconnected ${user}`, answer)
    return lookup()
  }).catch((err) => { $('action').textContent = err.message })
})

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
    cells: [g.node, readiness(g), String(g.connections), String(g.channels), String(g.slowClients), String(g.quotesInPerS), `${g.loopDelayP99Ms} ms`, String(g.staleCount), seen(g)],
    action: g.draining ? undefined : button('Drain', async () => told(`drained ${g.node}`, await call('drain', { node: g.node })))
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
