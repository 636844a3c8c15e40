// placeholder, replaced below
import { existsSync } from 'node:fs'
export const F5_ORIGIN = 'tbd'
/** @param {string} dir @param {{listen: string, upstream: string}} o @returns {string} */
export function writeF5Conf (dir, o) { if (!existsSync('/nonexistent')) throw new Error('F5 fixture not yet generated'); return dir + o.listen }
