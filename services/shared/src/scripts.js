// Lua scripts that make the demand -> schedule -> fetch -> publish pipeline
// atomic. Registered on a connection with registerScripts(); ioredis sends
// EVALSHA and falls back to EVAL after a Redis restart flushed the script cache.

/**
 * A new epoch: Redis' clock in microseconds, in base 36 (a short string;
 * each draw later than the one before). Lua, put in front of the scripts that call it.
 */
const EPOCH = `
local function newEpoch ()
  local digits = '0123456789abcdefghijklmnopqrstuvwxyz'
  local t = redis.call('TIME')
  local n = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local e = ''
  while n > 0 do
    local d = n % 36
    e = string.sub(digits, d + 1, d + 1) .. e
    n = (n - d) / 36
  end
  return e
end
`

/**
 * One write of a symbol's order book, atomic beside its seq and epoch:
 * stored whole (the book key) and published as the change (the book
 * channel), so a reader that subscribes, then reads, misses nothing.
 * KEYS: book, bookChannel, bookPushed. ARGV: kind (snapshot | delta |
 * unsync), bids JSON, asks JSON (canonical decimals, validated by the
 * caller; a snapshot's best first), ts, ttlMs, expectSeq ('' any),
 * pushLeaseMs (0: a provider's write), sharded (1: SPUBLISH), maxLevels,
 * sourceSeq and sourcePrev ('' none: the source's own sequence, kept with
 * the book; a delta applies when sourcePrev <= the stored one < sourceSeq,
 * is refused at or below it (-5: old), and past it makes the book out of
 * sync, as unsync, returned with the gap flag 1).
 * A delta applies level by level (size "0" deletes) onto a book in sync,
 * never half: it is refused whole when there is none (-3), when the
 * stored seq is not expectSeq (-2: another writer moved it; 0 expects no
 * book), or when a
 * side would pass maxLevels (-4); a provider's write while the book is
 * pushed is refused (-1). seq counts the book's writes; a new epoch is
 * drawn when there is no book (first write, expired, or unreadable: a
 * corrupt key never blocks the symbol's writes). `unsync` keeps
 * seq and epoch and stores an empty book out of sync until a snapshot.
 * Returns {seq, epoch, gap} or {refusal}.
 */
const BOOK = EPOCH + `
local kind, ts, ttl, expect, pushMs, sharded, max = ARGV[1], ARGV[4], ARGV[5], ARGV[6], tonumber(ARGV[7]), ARGV[8] == '1', tonumber(ARGV[9])
local src, srcPrev = tonumber(ARGV[10]), tonumber(ARGV[11])
if pushMs == 0 and redis.call('EXISTS', KEYS[3]) == 1 then return {-1} end
local raw = redis.call('GET', KEYS[1])
local book = nil
if raw then
  local ok, decoded = pcall(cjson.decode, raw)
  if ok and type(decoded) == 'table' and tonumber(decoded.seq) and type(decoded.epoch) == 'string' and type(decoded.bids) == 'table' and type(decoded.asks) == 'table' then book = decoded end
end
if expect ~= '' and (book and string.format('%.0f', book.seq) or '0') ~= expect then return {-2} end
local bids, asks
local gap = false
if kind == 'delta' and book and book.sync and src and tonumber(book.src) then
  -- The source's own sequence: the delta continues the book when
  -- srcPrev <= stored < src; at or below the stored one it is old; past it, a gap.
  local held = tonumber(book.src)
  if src <= held then return {-5} end
  if srcPrev > held then kind = 'unsync'; gap = true end
end
if kind == 'delta' then
  if not book or not book.sync then return {-3} end
  bids, asks = book.bids, book.asks
  local function apply (side, changes, desc)
    for _, c in ipairs(changes) do
      local p, s, np = c[1], c[2], tonumber(c[1])
      local at, found = #side + 1, false
      for i, l in ipairs(side) do
        local lp = tonumber(l[1])
        if lp == np then at = i; found = true; break end
        if (desc and lp < np) or (not desc and lp > np) then at = i; break end
      end
      if s == '0' then
        if found then table.remove(side, at) end
      elseif found then side[at][2] = s
      else table.insert(side, at, {p, s}) end
    end
  end
  apply(bids, cjson.decode(ARGV[2]), true)
  apply(asks, cjson.decode(ARGV[3]), false)
elseif kind == 'snapshot' then
  bids, asks = cjson.decode(ARGV[2]), cjson.decode(ARGV[3])
else
  bids, asks = {}, {}
end
if #bids > max or #asks > max then return {-4} end
local epoch = book and book.epoch or newEpoch()
local seq = book and string.format('%.0f', book.seq + 1) or '1'
local function enc (side)
  local out = {}
  for i, l in ipairs(side) do out[i] = '["' .. l[1] .. '","' .. l[2] .. '"]' end
  return '[' .. table.concat(out, ',') .. ']'
end
local head = '{"seq":' .. seq .. ',"epoch":"' .. epoch .. '","ts":' .. ts .. ','
local sync = kind ~= 'unsync'
local srcField = (src and not gap) and ('"src":' .. string.format('%.0f', src) .. ',') or ''
redis.call('SET', KEYS[1], head .. srcField .. '"sync":' .. tostring(sync) .. ',"bids":' .. enc(bids) .. ',"asks":' .. enc(asks) .. '}', 'PX', ttl)
local msg
if kind == 'unsync' then msg = head .. '"sync":false,"bids":[],"asks":[]}'
else msg = head .. (kind == 'snapshot' and '"snapshot":true,' or '') .. '"bids":' .. ARGV[2] .. ',"asks":' .. ARGV[3] .. '}' end
if pushMs > 0 then redis.call('SET', KEYS[3], '1', 'PX', pushMs) end
redis.call(sharded and 'SPUBLISH' or 'PUBLISH', KEYS[2], msg)
return {tonumber(seq), epoch, gap and 1 or 0}
`

