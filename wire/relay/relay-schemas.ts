import { z } from 'zod';
import { coreProblemError, stringTooLong, stringTooShort } from '../core-problem-errors.js';
import { claimKinds } from '../../core/relay/claim.js';
import { codePointLength } from '../../core/unicode-text.js';
import { quorumSetDepthProblem } from '../../core/relay/quorum-set.js';
import { registerSchema, relayLimits, sessionSchema } from './relay-facts.js';

/**
 * Request schemas of the relay. Each one validates a request at the boundary and, through
 * `z.toJSONSchema`, becomes a component of /openapi.json, so the document cannot drift.
 */

/** A string bounded in Unicode code points (JSON Schema's maxLength counts code points too; zod's `.max` counts UTF-16 units). */
export function codePointText(maxChars: number, options: { singleLine?: boolean; minChars?: number } = {}) {
  return z
    .string()
    .superRefine((s, ctx) => {
      const n = codePointLength(s);
      if (n > maxChars) {
        const error = stringTooLong(maxChars);
        ctx.addIssue({ code: 'custom', message: error.msg, params: { pydantic: error }, input: s });
      }
      if (options.minChars !== undefined && n < options.minChars) {
        const error = stringTooShort(options.minChars);
        ctx.addIssue({ code: 'custom', message: error.msg, params: { pydantic: error }, input: s });
      }
      if (options.singleLine && /[\r\n]/.test(s)) {
        ctx.addIssue({ code: 'custom', message: 'Value error, must not contain a line break', input: s });
      }
    })
    .meta({ maxLength: maxChars, ...(options.minChars !== undefined ? { minLength: options.minChars } : {}) });
}

export const nodeIdSchema = z.string().regex(/^[0-9a-f]{64}$/, 'node id must be 64 lowercase hex characters (the Ed25519 public key)').meta({ description: 'Ed25519 public key, 64 lowercase hex characters' });
export const itemIdSchema = z.string().regex(/^[0-9a-f]{64}$/, 'item id must be 64 lowercase hex characters (a SHA-256 digest)');
const sigSchema = z.string().regex(/^[A-Za-z0-9_-]{85}[AQgw]$/, 'sig must be an Ed25519 signature as unpadded base64url (86 characters)');
const unixSeconds = z.number().int().nonnegative().meta({ description: 'Unix seconds' });

export const registerBody = z
  .object({
    schema: z.literal(registerSchema),
    node_id: nodeIdSchema,
    relay: z.string().meta({ description: "this relay's base URL, so the document cannot be replayed elsewhere" }),
    created_at: unixSeconds,
    name: codePointText(relayLimits.nameMaxChars, { singleLine: true }).optional(),
    sig: sigSchema,
  })
  .strict()
  .meta({ id: 'RegisterRequest', description: 'A registration document signed by the node key (Ed25519 over RFC 8785 bytes without sig).' });

export const sessionBody = z
  .object({
    schema: z.literal(sessionSchema),
    node_id: nodeIdSchema,
    relay: z.string(),
    created_at: unixSeconds,
    sig: sigSchema,
  })
  .strict()
  .meta({ id: 'SessionRequest', description: 'A session document signed by the node key; answers the current human credential.' });

export const meUpdateBody = z
  .object({
    name: codePointText(relayLimits.nameMaxChars, { singleLine: true }).optional(),
    about: codePointText(relayLimits.aboutMaxChars).optional(),
  })
  .strict()
  .meta({ id: 'MeUpdate' });

export const directoryBody = z
  .object({
    listed: z.boolean().optional().meta({ description: 'appear in /search results' }),
    phone_discoverable: z.boolean().optional().meta({ description: 'let /lookup find you by your verified number' }),
  })
  .strict()
  .meta({ id: 'DirectoryUpdate' });

export const phoneBody = z.object({ phone: z.string().max(32) }).strict().meta({ id: 'PhoneRequest' });
export const phoneCodeBody = z
  .object({ phone: z.string().max(32), code: z.string().max(16) })
  .strict()
  .meta({ id: 'PhoneCode' });

export const botBody = z.object({ name: codePointText(relayLimits.nameMaxChars, { singleLine: true, minChars: 1 }) }).strict().meta({ id: 'BotCreate' });

/**
 * The x.item/1 statement, for /openapi.json and answers: the relay parses it with the core's
 * `parseItemAuthorship` (one parser, one verifier), which is stricter than this outline.
 */
export const itemAuthorshipDoc = z
  .object({
    schema: z.literal('x.item/1'),
    item: itemIdSchema,
    type: z.enum(['claim', 'file']),
    author: nodeIdSchema,
    title: z.string().optional().meta({ description: 'files only: the title as stored' }),
    media_type: z.string().optional().meta({ description: 'files only: the media type as stored (type/subtype, lower case)' }),
    sig: sigSchema,
  })
  .meta({ id: 'ItemAuthorship', description: "The author's signed statement of authorship: Ed25519 by author over RFC 8785 canonical JSON without sig. Files also sign their title and media type." });

export const claimBody = z
  .object({
    // Documented as an enum; the value is checked by the core's validateClaim (422 literal_error), one rule for every path.
    kind: z.string().meta({ enum: [...claimKinds], description: 'one of the claim kinds (also listed by /health)' }),
    title: codePointText(relayLimits.titleMaxChars, { singleLine: true }),
    body: codePointText(relayLimits.bodyMaxChars).default(''),
    authorship: itemAuthorshipDoc.optional().meta({ description: "hilbench extension: the author's signed x.item/1 statement; without it the item is not forwarded to peer relays" }),
  })
  .strict()
  .meta({ id: 'ClaimCreate', description: 'A claim item. Lengths count Unicode code points; kind and title may not contain a line break.' });

