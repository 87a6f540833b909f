import { z } from 'zod';
import { hasLoneSurrogate } from '../../core/unicode-text.js';
import { BASE64_PATTERN } from '../base64-pattern.js';
import { numericTextParam, textField } from '../form-fields.js';

/**
 * Requests of the bench's job extensions (docs/bench-api.md): the job endpoint's query (`?wait=`,
 * `?uart=text`, `?max_chars=`), serial input for a running job, and the cancel form. The routes
 * validate with them and /openapi.json documents them (decision 0615).
 */

/** The longest `?wait=` a client may ask for, seconds. */
export const MAX_JOB_WAIT_SECONDS = 60;
/** The most serial input one request may carry, bytes. */
export const MAX_UART_INPUT_BYTES = 4096;

/** The most characters `max_chars` may ask for (the UART a job keeps is at most 64 KiB by default anyway). */
export const MAX_TEXT_CHARS = 1_000_000;

/**
 * Extension (issue 31, decision 0537): `GET /api/v1/jobs/{job_id}?uart=text` answers the UART as
 * text only, without `base64` and `chunks`, and `max_chars=N` keeps its first and last N/2
 * characters with a marker between them: a chatty firmware's 64 KiB is 206 KB as JSON with its
 * chunks, too heavy for a language model's context.
 */
export const jobViewQueryFields = {
  uart: z
    .enum(['full', 'text'])
    .optional()
    .meta({ description: 'Extension: `full` (the default) answers the whole capture; `text` the text only, without `base64` and `chunks`.' }),
  // A count of characters: "1.5" is pydantic's int_parsing, as an `int` query parameter answers.
  max_chars: numericTextParam({
    whole: true,
    gt: 0,
    le: MAX_TEXT_CHARS,
    description: `Extension: with \`uart=text\` (implied), keep at most this many characters of \`uart.text\`: its head and its tail, joined by a line saying how many were cut (\`uart.cut_chars\`); 0 < x <= ${MAX_TEXT_CHARS}.`,
  }),
};

export const jobWaitQuerySchema = z.object({
  wait: numericTextParam({
    gt: 0,
    le: MAX_JOB_WAIT_SECONDS,
    description: `Extension: answer as soon as the job is done or failed, or after this many seconds (at most ${MAX_JOB_WAIT_SECONDS}) with the job as it is then.`,
  }),
  ...jobViewQueryFields,
});

export const uartInputSchema = z
  .object({
    // A lone surrogate has no UTF-8 form: the encoder would send U+FFFD instead of what was asked.
    text: z
      .string()
      .min(1)
      .max(MAX_UART_INPUT_BYTES)
      .refine((text) => !hasLoneSurrogate(text), { message: 'Value error, text holds a lone UTF-16 surrogate, which has no UTF-8 form', params: { ctx: { error: {} } } })
      .optional()
      .meta({ description: 'Text to send, as UTF-8 (at least one character).' }),
    base64: z
      .string()
      .min(1)
      .max(Math.ceil(MAX_UART_INPUT_BYTES / 3) * 4)
      .regex(BASE64_PATTERN, { message: 'Value error, base64 must be standard base64 with its = padding' })
      .optional()
      .meta({ description: 'Bytes to send, standard base64 with padding (at least one byte).' }),
  })
  .refine((b) => (b.text === undefined) !== (b.base64 === undefined), {
    message: 'Value error, send exactly one of text or base64',
    params: { ctx: { error: {} } },
  });

export const cancelFormSchema = z.object({
  reason: textField({
    maxLength: 200,
    // Control characters would corrupt the failure message in logs and pages.
    pattern: /^[^\x00-\x1f\x7f-\x9f]*$/,
    default: '',
    description: 'Optional: why, kept in the failure message (`its agent cancelled it: <reason>`); at most 200 characters, no control characters.',
  }),
});