/**
 * Gateway lease renewal. KEYS: demand, due. ARGV: expiryMs, nowMs, symbols...
 * Extends each symbol's lease (never shortens one another gateway holds) and
 * makes a symbol nobody fetched yet due at once.
 */
const DEMAND = `
local expiry, now = ARGV[1], ARGV[2]
local lease, due = {}, {}
for i = 3, #ARGV do
  lease[#lease + 1] = expiry; lease[#lease + 1] = ARGV[i]
  due[#due + 1] = now; due[#due + 1] = ARGV[i]
end
if #lease > 0 then
  redis.call('ZADD', KEYS[1], 'GT', unpack(lease))
  redis.call('ZADD', KEYS[2], 'NX', unpack(due))
end
return #ARGV - 2
`

/**
 * Draws a fencing token (Kleppmann): the counter's next value, but never
 * below Redis' clock in microseconds, so a counter lost (a restart without
 * persistence, a failover that missed it, a FLUSH) cannot hand out a token
 * some symbol's fence already holds. Below 2^53 until the year 2255, so a
 * Lua number holds it exactly; kept and passed as a decimal string.
 * Lua, put in front of the scripts that call it.
 */
const TOKEN = `
local function drawToken (counter)
  local t = redis.call('TIME')
  local clock = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local token = string.format('%.0f', math.max((tonumber(redis.call('GET', counter)) or 0) + 1, clock))
  redis.call('SET', counter, token)
  return token
end
`

/**
 * A symbol's fence (fence in keys.js): `"<token> <ts>"`. Returns token and
 * ts as numbers and as the strings stored, or nothing when there is none
 * (or it is unreadable: then the next write starts it again).
 * Lua, put in front of the scripts that call it.
 */
const FENCE_READ = `
local function readFence (key)
  local f = redis.call('GET', key)
  if not f then return nil end
  local t, s, h = string.match(f, '^(%S+) (%S+) ?(%S*)$')
  if not tonumber(t) or not tonumber(s) then return nil end
  return tonumber(t), tonumber(s), t, s, h
end
`

/**
 * The ventilator of the push/pull queue, run by every fetcher replica each
 * tick. Because it runs atomically, a due symbol is pushed exactly once per
 * interval no matter how many replicas tick. A symbol under a live push
 * lease (quotes arrive through the publish API) stays scheduled but gets no
 * job: push wins over polling.
 * Each job is `{"s": [symbols], "t": nowMs, "f": "<token>"}`: one fencing
 * token (TOKEN) per call that pushes jobs, above every earlier job's, so a
 * worker that publishes an older job's quotes after a newer job's were
 * published (it was paused, or its Redis link silent) is refused (PUBLISH).
 * KEYS: demand, due, jobs, push, fenceToken. ARGV: nowMs, intervalMs, batchSize, maxSymbols.
 * Returns {symbolsScheduled, jobsPushed, leasesExpired, symbolsPushed}.
 */
const SCHEDULE = TOKEN + `
local now, interval, batch, max = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
for i = 1, #expired, 1000 do
  redis.call('ZREM', KEYS[2], unpack(expired, i, math.min(i + 999, #expired)))
end
if #expired > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now) end
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'WITHSCORES', 'LIMIT', 0, max)
if #due == 0 then return {0, 0, #expired, 0} end
local nextDue, jobs, chunk, n, pushed = {}, 0, {}, 0, 0
local token
local function push (symbols)
  token = token or drawToken(KEYS[5])
  redis.call('RPUSH', KEYS[3], cjson.encode({s = symbols, t = now, f = token}))
  jobs = jobs + 1
end
for i = 1, #due, 2 do
  local sym, at = due[i], tonumber(due[i + 1])
  local nxt = at + interval
  if nxt <= now then nxt = now + interval end
  nextDue[#nextDue + 1] = nxt; nextDue[#nextDue + 1] = sym
  if redis.call('ZSCORE', KEYS[4], sym) then
    pushed = pushed + 1
  else
    n = n + 1
    chunk[#chunk + 1] = sym
    if #chunk == batch then
      push(chunk)
      chunk = {}
    end
  end
end
if #chunk > 0 then push(chunk) end
for i = 1, #nextDue, 1000 do
  redis.call('ZADD', KEYS[2], unpack(nextDue, i, math.min(i + 999, #nextDue)))
end
return {n, jobs, #expired, pushed}
`

/**
 * The newer of a symbol's stream's newest entry and its `last` key (by seq),
 * or nil: its latest quote. With history on, the script writes the latest
 * quote only to the stream; with history off, only to the `last` key; a key
 * left from before a switch is older and loses.
 * Lua, put in front of the scripts that call it.
 */
