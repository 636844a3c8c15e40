// The PULL side of the job queue: competing consumers. Each job is popped by
// exactly one replica (BLPOP is atomic). A job older than one interval is
// dropped: the scheduler has already pushed a fresher one for its symbols,
// so a backlog never turns into a burst of stale fetches. Its quotes carry
// the job's fencing token: a worker that was paused, or whose Redis link
// went silent, after it popped the job is refused by the publish script
// once a newer job's quotes of the symbol were published (scripts.js).

import { latestQuotes } from '@wsps/shared/latest'
import { parsePublished } from '@wsps/shared/published'
import { Code } from './errors.js'

/** BLPOP timeout: how quickly a stopping worker notices. */
const POP_TIMEOUT_S = 1

/**
 * @typedef {{s: string[], t: number, f?: string}} Job symbols, the time it was
 *   scheduled and its fencing token (absent from a job of a version without)
 */

export class Worker {
  /**
   * @param {object} options
   * @param {import('ioredis').Redis} options.blocking a connection used only for BLPOP
   * @param {import('@wsps/shared/scripts').ScriptedRedis} options.redis
   * @param {import('@wsps/shared/keys').RedisKeys} options.keys
   * @param {import('./providers/provider.js').Provider} options.provider
   * @param {import('./publisher.js').Publisher} options.publisher
   * @param {number} options.intervalMs
   * @param {number} options.concurrency
   * @param {import('./metrics.js').FetcherMetrics} options.metrics
   * @param {import('pino').Logger} options.logger
   * @param {() => number} [options.now] Redis' clock (RedisClock.now)
   * @param {import('./sim-books.js').SimBooks | null} [options.books] the simulated market's books, moved by its quotes
   */
  constructor ({ blocking, redis, keys, provider, publisher, intervalMs, concurrency, metrics, logger, now = Date.now, books = null }) {
    this.books = books
    /** Redis' clock (RedisClock.now): a job's time was written on it. */
    this.now = now
    this.blocking = blocking
    this.redis = redis
    this.keys = keys
    this.provider = provider
    this.publisher = publisher
    this.intervalMs = intervalMs
    this.concurrency = concurrency
    this.metrics = metrics
    this.log = logger.child({ component: 'worker' })
    this.running = false
    this.active = 0
    /** @type {(() => void) | null} */
    this.slotFreed = null
    /** @type {Promise<void> | null} */
    this.loop = null
  }

  start () {
    this.running = true
    this.loop = this.run()
  }

  async run () {
    while (this.running) {
      if (this.active >= this.concurrency) {
        await new Promise((resolve) => { this.slotFreed = () => resolve(undefined) })
        continue
      }
      let popped
      try {
        popped = await this.blocking.blpop(this.keys.jobs, POP_TIMEOUT_S)
      } catch (err) {
        if (!this.running) break
        this.log.warn({ err: /** @type {Error} */ (err).message }, 'job pop failed')
        await new Promise((resolve) => setTimeout(resolve, 500))
        continue
      }
      if (!popped) continue
      /** @type {Job} */
      let job
      try {
        job = JSON.parse(popped[1])
      } catch {
        this.metrics.jobs.inc({ result: 'bad_job' })
        continue
      }
      if (!Array.isArray(job.s)) {
        this.metrics.jobs.inc({ result: 'bad_job' })
        continue
      }
      const deadline = job.t + this.intervalMs
      if (this.now() > deadline) {
        this.metrics.jobs.inc({ result: 'stale' })
        continue
      }
      this.active++
      this.metrics.activeJobs.set(this.active)
      // A job holds its slot until it is done, or one interval past its
      // deadline: a job stuck on one Redis Cluster shard failing over (its
      // reads and writes wait for the command timeout) must not stop the
      // others' jobs. What it still publishes after that is refused as late.
      let released = false
      const release = () => {
        if (released) return
        released = true
        clearTimeout(overrun)
        this.active--
        this.metrics.activeJobs.set(this.active)
        const freed = this.slotFreed
        this.slotFreed = null
        freed?.()
      }
      const overrun = setTimeout(() => {
        this.metrics.jobs.inc({ result: 'overran' })
        release()
      }, Math.max(0, deadline - this.now()) + this.intervalMs)
      this.work(job, deadline).finally(release)
    }
  }

  /**
   * @param {Job} job
   * @param {number} deadline
   */
  async work (job, deadline) {
    const started = performance.now()
    const startTime = Date.now()
    try {
      /** @type {Map<string, any>} */
      const previous = new Map()
      let symbols = job.s
      if (this.provider.needsPrevious) {
        // Half the time left: the fetch needs the rest.
        const raws = await latestQuotes(this.redis, this.keys, symbols, { waitMs: (deadline - this.now()) / 2 })
        // On a cluster, symbols of a shard that is failing over are left to
        // the next interval; the other shards' symbols go on.
        const unread = raws.filter((raw) => raw instanceof Error)
        if (unread.length === raws.length) throw unread[0]
        if (unread.length) {
          this.log.warn({ err: /** @type {Error} */ (unread[0]).message, symbols: unread.length }, 'symbols left to the next interval: their shard failed')
        }
        symbols = symbols.filter((_, i) => !(raws[i] instanceof Error))
        raws.forEach((raw, i) => {
          const q = raw === null || raw instanceof Error ? null : parsePublished(raw)
          if (q === null) return
          previous.set(job.s[i], q)
          this.publisher.remember(job.s[i], q.seq)
        })
      }
      const quotes = await this.provider.fetch(symbols, previous, deadline)
      this.metrics.fetchSeconds.observe((performance.now() - started) / 1000)
      const { published, seqs } = await this.publisher.publish(quotes, { tokens: Number(job.f) || 0, trace: { startTime } })
      this.metrics.published.inc(published)
      // A book that missed its step catches up with the next quote's.
      await this.books?.after(quotes, seqs).catch((/** @type {Error} */ err) => {
        this.metrics.books.inc({ result: 'failed' })
        this.log.warn({ err: err.message }, 'books not moved')
      })
      this.metrics.jobs.inc({ result: 'done' })
    } catch (err) {
      const code = /** @type {{code?: string}} */ (err).code
      this.metrics.jobs.inc({ result: code === Code.BREAKER_OPEN ? 'breaker_open' : 'failed' })
      this.log.warn({ err: /** @type {Error} */ (err).message, code, symbols: job.s.length }, 'job failed')
    }
  }

  /** Stops pulling; waits for jobs in hand to finish. */
  async stop () {
    this.running = false
    this.slotFreed?.()
    await this.loop
    while (this.active > 0) await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
