import { z } from 'zod';
import { EMAIL_MAX_CHARS, parseEmailAddress } from './email-address.js';
import { NOTE_MAX_CHARS, NOTE_PATTERN, WAITLIST_KINDS } from './waitlist-form.js';

/**
 * The waitlist form and answer as zod schemas, for the service's `/openapi.json` (through
 * `z.toJSONSchema`). Requests are validated by `parseWaitlistForm`, which writes pydantic's exact
 * error bodies; a test keeps this schema and that parser agreeing on what they accept.
 */
export const waitlistFormSchema = z.object({
  kind: z
    .enum(WAITLIST_KINDS)
    .default('person')
    .describe('Who is asking: a person, a team or organisation, or a software agent acting for someone.'),
  email: z
    .string()
    .refine((value) => parseEmailAddress(value).ok, { message: 'value is not a valid email address' })
    // prefault, not default: the empty default must still go through the check and fail.
    .prefault('')
    .meta({
      description: `Email address, at most ${EMAIL_MAX_CHARS} characters; surrounding spaces are trimmed and the domain lower-cased. Required in practice: the empty default is refused.`,
      examples: ['ada@example.org'],
    }),
  note: z
    .string()
    .refine((value) => [...value].length <= NOTE_MAX_CHARS, { message: `String should have at most ${NOTE_MAX_CHARS} characters` })
    .regex(new RegExp(NOTE_PATTERN))
    .default('')
    .meta({ maxLength: NOTE_MAX_CHARS, description: 'What you would like to test (optional).' }),
  csrf: z
    .string()
    .default('')
    .describe('The token from the hidden csrf field of the form on GET /; valid for two hours. Missing or invalid: 403.'),
});

export const waitlistJoinedSchema = z.object({
  status: z.literal('ok'),
  kind: z.enum(WAITLIST_KINDS),
  email: z.string().describe('The address as stored (normalised). The same answer is given when it was already listed.'),
});