const NEWEST = `
local function seqOf (m) return tonumber(string.match(m, '^{"seq":(%d+)')) or -1 end
local function newest (hist, last)
  local e = redis.call('XREVRANGE', hist, '+', '-', 'COUNT', 1)[1]
  local q = e and e[2][2]
  local l = redis.call('GET', last)
  if l and (not q or seqOf(l) > seqOf(q)) then return l end
  return q
end
`

/**
 * Most history entries a pin keeps (history-pin in keys.js): about 50 MiB
 * of Redis per symbol, a 15-minute delay at 220 ticks per second. A pin
 * left by a gateway that needs more is not served beyond it (its delayed
 * subscribers see the hole, counted).
 */
export const PIN_MAX = 200000

/**
 * How far ahead of Redis' clock a symbol's fence remembers a ts (PUBLISH):
 * more than the clocks of fetchers and vendors drift from it, far less than
 * the hours one quote stamped in the future would otherwise hold its symbol.
 */
export const FENCE_FUTURE_MS = 1000

/**
 * Publishes quotes, in order. KEYS: per quote seq, latest, pushed, history,
 * epoch, history pin, fence (all of one symbol's slot on a Redis Cluster, so
 * there the fetcher sends one quote per call). ARGV: ttlMs, sharded (0/1),
 * pushLeaseMs, historySize, defer (0/1), streamTtlMs, notAfterMs, then per quote:
 * channel, quote JSON without seq and without its opening brace (starts
 * with '"symbol"': the script puts seq and epoch in front of it without
 * copying it first), floorSeq, renew (0/1), token, ts. publishArgs() below
 * writes this layout; nothing else should. The message it publishes (and
 * keeps in history and as the latest quote) is published.js's layout, read
 * only there.
 * defer 1: the script writes but does not publish, and returns the messages
 * (after the seqs) for the caller to publish itself once replicas hold the
 * writes (Redis WAIT; WSPS_PUBLISH_WAIT_REPLICAS).
 * seq = INCR, but never at or below floorSeq: the fetcher passes the last seq
 * it knows, so a Redis restart that lost the counter does not rewind it.
 * pushLeaseMs > 0 (publish API) marks the symbol pushed for that long;
 * 0 (a provider) publishes nothing while the symbol is pushed, so a job that
 * was in flight when pushing began cannot interleave an older quote.
 *
 * Fencing: a fetcher paused (SIGSTOP, a long GC) or whose Redis link went
 * silent keeps its writes; meanwhile its claim on the symbol passes to
 * another fetcher, which publishes newer quotes. When the old writes arrive
 * they must not become news. Each provider quote carries the fencing token
 * of the claim it was fetched under (TOKEN: the stream ownership, CLAIM, or
 * the job, SCHEDULE), and the symbol's fence key holds the highest token
 * and the newest ts published of it. A quote is refused, with nothing
 * written (no seq, history, latest quote, fence or PUBLISH), when
 *   - its token is below the fence's (a newer claim published, or took the
 *     symbol over: FENCE): reason `fenced`; publish API quotes (pushLeaseMs
 *     > 0) hold no claim and are not checked by token, or
 *   - its ts is below the fence's (a newer quote was published; an equal
 *     ts passes): reason `old`, for every quote, pushed ones too: that is
 *     what orders the pushes of two fetchers, one of them held up; or
 *   - pushed, it is the very quote published last (same ts, same bytes:
 *     the fence keeps a pushed quote's digest as a third field): reason
 *     `old`. A request retried after a failure that published part of it
 *     publishes only the rest: what went out is either older than the
 *     newest or the newest itself.
 * A call that reaches Redis after notAfterMs (Redis' clock; 0: no limit) is
 * refused as a whole, reason `late`: a write held in a silent link or in a
 * client's offline queue through an outage would otherwise land seconds
 * after it was sent, an old quote published as the newest. The fetcher
 * sends its own clock plus WSPS_PUBLISH_DEADLINE_MS, corrected by the
 * offset it measured to Redis' clock (a fetcher whose clock is off does
 * not refuse its own writes, nor let them through late).
 * The fence remembers a ts at most FUTURE_MS ahead of Redis' clock: one
 * quote stamped in the future (a vendor's clock, or a client's ts in the
 * wrong unit) is published, but cannot freeze its symbol until then. It
 * lives, like the latest quote, ttlMs after the symbol's last quote. Cost:
 * one GET and one SET of a few bytes per quote.
 *
 * The latest quote (the snapshot, kept ttlMs after the symbol's last quote)
 * is, with history off, the `last` key (SET with its expiry); with history
 * on, the stream's newest entry, and nothing else (readers: latestQuotes()
 * in latest.js, the newer of the two). The stream's expiry is then set to
 * streamTtlMs from now when a quote says renew 1, on every 16th seq and
 * when an epoch starts: the caller (the fetcher's Publisher) asks for a
 * renewal so often, and passes a streamTtlMs so much longer than ttlMs,
 * that the stream outlives every quote it published by ttlMs. Renewing per
 * quote cost as much as the SET it replaces.
 *
 * History (historySize > 0): every published quote is also appended to the
 * symbol's stream (entry ID `<seq>-0`, given as `<seq>`; field `q`: the
 * message as published), in the same script as the seq, so history and seq
 * never disagree. Every
 * message carries the epoch: `{"seq":N,"epoch":"E",...}`. The epoch names
 * one unbroken count of seqs, so it lives beside the counter and like it
 * without expiry: the epoch key, a few bytes, read once per quote (reading
 * it from the latest quote instead, a few hundred bytes and a pattern
 * match, cost twice as much; that is still the fallback when the key is
 * missing but the latest quote names an epoch: an upgrade from the version
 * that had no key, or the key evicted alone). A new one is drawn from
 * Redis' clock when neither has one (the first quote with history on,
 * FLUSH, a restart without persistence), when the counter was lost (INCR
 * came out at or below the floor, history on or off) or when the seq does
 * not follow the stream's newest entry; the stream then starts over. Turning
 * history off and on again keeps the epoch while the count went on. History that expired
 * or was evicted alone keeps its epoch: the seqs still count on, and a
 * reader asking for what is gone sees the hole (entries start later).
 * The stream keeps at least historySize entries: trimmed (approximately:
 * whole stream nodes, the cheap way) on every 16th seq and when an epoch
 * starts, not per quote, so it holds up to historySize plus a node plus 15
 * entries. A quiet symbol's history is cut to its newest entry (RETIRE)
 * by the fetcher that published it, WSPS_HISTORY_TTL_MS after its last
 * quote; the stream then goes when the latest quote would.
 * Returns per quote its seq (> 0), or for a refused one why (REFUSED: 0
 * pushed, -1 fenced, -2 old, -3 late); with defer, then the message of each quote
 * ('' for a refused one).
 */