const quorumSetShape: z.ZodType<unknown> = z
  .object({
    t: z.number().int().optional(),
    v: z.array(z.string()).optional(),
    i: z.array(z.lazy(() => quorumSetShape)).optional(),
  })
  // Strict at every level, like the slice inside a vote (the core refuses unknown keys there):
  // a stripped typo such as "threshold" would otherwise publish a slice the caller did not mean.
  .strict()
  .meta({ id: 'QuorumSet', description: 'At least t of the validators v and inner sets i. Omit t for the default (67 %, rounded up).' });

/**
 * A quorum set from a request. Its depth is checked first, without recursion: zod walks nested
 * sets recursively, and one nested 1 000 deep overflowed the stack (500 instead of the 422 the
 * core gives; issue 9). A preprocess step, so /openapi.json still documents the `QuorumSet` itself.
 */
export const quorumSetSchema: z.ZodType<unknown> = z.preprocess((input, ctx) => {
  const tooDeep = quorumSetDepthProblem(input);
  if (tooDeep) {
    const error = coreProblemError(tooDeep);
    ctx.addIssue({ code: 'custom', path: tooDeep.path, message: error.msg, input: null, params: { pydantic: error } });
  }
  return input;
}, quorumSetShape);

export const sliceMemberBody = z.object({ node_id: nodeIdSchema }).strict().meta({ id: 'SliceMember' });

export const reportReasons = ['spam', 'abuse', 'illegal', 'misleading', 'duplicate', 'other'] as const;
export const reportBody = z
  .object({ reason: z.enum(reportReasons), note: codePointText(relayLimits.reportNoteMaxChars).default('') })
  .strict()
  .meta({ id: 'ReportCreate' });

export const inviteAcceptBody = z.object({ code: z.string().max(64) }).strict().meta({ id: 'InviteAccept' });
export const pairConfirmBody = z.object({ token: z.string().max(128) }).strict().meta({ id: 'PairConfirm' });
export const reachBody = z.object({ url: z.string().max(2000) }).strict().meta({ id: 'ReachAdd' });
export const reachProbeBody = z.object({ url: z.string().max(2000).optional() }).strict().meta({ id: 'ReachProbe' });

const digits = z.string().regex(/^[0-9]{1,15}$/, 'must be a non-negative integer');

export const eventsQuery = z
  .object({
    since: digits.optional().meta({ description: 'the `next` cursor of the previous page; 0 or absent for the start' }),
    authors: z.string().max(relayLimits.authorsFilterMax * 65).optional().meta({ description: 'comma-separated node ids' }),
    limit: digits.optional().meta({ description: `page size, at most ${relayLimits.eventsPageMax}` }),
  })
  .meta({ id: 'EventsQuery' });

export const searchQuery = z.object({ q: codePointText(200, { minChars: 1 }) }).meta({ id: 'SearchQuery' });
export const lookupQuery = z.object({ phone: z.string().max(32) }).meta({ id: 'LookupQuery' });
export const itemsQuery = z
  .object({
    after: digits.optional().meta({ description: 'the `next` cursor of the previous page' }),
    limit: digits.optional(),
    author: nodeIdSchema.optional(),
  })
  .meta({ id: 'ItemsQuery' });

/**
 * The x.vote/1 document, for /openapi.json only: the relay validates votes with the core's
 * `parseVote` (one parser, one verifier), which is stricter than this outline.
 */
export const voteDocSchema = z
  .object({
    schema: z.literal('x.vote/1'),
    scheme: z.literal('scp-s5'),
    item: itemIdSchema,
    voter: nodeIdSchema,
    value: z.enum(['yes', 'no']),
    phase: z.enum(['vote', 'accept', 'confirm']),
    slice: quorumSetSchema.optional(),
    slice_hash: z.string().regex(/^[0-9a-f]{64}$/).optional(),
    created_at: unixSeconds,
    sig: sigSchema,
    hint: z.unknown().optional().meta({ description: 'not signed; relays may change it' }),
  })
  .meta({ id: 'Vote', description: 'Signed statement: Ed25519 by voter over RFC 8785 canonical JSON without sig and hint; exactly one of slice and slice_hash.' });

/** The x.slice/1 declaration (POST /slice/declare; events), outlined for /openapi.json: the core's `parseSliceDeclaration` decides. */
export const sliceDeclarationDoc = z
  .object({
    schema: z.literal('x.slice/1'),
    node_id: nodeIdSchema,
    slice: quorumSetSchema,
    slice_hash: z.string().regex(/^[0-9a-f]{64}$/).meta({ description: 'quorumSetHash of slice' }),
    updated_ms: z.number().int().nonnegative().meta({ description: 'Unix ms of the declaration; the newest wins, ties by the larger slice_hash' }),
    sig: sigSchema,
  })
  .meta({ id: 'SliceDeclaration', description: "A node's signed declaration of its slice: Ed25519 by node_id over RFC 8785 canonical JSON without sig." });

/** The `title` form field of a file upload (an object, so a refusal points at ["body", "title"]). */
export const fileTitleField = z.object({ title: codePointText(relayLimits.titleMaxChars, { singleLine: true }) });

/** The multipart form of `POST /items` (documentation: the handler streams it, checking `title` with `fileTitleField`). */
export const fileUploadForm = z.object({
  file: z.string().max(relayLimits.fileMaxBytes).meta({ format: 'binary', description: `the file, at most ${relayLimits.fileMaxBytes} bytes (413 beyond)` }),
  title: fileTitleField.shape.title.optional(),
  authorship: z.string().max(4096).optional().meta({ description: "hilbench extension: the author's signed x.item/1 statement as JSON text (type file, with the title and media type the relay stores)" }),
});
