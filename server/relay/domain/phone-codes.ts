import { createHmac, randomInt, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../../../core/clock.js';
import { RelayRefusal, invalidInputAt } from './relay-errors.js';
import { relayLimits } from '../../../wire/relay/relay-facts.js';
import type { Steps } from '../../storage/sql-steps.js';
import type { RelayStore } from '../relay-store.js';
import type { SmsSender } from './sms-sender.js';

export type CodePurpose = 'verify' | 'login' | 'recover';

/** E.164 after removing spaces, dashes, dots and parentheses: "+", 7 to 15 digits, no leading 0. */
const e164 = /^\+[1-9][0-9]{6,14}$/;

/** Normalises a phone number to E.164 or refuses it (`not_phone_number` located at `loc`). */
export function normalizePhone(input: string, loc: (string | number)[]): string {
  const compact = input.replace(/[\s\-().]/g, '');
  if (!e164.test(compact)) {
    throw invalidInputAt(loc, [{ path: [], code: 'not_phone_number', input }]);
  }
  return compact;
}

/** "+41••••••567": enough for its owner to recognise, not enough to harvest. */
export function maskPhone(phone: string): string {
  return phone.slice(0, 3) + '•'.repeat(Math.max(0, phone.length - 6)) + phone.slice(-3);
}

/** What every code request answers, whether or not the number belongs to anyone. */
export interface CodeRequestAnswer {
  status: 'code_sent';
  expires_in_seconds: number;
  note: string;
}

/**
 * One-time phone codes: 6 digits from a CSPRNG, stored only as an HMAC, single use, expiring
 * after `codeTtlSeconds`, dead after `codeMaxAttempts` wrong tries. Send rate is limited per
 * number (`codeMinIntervalSeconds` apart, `codeMaxPerHour` per rolling hour) and the limit is
 * applied and answered the same way for numbers nobody registered, so neither the answer nor the
 * rate limit tells a caller whether a number is known.
 */
export class PhoneCodes {
  constructor(
    private readonly store: RelayStore,
    private readonly clock: Clock,
    private readonly serverKey: Buffer,
    private readonly sender: SmsSender,
    private readonly log: (message: string, cause: unknown) => void,
  ) {}

  /**
   * Starts a code for `phone`. `nodeId` is who may redeem it (null when the number is unknown:
   * then nothing is sent but the same bookkeeping happens). With `awaitDelivery` a failed send is
   * refused (`sms_not_delivered`; used where the caller already owns the number); otherwise delivery runs in the background so
   * response time does not depend on whether a message went out.
   */
  async start(phone: string, purpose: CodePurpose, nodeId: string | null, options: { awaitDelivery: boolean }): Promise<CodeRequestAnswer> {
    const nowMs = this.clock.nowMs();
    const code = String(randomInt(0, 10 ** relayLimits.codeDigits)).padStart(relayLimits.codeDigits, '0');
    const codes = this.store.data.phoneCodes;
    const sendRate = () => this.enforceSendRate(phone, nowMs);
    const codeHash = (id: number) => this.codeHash(id, phone, code);
    await this.store.tx(function* () {
      yield* sendRate();
      yield* codes.recordSend(phone, nowMs);
      // A new code replaces any open one for the same number and purpose.
      yield* codes.replaceOpen({ phone, purpose, nodeId, nowMs, expiresMs: nowMs + relayLimits.codeTtlSeconds * 1000 }, codeHash);
    });
    const answer: CodeRequestAnswer = {
      status: 'code_sent',
      expires_in_seconds: relayLimits.codeTtlSeconds,
      note: purpose === 'verify' ? 'a code was sent to this number' : 'if this number belongs to an account here, a code was sent to it',
    };
    if (nodeId === null) return answer;
    const message = { to: phone, text: `x-relay ${purpose} code: ${code} (valid ${relayLimits.codeTtlSeconds / 60} minutes; nobody from the relay will ask you for it)` };
    if (options.awaitDelivery) {
      try {
        await this.sender.send(message);
      } catch (cause) {
        this.log('relay: SMS delivery failed', cause);
        throw new RelayRefusal('sms_not_delivered', 'the SMS gateway did not accept the message; try again later');
      }
    } else {
      this.sender.send(message).catch((cause: unknown) => this.log('relay: SMS delivery failed', cause));
    }
    return answer;
  }

  /**
   * Redeems a code. Returns the node the code was issued for. Any failure (no open code, expired,
   * too many attempts, wrong digits, unknown number, issued for someone else) is the same refusal (`code_invalid`).
   */
  async redeem(phone: string, purpose: CodePurpose, code: string, options: { forNode?: string } = {}): Promise<string> {
    const nowMs = this.clock.nowMs();
    const codes = this.store.data.phoneCodes;
    const codeHash = (id: number) => this.codeHash(id, phone, code);
    const result = await this.store.tx(function* () {
      const row = yield* codes.latestOpen(phone, purpose, nowMs);
      if (!row || row.attempts >= relayLimits.codeMaxAttempts) return null;
      yield* codes.countAttempt(row.id);
      const ok = /^[0-9]{6}$/.test(code) && timingSafeEqual(Buffer.from(codeHash(row.id), 'hex'), Buffer.from(row.code_hash, 'hex'));
      if (!ok || row.node_id === null) return null;
      if (options.forNode !== undefined && options.forNode !== row.node_id) return null;
      yield* codes.markUsed(row.id);
      return row.node_id;
    });
    if (result === null) throw new RelayRefusal('code_invalid', 'invalid or expired code');
    return result;
  }

  private *enforceSendRate(phone: string, nowMs: number): Steps<void> {
    const sentMs = yield* this.store.data.phoneCodes.recentSends(phone, nowMs);
    const last = sentMs.at(-1);
    if (last !== undefined && nowMs - last < relayLimits.codeMinIntervalSeconds * 1000) {
      const retry = Math.ceil((last + relayLimits.codeMinIntervalSeconds * 1000 - nowMs) / 1000);
      throw new RelayRefusal('code_rate_limited', `a code was requested for this number less than ${relayLimits.codeMinIntervalSeconds} s ago; retry after ${retry} s`, { retryAfterSeconds: retry });
    }
    if (sentMs.length >= relayLimits.codeMaxPerHour) {
      const retry = Math.ceil((sentMs[0]! + 3600_000 - nowMs) / 1000);
      throw new RelayRefusal('code_rate_limited', `at most ${relayLimits.codeMaxPerHour} codes per hour per number; retry after ${retry} s`, { retryAfterSeconds: retry });
    }
  }

  private codeHash(id: number, phone: string, code: string): string {
    return createHmac('sha256', this.serverKey).update(`x-relay code\n${id}\n${phone}\n${code}`).digest('hex');
  }
}