const PUBLISH = NEWEST + FENCE_READ + EPOCH + `
local ttl, sharded, pushMs = ARGV[1], ARGV[2] == '1', tonumber(ARGV[3])
local histSize, defer, streamTtl = tonumber(ARGV[4]), ARGV[5] == '1', tonumber(ARGV[6])
local notAfter = tonumber(ARGV[7])
local out, n = {}, #KEYS / 7
-- Redis' clock in ms, read once per call, when first needed.
local nowMs
local function clock ()
  if not nowMs then
    local t = redis.call('TIME')
    nowMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return nowMs
end
-- The stream's expiry, as a time (PEXPIREAT: a relative PEXPIRE is
-- rewritten to one for replication on every call, and costs a third more).
local function renewAt () return string.format('%.0f', clock() + streamTtl) end
-- Why the quote at KEYS[k], ARGV[a] is refused (0 pushed, -1 fenced, -2
-- old, -3 late), or nil and the fence it leaves when published.
local late = notAfter > 0 and clock() > notAfter
local function admit (k, a)
  if late then return -3 end
  if pushMs == 0 and redis.call('EXISTS', KEYS[k + 2]) == 1 then return 0 end
  local token, ts = tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5])
  local ft, fts, ftText, _, fh = readFence(KEYS[k + 6])
  if ft and pushMs == 0 and token < ft then return -1 end
  if fts and ts < fts then return -2 end
  local digest = pushMs > 0 and string.sub(redis.sha1hex(ARGV[a + 1]), 1, 16) or nil
  if digest and ts == fts and fh == digest then return -2 end
  local keepToken = (ft and token < ft) and ftText or ARGV[a + 4]
  local keepTs, cap = ARGV[a + 5], clock() + ${FENCE_FUTURE_MS}
  if ts > cap then keepTs = string.format('%.0f', math.max(cap, fts or 0)) end
  return nil, keepToken .. ' ' .. keepTs .. (digest and ' ' .. digest or '')
end
for i = 1, n do
  local k, a = 7 * i - 6, 6 * i + 2
  if defer then out[n + i] = '' end
  if pushMs > 0 then
    redis.call('SET', KEYS[k + 2], '1', 'PX', pushMs)
  end
  local refused, fence = admit(k, a)
  local seq = refused
  if not refused then
    redis.call('SET', KEYS[k + 6], fence, 'PX', ttl)
    seq = redis.call('INCR', KEYS[k])
    local floor = tonumber(ARGV[a + 2])
    local lost = seq <= floor
    if lost then
      seq = floor + 1
      redis.call('SET', KEYS[k], seq)
      -- The count is broken: its epoch goes too (with history off as well,
      -- so turning history on later cannot continue it).
      redis.call('DEL', KEYS[k + 4])
    end
    local s = tostring(seq)
    local body = ARGV[a + 1]
    local msg
    if histSize > 0 then
      local hist, ekey = KEYS[k + 3], KEYS[k + 4]
      local epoch = not lost and redis.call('GET', ekey)
      local fresh = false
      if not epoch and not lost then
        -- No epoch key yet (written by a version that kept the epoch only
        -- in the messages) or evicted alone: the latest quote's, when it
        -- has one, still names this count.
        local last = newest(hist, KEYS[k + 1])
        epoch = last and string.match(last, '^{"seq":%d+,"epoch":"(%w+)"')
        if epoch then redis.call('SET', ekey, epoch) end
      end
      if not epoch then
        epoch = newEpoch()
        fresh = true
        redis.call('DEL', hist)
      end
      msg = '{"seq":' .. s .. ',"epoch":"' .. epoch .. '",' .. body
      local added = redis.pcall('XADD', hist, s, 'q', msg)
      if type(added) == 'table' and added.err then
        -- seq is not above the newest entry: the counter was lost, history
        -- cannot continue. A new epoch, and a history that starts here.
        epoch = newEpoch()
        fresh = true
        redis.call('DEL', hist)
        msg = '{"seq":' .. s .. ',"epoch":"' .. epoch .. '",' .. body
        redis.call('XADD', hist, s, 'q', msg)
      end
      if fresh then redis.call('SET', ekey, epoch) end
      -- The stream's newest entry is the latest quote: it must live at
      -- least as long as the latest quote would (ttl after the symbol's
      -- last quote). The caller asks for a renewal often enough for that
      -- (renew 1), not per quote. A new epoch's stream gets its expiry at
      -- once; one written anew after it was evicted alone, by the next
      -- renewal or 16th seq (or the caller's retire pass).
      if fresh or ARGV[a + 3] == '1' or seq % 16 == 0 then
        redis.call('PEXPIREAT', hist, renewAt())
      end
      if fresh or seq % 16 == 0 then
        -- A pin (a gateway serving the symbol delayed) keeps what it still
        -- needs, and WSPS_HISTORY_SIZE before it for the gateways whose
        -- delayed cursors are a little behind the one that wrote the pin;
        -- never more than PIN_MAX entries.
        local pin = tonumber(redis.call('GET', KEYS[k + 5]))
        if pin then
          local keep = math.max(math.min(pin, seq) - histSize, seq - ${PIN_MAX})
          if keep > 1 then redis.call('XTRIM', hist, 'MINID', '~', tostring(keep)) end
        else
          redis.call('XTRIM', hist, 'MAXLEN', '~', histSize)
        end
        -- A latest quote written while history was off: older than the
        -- stream's newest, and readers take the newer; gone within 16 seqs.
        redis.call('DEL', KEYS[k + 1])
      end
    else
      msg = '{"seq":' .. s .. ',' .. body
      redis.call('SET', KEYS[k + 1], msg, 'PX', ttl)
    end
    if defer then
      out[n + i] = msg
    elseif sharded then
      redis.call('SPUBLISH', ARGV[a], msg)
    else
      redis.call('PUBLISH', ARGV[a], msg)
    end
  end
  out[i] = seq
end
return out
`

