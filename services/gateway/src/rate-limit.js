// The token bucket lives in services/shared (the fetcher's publish API
// limits with it too); re-exported for the gateway's modules.
export { RateLimit } from '@wsps/shared/rate-limit'
