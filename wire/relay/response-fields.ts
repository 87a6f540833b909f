import { z } from 'zod';

/**
 * The fields every relay answer is made of (ids, times, counts, quorum sets), shared by the
 * answers of each group of routes (identity-, item-, social- and network-responses.ts).
 */

export const nodeId = z.string().regex(/^[0-9a-f]{64}$/).meta({ description: 'Ed25519 public key, 64 lowercase hex characters' });

export const itemId = z.string().regex(/^[0-9a-f]{64}$/).meta({ description: 'SHA-256, 64 lowercase hex characters' });

export const isoTime = z.string().meta({ description: 'ISO 8601 UTC time' });

export const count = z.number().int().nonnegative();

export const sha256 = z.string().regex(/^[0-9a-f]{64}$/);

export const quorumSet: z.ZodType = z.lazy(() => z.strictObject({ t: z.number().int().positive(), v: z.array(nodeId), i: z.array(quorumSet) })).meta({ id: 'QuorumSetOut' });

export const openObject = z.record(z.string(), z.unknown());
