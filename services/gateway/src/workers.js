// WSPS_WORKERS: several gateway processes in one pod, sharing the listening
// port through node:cluster (the primary accepts and hands connections to
// the workers in turn). Each worker is a whole gateway with its own Redis
// subscriptions; the primary only forks, relays questions between workers
// and stops them together.
//
// A probe or scrape reaches one worker, but must describe the pod: the
// worker that gets `/readyz` or `/metrics` asks the primary, which asks every
// worker and answers with all their replies (ready only when every worker
// is; metrics labelled `worker`).

import cluster from 'node:cluster'
import { readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'

/** A worker that does not answer a question in this time counts as not ready (and without metrics). */
const ASK_TIMEOUT_MS = 2000
/** Delay before replacing a worker that died (a crash loop must not spin). */
const REFORK_DELAY_MS = 1000

/**
 * The CPUs this process may use: the CPUs it may run on, capped by the
 * cgroup's CPU quota (a Kubernetes CPU limit) when there is one.
 *
 * @param {string} [cpuMaxFile] cgroup v2 `cpu.max` ("max 100000" or "<quota> <period>")
 * @returns {number} at least 1
 */
export function usableCpus (cpuMaxFile = '/sys/fs/cgroup/cpu.max') {
  let cpus = availableParallelism()
  try {
    const [quota, period] = readFileSync(cpuMaxFile, 'utf8').trim().split(/\s+/)
    if (quota !== 'max' && Number(period) > 0) cpus = Math.min(cpus, Math.ceil(Number(quota) / Number(period)))
  } catch {
    // No cgroup v2 file (not Linux, or cgroup v1): the CPU count stands.
  }
  return Math.max(1, cpus)
}

/**
 * @param {string} setting WSPS_WORKERS: a count or `auto`
 * @returns {number}
 */
export function workerCount (setting) {
  return setting === 'auto' ? usableCpus() : Number(setting)
}

/**
 * @typedef {'ready' | 'metrics'} Question
 * @typedef {{wsps: 'ask', id: number, what: Question}} AskMessage worker -> primary
 * @typedef {{wsps: 'query', id: number, what: Question}} QueryMessage primary -> every worker
 * @typedef {{wsps: 'reply', id: number, value: unknown}} ReplyMessage worker -> primary
 * @typedef {{wsps: 'answer', id: number, values: unknown[]}} AnswerMessage primary -> the asking worker
 */

/**
 * The primary: forks `count` workers (they run main.js again and find
 * themselves workers), replaces one that dies, relays questions, and on
 * SIGTERM/SIGINT stops them all at once (each drains its own clients) and
 * exits when they have.
 *
 * @param {number} count
 * @param {import('pino').Logger} logger
 */
export function runPrimary (count, logger) {
  let stopping = false
  let nextQuery = 1
  /** @type {Map<number, {values: unknown[], expected: number, done: (values: unknown[]) => void, timer: NodeJS.Timeout}>} */
  const queries = new Map()

  const fork = () => {
    const worker = cluster.fork()
    worker.on('message', (/** @type {AskMessage | ReplyMessage} */ msg) => {
      if (msg?.wsps === 'ask') relay(worker, msg)
      else if (msg?.wsps === 'reply') collect(msg)
    })
  }

  /**
   * @param {import('node:cluster').Worker} asker
   * @param {AskMessage} msg
   */
  const relay = (asker, { id, what }) => {
    const workers = /** @type {import('node:cluster').Worker[]} */ (Object.values(cluster.workers ?? {})).filter((w) => w !== undefined && w.isConnected())
    const qid = nextQuery++
    const done = (/** @type {unknown[]} */ values) => {
      clearTimeout(queries.get(qid)?.timer)
      queries.delete(qid)
      if (asker.isConnected()) asker.send(/** @type {AnswerMessage} */ ({ wsps: 'answer', id, values }))
    }
    // Fewer answers than workers (one is starting or stuck) is an answer too.
    const timer = setTimeout(() => done(queries.get(qid)?.values ?? []), ASK_TIMEOUT_MS)
    queries.set(qid, { values: [], expected: count, done, timer })
    for (const w of workers) w.send(/** @type {QueryMessage} */ ({ wsps: 'query', id: qid, what }))
  }

  /** @param {ReplyMessage} msg */
  const collect = ({ id, value }) => {
    const q = queries.get(id)
    if (!q) return
    q.values.push(value)
    if (q.values.length === q.expected) q.done(q.values)
  }

  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) {
        logger.info('every worker stopped')
        process.exit(0)
      }
      return
    }
    logger.error({ worker: worker.id, code, signal }, 'worker died; starting another')
    setTimeout(fork, REFORK_DELAY_MS).unref()
  })

  for (const signal of /** @type {const} */ (['SIGTERM', 'SIGINT'])) {
    process.on(signal, () => {
      if (stopping) {
        logger.warn({ signal }, 'second signal: stopping workers without drain')
        for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGKILL')
        process.exit(1)
      }
      stopping = true
      logger.info({ signal, workers: count }, 'signal received: every worker drains')
      for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGTERM')
    })
  }

  logger.info({ workers: count }, 'starting workers')
  for (let i = 0; i < count; i++) fork()
}

/** @returns {number} this worker's number (1, 2, ...; 0 outside a worker), its `worker` label */
export function workerId () {
  return cluster.worker?.id ?? 0
}

/**
 * A worker's side of the questions: it answers the primary's queries with
 * `answers[what]()`, and asks about every worker with ask().
 *
 * @param {Record<Question, () => unknown | Promise<unknown>>} answers
 */
export function workerPeer (answers) {
  let nextAsk = 1
  /** @type {Map<number, (values: unknown[]) => void>} */
  const waiting = new Map()
  process.on('message', (/** @type {QueryMessage | AnswerMessage} */ msg) => {
    if (msg?.wsps === 'query') {
      // A worker still starting may not have what it takes to answer yet:
      // then it does not answer, and counts as not ready.
      new Promise((resolve) => resolve(answers[msg.what]())).then(
        (value) => process.send?.(/** @type {ReplyMessage} */ ({ wsps: 'reply', id: msg.id, value })),
        () => {} // no reply: the primary's timeout counts it out
      )
    } else if (msg?.wsps === 'answer') {
      waiting.get(msg.id)?.(msg.values)
      waiting.delete(msg.id)
    }
  })
  return {
    /** The worker's number (1, 2, ...), for the `worker` label. */
    id: workerId(),
    /**
     * @param {Question} what
     * @returns {Promise<unknown[]>} every worker's answer (this one's included)
     */
    ask (what) {
      const id = nextAsk++
      return new Promise((resolve) => {
        waiting.set(id, resolve)
        process.send?.(/** @type {AskMessage} */ ({ wsps: 'ask', id, what }))
      })
    }
  }
}

/** @typedef {ReturnType<typeof workerPeer>} WorkerPeer */
