// How the bench starts its processes: the testkit's one process starter
// (@wsps/testkit/process) with the bench's policy on top.

import { startProcess } from '@wsps/testkit/process'

/**
 * Niceness of everything the bench starts (WSPS_BENCH_NICE, default 0). On a
 * machine of your own a negative value keeps stray jobs from disturbing the
 * run; on a shared one leave it at 0 (and note that with autogroup
 * scheduling nice only ranks processes within one session).
 */
export const NICE = Number(process.env.WSPS_BENCH_NICE ?? 0)

/**
 * A bench process: detached (its own session, so its own scheduler
 * autogroup, like any process another user starts; and its own process
 * group, so stopping it stops what it started), at NICE, stdout read as JSON
 * lines, with a stdin pipe unless `stdin: false`.
 *
 * @param {string} cmd
 * @param {string[]} args
 * @param {import('@wsps/testkit/process').StartOptions} [options]
 */
export function start (cmd, args, options = {}) {
  return startProcess(cmd, args, { stdin: true, ...options, json: true, detached: true, nice: NICE })
}

/** @typedef {ReturnType<typeof start>} Child */