/**
 * Reads latest quotes. KEYS: per symbol history, latest. Returns the latest
 * quote of each (nil where none): the newer of the stream's newest entry and
 * the `last` key (NEWEST).
 */
const LATEST = NEWEST + `
local out = {}
for i = 1, #KEYS, 2 do out[#out + 1] = newest(KEYS[i], KEYS[i + 1]) or false end
return out
`

/**
 * Cuts a quiet symbol's history to its newest entry, which is its latest
 * quote and must stay, and gives the stream the expiry that quote has left.
 * KEYS: history, history pin. ARGV: seq (the last the caller published of the symbol),
 * leftMs (WSPS_QUOTE_TTL_MS minus the time since). Only when that seq is
 * still the newest: a quote published since by another fetcher is its to
 * retire. The stream is written anew rather than trimmed: XTRIM would leave
 * the newest in a stream node holding its deleted neighbours' bytes (up to
 * 4 KiB).
 * A pinned history (a gateway serves the symbol delayed and still needs
 * it) is left as it is: returns 2, and the caller tries again later.
 * Returns 1 when it retired the stream, 2 when pinned, else 0.
 */
const RETIRE = `
if redis.call('EXISTS', KEYS[2]) == 1 then return 2 end
local e = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)[1]
if not e or e[1] ~= ARGV[1] .. '-0' then return 0 end
if redis.call('XLEN', KEYS[1]) > 1 then
  redis.call('DEL', KEYS[1])
  redis.call('XADD', KEYS[1], e[1], unpack(e[2]))
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`

/**
 * Upstream stream ownership, run by every ws-stream fetcher each tick.
 * KEYS: demand, streamOwner, streamLease, streamToken, fenceToken.
 * ARGV: me, nowMs, leaseMs, maxSymbols, held... (the symbols `me` believes
 * it holds).
 * Drops ownerships nobody renewed (their holder died, or was paused or cut
 * off past its lease), keeps and renews the demanded symbols `me` holds,
 * claims unowned demanded symbols up to maxSymbols, and releases what `me`
 * holds that nobody demands any more. Atomic, so each demanded symbol has at
 * most one owner across replicas.
 * A symbol granted to `me` that it did not hold (claimed now, or held by it
 * before a restart under the same name) gets a new fencing token (TOKEN,
 * one per call); the ones it held keep theirs (streamToken). Its quotes
 * carry that token (PUBLISH), so those of an owner that lost the symbol
 * are refused once the new owner's token is in the fence.
 * Returns the symbols `me` holds now, each followed by its token.
 */
