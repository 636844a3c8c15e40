// Redis key and channel names, in one place for every service.
//
// Per-symbol keys share the hash tag {SYMBOL}, so a symbol's seq, latest
// quote and channel live in one Redis Cluster slot and the publish script can
// touch them atomically. The scheduling keys are global by design (one ZSET
// of demand, one of due times, one job list) and share the hash tag {sched},
// so the scripts that touch them together also run on a Redis Cluster.
// A user's sessions are one key tagged {u:USER}: the session script touches
// it alone, and users spread over a Cluster's slots. The usage records share
// the hash tag {usage}: the close script writes an open record's month
// streams and removes it in one step.

/**
 * @param {string} prefix WSPS_REDIS_KEY_PREFIX
 */
export function redisKeys (prefix) {
  /**
   * @param {string} channel
   * @param {string} end `}:q` or `}:b`: the channel's kind
   * @returns {string | null} the symbol of `${prefix}:{SYMBOL}${end}`
   */
  const symbolIn = (channel, end) => {
    if (!channel.startsWith(`${prefix}:{`) || !channel.endsWith(end)) return null
    return channel.slice(prefix.length + 2, -end.length)
  }
  return Object.freeze({
    /** Pub/sub channel carrying full quotes of a symbol. */
    channel: (/** @type {string} */ symbol) => `${prefix}:{${symbol}}:q`,
    /**
     * The latest full quote (JSON string, with TTL): the snapshot, with
     * history off. With history on the history stream's newest entry is the
     * latest quote and this key is not written; read either through
     * latestQuotes() (latest.js), which takes the newer.
     */
    latest: (/** @type {string} */ symbol) => `${prefix}:{${symbol}}:last`,
    /** Counter behind a symbol's seq. */
    seq: (/** @type {string} */ symbol) => `${prefix}:{${symbol}}:seq`,
    /**
     * Set (with TTL) while quotes of the symbol are pushed through the publish
     * API: the publish script then refuses quotes of the symbol from a
     * provider, so pushed and fetched quotes never interleave.
     */
    pushed: (/** @type {string} */ symbol) => `${prefix}:{${symbol}}:push`,
    /**
     * STREAM of the symbol's last published quotes (entry ID `<seq>-0`,
     * field `q`), written by the publish script: recovery and gap fill, and
     * its newest entry is the latest quote.
     */
    history: (/** @type {string} */ symbol) => `${prefix}:{${symbol}}:hist`,
    /**
     * The epoch of the symbol's seqs (a short string, no expiry, like the
     * counter it names), written by the publish script with history on.
     * Readers take the epoch from the latest quote, which carries it.
     */
    epoch: (/** @type {string} */ symbol) => `${prefix}:{${symbol}}:epoch`,
    /**
     * The oldest seq of the symbol's history that some gateway's delayed
     * subscribers still need (a number as a string, with a short PX that
     * the gateways serving them renew): the publish script keeps the
     * history from there on (less WSPS_HISTORY_SIZE more), and the retire
     * pass leaves it alone. Absent: trimmed to WSPS_HISTORY_SIZE.
     */
    historyPin: (/** @type {string} */ symbol) => `${prefix}:{${symbol}}:pin`,
    /**
     * The symbol's fence: `"<token> <ts>"`, the highest fencing token and the
     * newest `ts` of the quotes published of it (with the quotes' TTL),
     * written by the publish script, which refuses a quote below either
     * (scripts.js, PUBLISH); raised by a stream owner taking the symbol over
     * (FENCE).
     */
    fence: (/** @type {string} */ symbol) => `${prefix}:{${symbol}}:fence`,
    /**
     * The symbol's order book, whole (JSON `{"seq","epoch","ts","sync","bids","asks"}`,
     * best first, with WSPS_BOOK_TTL_MS expiry renewed by every write), written
     * only by the book script (scripts.js, BOOK); read through readBook() (books.js).
     */
    book: (/** @type {string} */ symbol) => `${prefix}:{${symbol}}:book`,
    /** Pub/sub channel carrying each change of the symbol's book (books.js, BookMessage). */
    bookChannel: (/** @type {string} */ symbol) => `${prefix}:{${symbol}}:b`,
    /**
     * Set (with PX) while the symbol's book is pushed through the publish
     * API: the book script then refuses a provider's (the sim's) writes.
     */
    bookPushed: (/** @type {string} */ symbol) => `${prefix}:{${symbol}}:bpush`,
    /** Symbol out of a book channel name, or null when it is not one of ours. */
    bookSymbolOf: (/** @type {string} */ channel) => symbolIn(channel, '}:b'),
    /** Symbol out of a channel name, or null when it is not ours. */
    symbolOf: (/** @type {string} */ channel) => symbolIn(channel, '}:q'),
    /** ZSET symbol -> lease expiry (ms): symbols some gateway watches. */
    demand: `${prefix}:{sched}:demand`,
    /** ZSET symbol -> lease expiry (ms): symbols whose book some gateway holds (the sim makes books for these). */
    bookDemand: `${prefix}:{sched}:book-demand`,
    /** ZSET symbol -> next fetch time (ms) for demanded symbols. */
    due: `${prefix}:{sched}:due`,
    /** LIST of fetch jobs (JSON), pushed by the scheduler, popped by workers. */
    jobs: `${prefix}:{sched}:jobs`,
    /** ZSET symbol -> push lease expiry (ms): the scheduler makes no jobs for these. */
    push: `${prefix}:{sched}:push`,
    /** HASH symbol -> fetcher node holding the symbol's upstream stream subscription. */
    streamOwner: `${prefix}:{sched}:stream-owner`,
    /** ZSET symbol -> expiry (ms) of that ownership; renewed by the holder every tick. */
    streamLease: `${prefix}:{sched}:stream-lease`,
    /**
     * ZSET fetcher node -> expiry (ms) of its upstream connection slot
     * (WSPS_STREAM_MAX_CONNECTIONS); renewed by the holder every tick.
     */
    streamConnections: `${prefix}:{sched}:stream-conns`,
    /** ZSET gateway URL -> when it last announced itself (ms): the peers a cut-off gateway asks. */
    gateways: `${prefix}:{sched}:gateways`,
    /**
     * HASH `<role>/<node>` -> the status record of one process (JSON with
     * its `at` and `expiresAt`; fleet-status.js): what `wsps top` and the
     * admin view show. Readers drop the expired.
     */
    status: `${prefix}:{sched}:status`,
    /** STREAM of an operator's commands to the gateways (admin-commands.js), about the last thousand. */
    adminCommands: `${prefix}:{sched}:admin`,
    /** LIST of the gateways' answers to one command (JSON, one per gateway), kept 30 s. */
    adminAnswers: (/** @type {string} */ id) => `${prefix}:{sched}:admin:${id}`,
    /** HASH symbol -> fencing token of its stream ownership, drawn when it was granted. */
    streamToken: `${prefix}:{sched}:stream-token`,
    /**
     * The last fencing token drawn (no expiry), by the claim and schedule
     * scripts: each claim on a symbol (a stream ownership, a fetch job)
     * carries one above every earlier one.
     */
    fenceToken: `${prefix}:{sched}:fence-token`,
    /**
     * HASH session -> `<start>:<expiry>` (ms, Redis's clock) of one user's
     * sessions over the fleet (session-slots.js; a session is
     * `<node>#<connection id>`), written only by the session scripts
     * (scripts.js, SESSION_TAKE, SESSION_RENEW). A negative expiry marks a
     * session evicted, kept until it would have expired so that its
     * gateway's next renewal learns it.
     */
    userSessions: (/** @type {string} */ user) => `${prefix}:{u:${user}}:sessions`,
    /**
     * HASH record id -> JSON of the usage records a gateway process
     * (`instance`: its node and a start id) holds open: a session's access
     * to a venue at a service level, since `start` (usage-records.js).
     */
    usageOpen: (/** @type {string} */ instance) => `${prefix}:{usage}:open:${instance}`,
    /** HASH instance -> when it last said it was alive (ms): its open records end there if it died. */
    usageAlive: `${prefix}:{usage}:alive`,
    /**
     * STREAM of the usage records (field `r`, JSON) of one UTC month
     * (`YYYY-MM`), closed: a record is appended to every month it overlaps.
     * Not trimmed: the monthly report reads it whole.
     */
    usageMonth: (/** @type {string} */ month) => `${prefix}:{usage}:${month}`,
    /**
     * A publish API request's idempotency record (by the SHA-256 of its
     * Idempotency-Key; with WSPS_PUBLISH_IDEMPOTENCY_TTL_MS): pending while
     * it is published, then its answer. No hash tag: records spread over a
     * Cluster's slots.
     */
    idempotency: (/** @type {string} */ digest) => `${prefix}:idem:${digest}`
  })
}

/** @typedef {ReturnType<typeof redisKeys>} RedisKeys */
