import type { JobBody } from '../../../wire/bench/bench-schemas.js';
import type { JobTextBody } from '../../../wire/bench/job-answer-schemas.js';

/** The job as asked: whole (`uart` absent or `full`, no `max_chars`), or its UART as (cut) text. */
export function jobView(job: JobBody, query: { uart?: 'full' | 'text' | undefined; max_chars?: number | undefined }): JobBody | JobTextBody {
  if (query.uart !== 'text' && query.max_chars === undefined) return job;
  if (!job.uart) return { ...job, uart: null };
  const maxChars = query.max_chars === undefined ? undefined : Math.max(1, Math.floor(query.max_chars));
  const { text, cutChars } = headAndTail(job.uart.text, maxChars);
  const { bytes, dropped_bytes, time_base, clock } = job.uart;
  return { ...job, uart: { text, bytes, dropped_bytes, time_base, clock, cut_chars: cutChars } };
}

/**
 * `text` whole when it has at most `maxChars` characters, else its first and last `maxChars / 2`
 * around a line that says how many were cut; never splits a surrogate pair.
 */
export function headAndTail(text: string, maxChars: number | undefined): { text: string; cutChars: number } {
  if (maxChars === undefined || text.length <= maxChars) return { text, cutChars: 0 };
  let headEnd = Math.ceil(maxChars / 2);
  let tailStart = text.length - Math.floor(maxChars / 2);
  if (isHighSurrogate(text.charCodeAt(headEnd - 1))) headEnd -= 1;
  if (isLowSurrogate(text.charCodeAt(tailStart))) tailStart += 1;
  const cutChars = tailStart - headEnd;
  return { text: `${text.slice(0, headEnd)}\n[... ${cutChars} characters cut ...]\n${text.slice(tailStart)}`, cutChars };
}

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;
const isLowSurrogate = (code: number) => code >= 0xdc00 && code <= 0xdfff;