const CLAIM = TOKEN + `
local me, now, lease, max = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local dead = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)
for i = 1, #dead, 1000 do
  local part = {unpack(dead, i, math.min(i + 999, #dead))}
  redis.call('HDEL', KEYS[2], unpack(part))
  redis.call('HDEL', KEYS[4], unpack(part))
  redis.call('ZREM', KEYS[3], unpack(part))
end
local held = {}
for i = 5, #ARGV do held[ARGV[i]] = true end
local demanded = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf')
local wanted, mine, free = {}, {}, {}
for _, sym in ipairs(demanded) do
  wanted[sym] = true
  local owner = redis.call('HGET', KEYS[2], sym)
  if owner == me then mine[#mine + 1] = sym elseif not owner then free[#free + 1] = sym end
end
for _, sym in ipairs(free) do
  if #mine >= max then break end
  redis.call('HSET', KEYS[2], sym, me)
  mine[#mine + 1] = sym
end
local out, granted, token = {}, {}, nil
for _, sym in ipairs(mine) do
  local t = held[sym] and redis.call('HGET', KEYS[4], sym)
  if not t then
    token = token or drawToken(KEYS[5])
    t = token
    granted[#granted + 1] = sym; granted[#granted + 1] = t
  end
  out[#out + 1] = sym; out[#out + 1] = t
end
for i = 1, #granted, 1000 do
  redis.call('HSET', KEYS[4], unpack(granted, i, math.min(i + 999, #granted)))
end
local renew = {}
for _, sym in ipairs(mine) do renew[#renew + 1] = now + lease; renew[#renew + 1] = sym end
for i = 1, #renew, 1000 do
  redis.call('ZADD', KEYS[3], unpack(renew, i, math.min(i + 999, #renew)))
end
for i = 5, #ARGV do
  local sym = ARGV[i]
  if not wanted[sym] and redis.call('HGET', KEYS[2], sym) == me then
    redis.call('HDEL', KEYS[2], sym)
    redis.call('HDEL', KEYS[4], sym)
    redis.call('ZREM', KEYS[3], sym)
  end
end
return out
`

/**
 * Gives up stream ownerships (a fetcher stopping), so another replica takes
 * them over at its next tick instead of after the lease.
 * KEYS: streamOwner, streamLease, streamToken. ARGV: me, symbols...
 */
const RELEASE = `
local n = 0
for i = 2, #ARGV do
  if redis.call('HGET', KEYS[1], ARGV[i]) == ARGV[1] then
    redis.call('HDEL', KEYS[1], ARGV[i])
    redis.call('HDEL', KEYS[3], ARGV[i])
    redis.call('ZREM', KEYS[2], ARGV[i])
    n = n + 1
  end
end
return n
`

/**
 * Raises a symbol's fence to a token (a stream owner that was granted the
 * symbol, CLAIM, does so before it subscribes): from then on the quotes of
 * the owner before it are refused (PUBLISH), also before the new owner has
 * published any, not only once it has. Never lowers it; keeps its ts.
 * KEYS: fence. ARGV: token, ttlMs (the fence's expiry when there was none).
 * Returns 1 when raised, else 0.
 */
const FENCE = FENCE_READ + `
local ft, _, _, ftsText, fh = readFence(KEYS[1])
if ft and ft >= tonumber(ARGV[1]) then return 0 end
if ft then
  redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. ftsText .. (fh ~= '' and ' ' .. fh or ''), 'KEEPTTL')
else
  redis.call('SET', KEYS[1], ARGV[1] .. ' 0', 'PX', ARGV[2])
end
return 1
`

/**
 * An idempotency record taken unless it exists (the publish API's
 * Idempotency-Key): atomic, so of two fetchers receiving the same request
 * at once one takes it and the other sees it taken.
 * KEYS: record. ARGV: value, ttlMs. Returns nil when taken now, else the
 * value it holds.
 */
const ONCE = `
local v = redis.call('GET', KEYS[1])
if v then return v end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return false
`

/**
 * One of at most `max` upstream connection slots (WSPS_STREAM_MAX_CONNECTIONS:
 * vendors allow few connections per key), run by every ws-stream fetcher
 * each tick. Drops slots nobody renewed (their holder died), renews `me`'s,
 * or gives `me` a free one. Atomic, so at most `max` replicas hold one.
 * KEYS: streamConnections. ARGV: me, nowMs, leaseMs, max.
 * Returns 1 when `me` holds a slot now, else 0.
 */
const SLOT = `
local me, now, lease, max = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], me) or redis.call('ZCARD', KEYS[1]) < max then
  redis.call('ZADD', KEYS[1], now + lease, me)
  redis.call('PEXPIRE', KEYS[1], lease * 2)
  return 1
end
return 0
`

/**
 * A process's record in the fleet view (fleet-status.js), stamped with
 * Redis's clock, not the writer's: a record's age is then read against the
 * same clock whatever the hosts' clocks say. KEYS: status. ARGV: field,
 * the record as a JSON object, intervalMs, keepMs. Returns the stamp (ms).
 */
const STATUS_WRITE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local head = string.sub(ARGV[2], 1, -2)
if head ~= '{' then head = head .. ',' end
redis.call('HSET', KEYS[1], ARGV[1], head .. '"at":' .. now .. ',"intervalMs":' .. ARGV[3] .. ',"expiresAt":' .. (now + tonumber(ARGV[4])) .. '}')
return now
`

/**
 * Every record of the fleet view with Redis's clock now, read in one step.
 * KEYS: status. Returns [nowMs, [field, record, ...]].
 */
const STATUS_READ = `
local t = redis.call('TIME')
return {tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), redis.call('HGETALL', KEYS[1])}
`

/**
 * What the session scripts share: Redis's clock (every gateway's sessions
 * are timed by one clock, never by the holders'), and the user's sessions
 * read once, the expired ones (whose gateway stopped renewing them: it
 * died, or was cut off past the lease) dropped. KEYS[1]: the user's
 * sessions (keys.js, userSessions). Leaves `now`, and `live`: the sessions
 * counted, {start, session}.
 */
const SESSIONS_READ = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local all = redis.call('HGETALL', KEYS[1])
local live = {}
local held = {}
for i = 1, #all, 2 do
  local start, expiry = string.match(all[i + 1], '^(%-?%d+):(%-?%d+)$')
  start, expiry = tonumber(start), tonumber(expiry)
  if math.abs(expiry) <= now then
    redis.call('HDEL', KEYS[1], all[i])
  else
    held[all[i]] = expiry
    if expiry > 0 then live[#live + 1] = {start, all[i]} end
  end
end
`

