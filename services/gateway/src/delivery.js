// How a subscription is delivered, as one number: what a connection holds
// per symbol (connection.js), what the hub files its subscribers by
// (feed.js, lane.js) and what a `sub` asks for (session.js).

/**
 * A subscription's delivery, as one number: DISTINCT, FULL_RATE (merge, on
 * every pass) or a merge mode maxRate in updates per second.
 */
export const DISTINCT = -1
export const FULL_RATE = 0
