// The upstream interface. A provider turns symbols into quotes; it knows
// nothing of Redis, jobs or seq numbers.

/**
 * Quote fields a provider returns (no seq: Redis assigns it at publish).
 * @typedef {{symbol: string, ts: number} & Partial<Record<'bid' | 'ask' | 'last' | 'bidSize' | 'askSize' | 'volume' | 'open' | 'high' | 'low' | 'prevClose', number>>} QuoteFields
 *
 * @typedef {object} Provider
 * @property {string} name
 * @property {boolean} needsPrevious whether fetch() wants the latest published quote of each symbol
 * @property {(symbols: string[], previous: Map<string, QuoteFields & {seq: number}>, deadline: number) => Promise<QuoteFields[]>} fetch
 *   quotes for as many of the symbols as it could get before `deadline` (ms epoch)
 * @property {() => Promise<void>} [close]
 */

export {}
