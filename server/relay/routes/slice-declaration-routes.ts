import { HttpError } from '../../http/http-error.js';
import { type RelayDeps, unixSeconds } from '../relay-deps.js';
import { invalidInput } from './relay-error.js';
import { relayLimits } from '../../../wire/relay/relay-facts.js';
import { sliceAnswerSchema } from '../../../wire/relay/item-responses.js';
import { type RelayRoute, route } from './relay-route.js';
import { sliceDeclarationDoc } from '../../../wire/relay/relay-schemas.js';
import { requireSliceDeclaration } from '../domain/signed-statements.js';

/**
 * POST /slice/declare (a hilbench extension): a node publishes its slice as an x.slice/1
 * declaration signed with its own key. Unlike POST /slice (a credential the relay issued), the
 * declaration is the node's word, so peers take it from this relay and verify it themselves.
 */
export function sliceDeclarationRoutes(deps: RelayDeps): RelayRoute[] {
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
      handle: async ({ req }) => {
        const declaration = requireSliceDeclaration(req.body, ['body']);
        const nowMs = deps.clock.nowMs();
        if (declaration.updated_ms > nowMs + relayLimits.proofMaxSkewSeconds * 1000) {
          throw invalidInput(['body', 'updated_ms'], `Value error, updated_ms is more than ${relayLimits.proofMaxSkewSeconds} s ahead of this relay's clock`, declaration.updated_ms, 'value_error', { now: unixSeconds(nowMs) });
        }
        const { store, voting } = deps;
        if (!(await store.plainData.nodes.exists(declaration.node_id))) throw new HttpError(403, 'node is not a registered node: POST /register first');
        const applied = await store.tx(voting.applyDeclaration(declaration, null, nowMs));
        const current = await store.plain(voting.sliceDeclaration(declaration.node_id));
        if (!applied && current?.sig !== declaration.sig) {
          throw new HttpError(409, `a newer declaration of this node's slice is published (updated_ms ${(await store.plainData.slices.declaredAt(declaration.node_id))?.updated_ms ?? '?'}); sign one with a later updated_ms`);
        }
        return { node_id: declaration.node_id, slice_hash: declaration.slice_hash, slice: (await store.plain(voting.publishedSlice(declaration.node_id)))!.qset, t_auto: false };
      },
    }),
  ];
}
