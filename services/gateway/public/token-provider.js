// Where the page gets its tokens when the gateway has auth on. The page is
// static, so whoever serves it supplies the provider, in one of two ways:
//
//   <script>window.wspsGetToken = async () => (await fetch('/my-app/token')).text()</script>
//   <meta name="wsps-token-url" content="/my-app/wsps-token">
//
// The URL must be same-origin (the page's CSP allows no other) and answer
// with the token as plain text or as JSON `{"token": "..."}`; cookies are
// sent, so the application can mint a token for its logged-in user.

/**
 * @param {{querySelector (selector: string): {getAttribute (name: string): string | null} | null}} doc
 * @param {{wspsGetToken?: unknown}} global
 * @param {typeof fetch} [fetchFn]
 * @returns {(() => Promise<string>) | undefined} undefined: the page connects without a token
 */
export function tokenProvider (doc, global, fetchFn = globalThis.fetch) {
  const hook = global.wspsGetToken
  if (typeof hook === 'function') return async () => String(await hook())
  const url = doc.querySelector('meta[name="wsps-token-url"]')?.getAttribute('content')
  if (!url) return undefined
  return async () => {
    const res = await fetchFn(url, { credentials: 'same-origin', cache: 'no-store' })
    if (!res.ok) throw new Error(`token URL answered ${res.status}`)
    const text = (await res.text()).trim()
    return text.startsWith('{') ? String(JSON.parse(text).token) : text
  }
}
