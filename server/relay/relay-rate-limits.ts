/* Apart from the service so the CLI's help shows the defaults without loading it. */

/** Requests per client address per minute (a burst of that many, then one every 60/n s); docs/relay-api.md, "Rate limits". */
export interface RelayRateLimits {
  /** POST /register: each makes a node and an event every peer pulls. */
  registrationsPerMinute: number;
  /**
   * POST /session, /login, /login/verify, /recover/start, /recover/finish: credentials and SMS
   * codes. The per-number limits on codes (PhoneCodes) stay; this bounds one client trying many numbers or codes.
   */
  signInsPerMinute: number;
}

export const defaultRelayRateLimits: RelayRateLimits = { registrationsPerMinute: 10, signInsPerMinute: 20 };