/**
 * A new session of a user takes a place among at most `max`
 * (WSPS_MAX_SESSIONS_PER_USER), atomically: two gateways racing for the
 * last place never both get it. Full, it is refused, or (close-oldest) the
 * oldest sessions are marked evicted to make room, and named.
 * KEYS: userSessions. ARGV: session, leaseMs, max, policy (`refuse` | `close-oldest`).
 * Returns [1, start, evicted...] when it holds a place now, [0] when refused.
 */
const SESSION_TAKE = SESSIONS_READ + `
local me, lease, max = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local evicted = {}
if #live >= max then
  if ARGV[4] ~= 'close-oldest' then return {0} end
  table.sort(live, function (a, b) return a[1] < b[1] or (a[1] == b[1] and a[2] < b[2]) end)
  for i = 1, #live - max + 1 do
    redis.call('HSET', KEYS[1], live[i][2], live[i][1] .. ':' .. -(now + lease))
    evicted[#evicted + 1] = live[i][2]
  end
end
redis.call('HSET', KEYS[1], me, now .. ':' .. (now + lease))
redis.call('PEXPIRE', KEYS[1], lease * 2)
return {1, now, unpack(evicted)}
`

/**
 * A gateway renews the leases of the sessions it holds of a user. One still
 * there is renewed; one marked evicted is dropped and reported lost; one
 * gone (its lease ran out while its gateway could not renew it: a Redis
 * outage, a long pause) takes a place again if there is one, as a new
 * session would under `refuse`, else is lost: the storage decides, not the
 * holder's clock.
 * KEYS: userSessions. ARGV: leaseMs, max, then session, start for each.
 * Returns, per session, 1 renewed, 0 lost.
 */
const SESSION_RENEW = SESSIONS_READ + `
local lease, max = tonumber(ARGV[1]), tonumber(ARGV[2])
local out = {}
for i = 3, #ARGV, 2 do
  local me, start = ARGV[i], ARGV[i + 1]
  local expiry = held[me]
  if expiry ~= nil and expiry < 0 then
    redis.call('HDEL', KEYS[1], me)
    out[#out + 1] = 0
  elseif expiry ~= nil or #live < max then
    if expiry == nil then live[#live + 1] = {tonumber(start), me} end
    redis.call('HSET', KEYS[1], me, start .. ':' .. (now + lease))
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
redis.call('PEXPIRE', KEYS[1], lease * 2)
return out
`

/**
 * Closes an open usage record once: removed from its gateway's open
 * records and appended to the streams of the months it overlaps, only by
 * whoever removed it (its gateway at the session's end, or a gateway
 * sweeping the open records of one that died), so it is never counted twice.
 * KEYS: usageOpen, usageMonth of its first month. ARGV: record id, the
 * closed record (JSON), then usageMonth of each later month (rare: a
 * session over a month's end; a key count that varies would not be routed
 * on a Cluster, and every usage key is in the {usage} slot anyway).
 * Returns 1 when closed now, 0 when it was closed already.
 */
const USAGE_CLOSE = `
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('XADD', KEYS[2], '*', 'r', ARGV[2])
for i = 3, #ARGV do redis.call('XADD', ARGV[i], '*', 'r', ARGV[2]) end
return 1
`

/**
 * @typedef {import('ioredis').Redis & {
 *   wspsDemand(demand: string, due: string, expiry: number, now: number, ...symbols: string[]): Promise<number>,
 *   wspsSchedule(demand: string, due: string, jobs: string, push: string, fenceToken: string, now: number, interval: number, batch: number, max: number): Promise<[number, number, number, number]>,
 *   wspsPublish(numKeys: number, ...keysThenArgs: (string | number)[]): Promise<(number | string)[]>,
 *   wspsPublishOne(...keysThenArgs: (string | number)[]): Promise<(number | string)[]>,
 *   wspsLatest(numKeys: number, ...keys: string[]): Promise<(string | null)[]>,
 *   wspsLatestOne(history: string, latest: string): Promise<(string | null)[]>,
 *   wspsRetire(history: string, pin: string, seq: number, leftMs: number): Promise<number>,
 *   wspsClaim(demand: string, owner: string, lease: string, tokens: string, fenceToken: string, me: string, now: number, leaseMs: number, max: number, ...held: string[]): Promise<string[]>,
 *   wspsRelease(owner: string, lease: string, tokens: string, me: string, ...symbols: string[]): Promise<number>,
 *   wspsFence(fence: string, token: number | string, ttlMs: number): Promise<number>,
 *   wspsOnce(record: string, value: string, ttlMs: number): Promise<string | null>,
 *   wspsSlot(connections: string, me: string, now: number, leaseMs: number, max: number): Promise<number>,
 *   wspsStatusWrite(status: string, field: string, record: string, intervalMs: number, keepMs: number): Promise<number>,
 *   wspsStatusRead(status: string): Promise<[number, string[]]>,
 *   wspsSessionTake(sessions: string, session: string, leaseMs: number, max: number, policy: string): Promise<(number | string)[]>,
 *   wspsSessionRenew(sessions: string, leaseMs: number, max: number, ...sessionsThenStarts: (string | number)[]): Promise<number[]>,
 *   wspsUsageClose(open: string, firstMonth: string, id: string, record: string, ...laterMonths: string[]): Promise<number>
 * }} ScriptedRedis
 */

