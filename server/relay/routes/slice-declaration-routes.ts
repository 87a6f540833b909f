import type { RelayDeps } from '../relay-deps.js';
import { sliceAnswerSchema } from '../../../wire/relay/item-responses.js';
import { type RelayRoute, route } from './relay-route.js';
import { sliceDeclarationDoc } from '../../../wire/relay/relay-schemas.js';
import { Slice } from '../use-cases/slice.js';

/**
 * POST /slice/declare (a hilbench extension): a node publishes its slice as an x.slice/1
 * declaration signed with its own key. Unlike POST /slice (a credential the relay issued), the
 * declaration is the node's word, so peers take it from this relay and verify it themselves.
 */
export function sliceDeclarationRoutes(deps: RelayDeps): RelayRoute[] {
  const slices = new Slice(deps);
  return [
    route({
      method: 'post',
      path: '/slice/declare',
      summary: "Publish your slice as an x.slice/1 declaration signed with your node key (Ed25519 over RFC 8785 bytes without sig). Peers forward and verify it; a slice published with POST /slice stays on this relay. The newest updated_ms wins (ties: the larger slice_hash).",
      auth: 'signature',
      since: '0.9.19',
      response: sliceAnswerSchema,
      body: sliceDeclarationDoc,
      bodyKind: 'core',
      handle: ({ req }) => slices.declare(req.body),
    }),
  ];
}
