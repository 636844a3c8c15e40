// The k6 modules and globals the load test uses (k6 >= 1.6.0), typed for
// the repository's type check only: k6 runs the scripts as they are. Only
// what loadtest/ uses is declared; see https://grafana.com/docs/k6/latest/javascript-api/.

/** `-e NAME=value` options and the environment k6 was started with. */
declare const __ENV: Record<string, string | undefined>
/** The current VU's number (1-based); 0 in the init context. */
declare const __VU: number
/** The current iteration of the VU (0-based). */
declare const __ITER: number
/** Reads a file in the init context. */
declare function open (path: string, mode?: 'b'): string

declare module 'k6' {
  /**
   * Records each named check as passed or failed: a function is called with
   * `value`, any other entry counts by its truthiness. True when all passed.
   */
  export function check<T> (value: T, checks: Record<string, boolean | ((value: T) => boolean)>, tags?: Record<string, string>): boolean
  /** Blocks the VU for `seconds`. */
  export function sleep (seconds: number): void
}

declare module 'k6/execution' {
  const exec: {
    vu: { idInTest: number, idInInstance: number, iterationInScenario: number, iterationInInstance: number }
    scenario: { name: string, executor: string, startTime: number, progress: number, iterationInInstance: number, iterationInTest: number }
    instance: { vusActive: number, vusInitialized: number, iterationsCompleted: number, iterationsInterrupted: number, currentTestRunDuration: number }
    test: { abort (reason?: string): void }
  }
  export default exec
}

declare module 'k6/metrics' {
  type Tags = Record<string, string>
  export class Counter { constructor (name: string, isTime?: boolean); add (value: number, tags?: Tags): void }
  export class Gauge { constructor (name: string, isTime?: boolean); add (value: number, tags?: Tags): void }
  export class Rate { constructor (name: string, isTime?: boolean); add (value: number | boolean, tags?: Tags): void }
  export class Trend { constructor (name: string, isTime?: boolean); add (value: number, tags?: Tags): void }
}

declare module 'k6/websockets' {
  /** The WHATWG WebSocket of k6/websockets: events through on* handlers or addEventListener. */
  export class WebSocket {
    constructor (url: string, protocols?: string | string[] | null, params?: { headers?: Record<string, string>, tags?: Record<string, string> })
    readonly url: string
    /** 0 connecting, 1 open, 2 closing, 3 closed. */
    readonly readyState: number
    readonly bufferedAmount: number
    binaryType: 'blob' | 'arraybuffer'
    onopen: ((event: any) => void) | null
    onmessage: ((event: { data: string | ArrayBuffer }) => void) | null
    onerror: ((event: { error: string }) => void) | null
    onclose: ((event: { code: number, reason: string }) => void) | null
    send (data: string | ArrayBuffer): void
    close (code?: number, reason?: string): void
    ping (): void
    addEventListener (type: 'open' | 'message' | 'error' | 'close' | 'ping' | 'pong', listener: (event: any) => void): void
  }
}
