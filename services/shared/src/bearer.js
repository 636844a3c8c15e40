// One check of a shared bearer token (the publish API's, the admin API's).
// Digests are compared, so the comparison takes the same time whatever the
// length of the token presented.

import { createHash, timingSafeEqual } from 'node:crypto'

/** @param {string} token */
const digest = (token) => createHash('sha256').update(token).digest()

/**
 * @param {string} token the expected one (non-empty)
 * @returns {(authorization: string | undefined) => boolean} whether an
 *   `Authorization` header is `Bearer <token>`
 */
export function bearerCheck (token) {
  const want = digest(token)
  return (authorization) => {
    const m = /^Bearer (.+)$/.exec(authorization ?? '')
    return m !== null && timingSafeEqual(digest(m[1]), want)
  }
}
