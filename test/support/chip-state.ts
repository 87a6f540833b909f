import { createHash } from 'node:crypto';

/**
 * Everything reachable from a simulated chip's engine as path → value: numbers, strings, the
 * bytes of every buffer (flash included) as a hash, functions by name, a second reference to an
 * object by the path it was first seen at. Written apart from `StateSnapshot` (sim/state-snapshot.ts)
 * so that the reset-in-place tests check it, not repeat it. `isInput` marks what is not the chip's
 * state (board, image, options, a shared ROM): shown as "input", not followed.
 */
export function chipState(engine: object, isInput: (value: object) => boolean): Record<string, string> {
  const state: Record<string, string> = {};
  const firstSeen = new Map<unknown, string>();
  const hashed = new Set<ArrayBufferLike>();
  const visit = (value: unknown, path: string) => {
    if (typeof value === 'function') state[path] = `function ${value.name}`;
    else if (typeof value !== 'object' || value === null) state[path] = `${typeof value} ${String(value)}`;
    else if (isInput(value)) state[path] = 'input';
    else if (firstSeen.has(value)) state[path] = `same as ${firstSeen.get(value)}`;
    else {
      firstSeen.set(value, path);
      if (ArrayBuffer.isView(value)) {
        const buffer = value.buffer;
        state[path] = hashed.has(buffer) ? 'view' : `bytes ${createHash('sha1').update(new Uint8Array(buffer)).digest('hex')}`;
        hashed.add(buffer);
      } else if (value instanceof Map) [...value].forEach(([k, v], i) => (visit(k, `${path}<key ${i}>`), visit(v, `${path}<value ${i}>`)));
      else if (value instanceof Set) [...value].forEach((v, i) => visit(v, `${path}<${i}>`));
      else {
        state[`${path}:keys`] = Object.keys(value).join(',');
        for (const [key, v] of Object.entries(value)) visit(v, `${path}.${key}`);
      }
    }
  };
  visit(engine, 'engine');
  return state;
}
