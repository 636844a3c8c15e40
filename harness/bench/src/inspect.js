// Talks to a Node server under test through its inspector (started with
// --inspect=127.0.0.1:0): a full GC before memory is read, so idle memory
// is what stays live, the same way for every server, with no hook in the
// servers' own code.

import WebSocket from 'ws'

/**
 * @param {string[]} stderrLines what the process printed on stderr so far
 * @returns {string | null} the inspector's ws:// URL
 */
export function inspectorUrl (stderrLines) {
  for (const line of stderrLines) {
    const m = /Debugger listening on (ws:\/\/\S+)/.exec(line)
    if (m) return m[1]
  }
  return null
}

/**
 * Runs inspector methods in order over one session.
 *
 * @param {string} url
 * @param {string[]} methods e.g. HeapProfiler.collectGarbage
 * @param {number} [timeoutMs]
 * @returns {Promise<any[]>} each method's result
 */
export async function inspect (url, methods, timeoutMs = 60_000) {
  const ws = new WebSocket(url)
  try {
    await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject) })
    const results = []
    for (const [i, method] of methods.entries()) {
      ws.send(JSON.stringify({ id: i + 1, method }))
      results.push(await new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`inspector ${method}: no answer in ${timeoutMs} ms`)), timeoutMs)
        /** @param {import('ws').RawData} data */
        const onMessage = (data) => {
          const msg = JSON.parse(String(data))
          if (msg.id !== i + 1) return
          clearTimeout(timer)
          ws.off('message', onMessage)
          if (msg.error) reject(new Error(`inspector ${method}: ${msg.error.message}`))
          else resolve(msg.result)
        }
        ws.on('message', onMessage)
      }))
    }
    return results
  } finally {
    ws.terminate()
  }
}

/**
 * A full garbage collection in the inspected process.
 *
 * @param {string} url
 * @returns {Promise<{heapUsed: number}>} the JS heap in use after it
 */
export async function collectGarbage (url) {
  // Twice: the first pass can leave objects that only die once their weak
  // callbacks and finalizers ran.
  const [, , usage] = await inspect(url, ['HeapProfiler.collectGarbage', 'HeapProfiler.collectGarbage', 'Runtime.getHeapUsage'])
  return { heapUsed: usage.usedSize }
}