/**
 * Why the publish script refused a quote, by the number it returns in place
 * of a seq (PUBLISH): `pushed` (a provider quote of a symbol under a push
 * lease), `fenced` (its claim's token is below the symbol's fence: another
 * fetcher's newer claim), `old` (its ts is below the newest published).
 */
export const REFUSED = Object.freeze(/** @type {const} */ ({ 0: 'pushed', [-1]: 'fenced', [-2]: 'old', [-3]: 'late' }))

/** @typedef {(typeof REFUSED)[keyof typeof REFUSED]} RefusalReason */

/**
 * The reason a publish script reply refused its quote, or null: it was
 * published (the reply is its seq).
 * @param {number} reply
 * @returns {RefusalReason | null}
 */
export function refusal (reply) {
  if (reply > 0) return null
  const why = REFUSED[/** @type {keyof typeof REFUSED} */ (reply)]
  if (!why) throw new Error(`publish script: unknown reply ${reply}`)
  return why
}

/**
 * Arguments of one wspsPublish call: the script's key/argument layout is
 * known here only.
 *
 * @param {import('./keys.js').RedisKeys} keys
 * @param {{symbol: string, body: string, floor: number, ts: number, token?: number, renew?: boolean}[]} quotes body: the quote JSON without seq,
 *   starting with '{"symbol"'; ts: the quote's; token: the fencing token of the claim it was fetched under (TOKEN;
 *   0, the default: none, for publish API quotes); renew false: the stream's expiry need not be renewed for this quote
 * @param {{ttlMs: number, sharded: boolean, pushLeaseMs: number, historySize?: number, streamTtlMs?: number, defer?: boolean, notAfterMs?: number}} options
 *   historySize 0 (the default): no history, no epoch; streamTtlMs: the
 *   history stream's expiry when renewed (default ttlMs); defer: publish
 *   nothing, return the messages after the seqs; notAfterMs: Redis' clock
 *   after which the call is refused as late (0, the default: never)
 * @returns {[number, ...(string | number)[]]}
 */
export function publishArgs (keys, quotes, { ttlMs, sharded, pushLeaseMs, historySize = 0, streamTtlMs, defer = false, notAfterMs = 0 }) {
  /** @type {string[]} */
  const k = []
  /** @type {(string | number)[]} */
  const a = [ttlMs, sharded ? 1 : 0, pushLeaseMs, historySize, defer ? 1 : 0, streamTtlMs ?? ttlMs, Math.round(notAfterMs)]
  for (const q of quotes) {
    k.push(keys.seq(q.symbol), keys.latest(q.symbol), keys.pushed(q.symbol), keys.history(q.symbol), keys.epoch(q.symbol), keys.historyPin(q.symbol), keys.fence(q.symbol))
    a.push(keys.channel(q.symbol), q.body.slice(1), q.floor, q.renew === false ? 0 : 1, q.token ?? 0, q.ts)
  }
  return [k.length, ...k, ...a]
}

/**
 * @param {import('./redis.js').RedisClient} client a single Redis or a Cluster (typed as the former)
 * @returns {ScriptedRedis}
 */
export function registerScripts (client) {
  client.defineCommand('wspsDemand', { numberOfKeys: 2, lua: DEMAND })
  client.defineCommand('wspsSchedule', { numberOfKeys: 5, lua: SCHEDULE })
  // Key count per call: 7 per quote. On a Cluster, ioredis routes (and
  // auto-pipelines) a command by its keys only when their count is declared:
  // wspsPublishOne is the same script for exactly one quote.
  client.defineCommand('wspsPublish', { lua: PUBLISH })
  client.defineCommand('wspsPublishOne', { numberOfKeys: 7, lua: PUBLISH })
  client.defineCommand('wspsLatest', { lua: LATEST })
  client.defineCommand('wspsLatestOne', { numberOfKeys: 2, lua: LATEST })
  client.defineCommand('wspsRetire', { numberOfKeys: 2, lua: RETIRE })
  client.defineCommand('wspsClaim', { numberOfKeys: 5, lua: CLAIM })
  client.defineCommand('wspsRelease', { numberOfKeys: 3, lua: RELEASE })
  client.defineCommand('wspsFence', { numberOfKeys: 1, lua: FENCE })
  client.defineCommand('wspsOnce', { numberOfKeys: 1, lua: ONCE })
  client.defineCommand('wspsSlot', { numberOfKeys: 1, lua: SLOT })
  client.defineCommand('wspsStatusWrite', { numberOfKeys: 1, lua: STATUS_WRITE })
  client.defineCommand('wspsStatusRead', { numberOfKeys: 1, lua: STATUS_READ })
  client.defineCommand('wspsBook', { numberOfKeys: 3, lua: BOOK })
  client.defineCommand('wspsSessionTake', { numberOfKeys: 1, lua: SESSION_TAKE })
  client.defineCommand('wspsSessionRenew', { numberOfKeys: 1, lua: SESSION_RENEW })
  client.defineCommand('wspsUsageClose', { numberOfKeys: 2, lua: USAGE_CLOSE })
  return /** @type {ScriptedRedis} */ (client)
}
