// The PUSH side of the job queue. Every replica ticks; the schedule script
// is atomic in Redis, so each due symbol becomes exactly one job per
// interval however many replicas run, and no leader election is needed.

/** Symbols one tick may schedule, bounding the script's run time. */
const MAX_PER_TICK = 20000

export class Scheduler {
  /**
   * @param {object} options
   * @param {import('@wsps/shared/scripts').ScriptedRedis} options.redis
   * @param {import('@wsps/shared/keys').RedisKeys} options.keys
   * @param {number} options.intervalMs
   * @param {number} options.tickMs
   * @param {number} options.batchSize
   * @param {import('./metrics.js').FetcherMetrics} options.metrics
   * @param {import('pino').Logger} options.logger
   * @param {() => number} [options.now] Redis' clock (RedisClock.now)
   */
  constructor ({ redis, keys, intervalMs, tickMs, batchSize, metrics, logger, now = Date.now }) {
    /** Redis' clock (RedisClock.now): due times are shared by every replica. */
    this.now = now
    this.redis = redis
    this.keys = keys
    this.intervalMs = intervalMs
    this.tickMs = tickMs
    this.batchSize = batchSize
    this.metrics = metrics
    this.log = logger.child({ component: 'scheduler' })
    /** @type {NodeJS.Timeout | null} */
    this.timer = null
    this.ticks = 0
  }

  start () {
    const run = async () => {
      try {
        await this.tick()
      } catch (err) {
        this.log.warn({ err: /** @type {Error} */ (err).message }, 'schedule tick failed')
      }
      if (this.timer !== null) this.timer = setTimeout(run, this.tickMs)
    }
    this.timer = setTimeout(run, 0)
  }

  async tick () {
    if (this.redis.status !== 'ready') return
    const { keys } = this
    const [symbols, jobs, expired, pushed] = await this.redis.wspsSchedule(
      keys.demand, keys.due, keys.jobs, keys.push, keys.fenceToken, this.now(), this.intervalMs, this.batchSize, MAX_PER_TICK)
    if (symbols) this.metrics.scheduled.inc(symbols)
    if (pushed) this.metrics.skippedPushed.inc(pushed)
    if (jobs) this.metrics.jobsPushed.inc(jobs)
    if (expired) {
      this.metrics.leasesExpired.inc(expired)
      this.log.info({ expired }, 'leases expired: symbols no longer fetched')
    }
    // Sample queue gauges about once a second.
    if (++this.ticks % Math.max(1, Math.round(1000 / this.tickMs)) === 0) {
      const [[, demand], [, queue]] = /** @type {[unknown, number][]} */ (await this.redis.multi().zcard(keys.demand).llen(keys.jobs).exec())
      this.metrics.demand.set(demand)
      this.metrics.queue.set(queue)
    }
  }

  stop () {
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
  }
}
