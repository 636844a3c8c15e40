// The subscribe and unsubscribe messages of the ws-stream provider
// (WSPS_STREAM_SUBSCRIBE, WSPS_STREAM_UNSUBSCRIBE), written as a JSON
// template with placeholders for the symbols:
//
//   {symbols}        a JSON array: ["AAPL","MSFT"]; one message per batch
//   {symbols:ITEM}   inside a JSON string: ITEM once per symbol, its
//                    {symbol} replaced by the symbol, the copies joined by
//                    commas: "{symbols:Q.{symbol},T.{symbol}}" becomes
//                    "Q.AAPL,T.AAPL,Q.MSFT,T.MSFT"; one message per batch
//   {symbol}         a JSON string: "AAPL"; one message per symbol
//
// A template may repeat {symbols} and {symbols:ITEM} (Alpaca: quotes and
// trades lists); it may not mix them with {symbol}. A batch holds at most
// WSPS_STREAM_SUBSCRIBE_BATCH symbols (0: all in one message).

/** `{symbols:ITEM}`; ITEM is any text without braces but its `{symbol}`. */
const EACH = String.raw`\{symbols:((?:[^{}]|\{symbol\})*)\}`
const PLACEHOLDER = new RegExp(String.raw`${EACH}|\{symbols\}|\{symbol\}`, 'g')

/** Shown in the start-up error: what the template makes of two symbols. */
const EXAMPLE = Object.freeze(['AAPL', 'MSFT'])

/** @typedef {(symbols: string[]) => string} Part */

/**
 * The symbol as it must appear inside a JSON string. Symbols pass the
 * protocol's symbol rule (no quote or backslash), so this is the symbol.
 * @param {string} s
 */
const inString = (s) => JSON.stringify(s).slice(1, -1)

/**
 * @param {string} template
 * @param {number} batch most symbols per message, 0: no limit
 * @returns {(symbols: string[]) => string[]} the messages for these symbols, none for none
 * @throws {Error} when the template has no placeholder, or mixes the forms
 */
export function compileTemplate (template, batch = 0) {
  /** @type {(string | Part)[]} */
  const parts = []
  let perSymbol = false
  let perBatch = false
  let at = 0
  for (const m of template.matchAll(PLACEHOLDER)) {
    parts.push(template.slice(at, m.index))
    at = m.index + m[0].length
    if (m[0] === '{symbol}') {
      perSymbol = true
      parts.push((symbols) => JSON.stringify(symbols[0]))
    } else if (m[0] === '{symbols}') {
      perBatch = true
      parts.push((symbols) => JSON.stringify(symbols))
    } else {
      const item = m[1]
      if (!item.includes('{symbol}')) throw new Error(`has ${m[0]} without {symbol} in it`)
      perBatch = true
      parts.push((symbols) => symbols.map((s) => item.replaceAll('{symbol}', inString(s))).join(','))
    }
  }
  parts.push(template.slice(at))
  if (!perSymbol && !perBatch) throw new Error('must contain {symbols}, {symbols:ITEM} or {symbol}')
  if (perSymbol && perBatch) throw new Error('mixes {symbol} (one message per symbol) with {symbols} (one message per batch)')
  const size = perSymbol ? 1 : batch > 0 ? batch : Infinity
  /** @param {string[]} symbols */
  const render = (symbols) => parts.map((p) => (typeof p === 'string' ? p : p(symbols))).join('')
  return (symbols) => {
    const frames = []
    for (let i = 0; i < symbols.length; i += size) frames.push(render(symbols.slice(i, i + size)))
    return frames
  }
}

/**
 * Whether a {symbol} or {symbols} placeholder stands inside a JSON string
 * of the template, where it would put quotes inside quotes.
 * @param {string} template
 */
function quotedPlaceholder (template) {
  template = template.replace(new RegExp(EACH, 'g'), '')
  let quoted = false
  for (let i = 0; i < template.length; i++) {
    const c = template[i]
    if (quoted && c === '\\') i++
    else if (c === '"') quoted = !quoted
    else if (quoted && (template.startsWith('{symbol}', i) || template.startsWith('{symbols}', i))) return true
  }
  return false
}

/**
 * Start-up check: the template renders JSON. The error shows what it
 * rendered for two example symbols, so the mistake can be seen.
 * @param {string} template
 * @param {number} batch
 * @throws {Error} e.g. `renders {"params":"Q.AAPL}" for ["AAPL","MSFT"], which is not JSON`
 */
export function checkTemplate (template, batch) {
  for (const frame of compileTemplate(template, batch)([...EXAMPLE])) {
    try { JSON.parse(frame) } catch {
      const hint = quotedPlaceholder(template) ? ' (inside a JSON string, write {symbols:ITEM}, e.g. "{symbols:Q.{symbol}}")' : ''
      throw new Error(`renders ${frame} for ${JSON.stringify(EXAMPLE)}, which is not JSON${hint}`)
    }
  }
}
