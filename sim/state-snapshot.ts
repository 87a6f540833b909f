/** What a snapshot leaves to others: objects it neither records nor follows, buffers it does not copy. */
export interface StateSnapshotOptions {
  /** Inputs shared with other chips or fixed for the chip's life (board, ROM tables, options): never written back. */
  shared: ReadonlySet<object>;
  /** Buffers their owner refills itself (the RP2040's 16 MiB of flash): views on them are followed, their bytes not copied. */
  ownerRestored: ReadonlySet<ArrayBufferLike>;
}

/** An array element that was never set (rp2040js's `Array(40)` of DMA requests): put back as a hole, not as undefined. */
const HOLE = Symbol('hole');

/** One recorded object: its own data properties, array elements, or map or set entries. */
type Recorded =
  | { kind: 'object'; target: Record<string, unknown>; keys: string[]; values: unknown[] }
  | { kind: 'array'; target: unknown[]; values: unknown[] }
  | { kind: 'map'; target: Map<unknown, unknown>; entries: [unknown, unknown][] }
  | { kind: 'set'; target: Set<unknown>; values: unknown[] };

/**
 * The state of an object graph (a simulated chip: its library objects and the engine's own) as
 * it was when taken, so that `restore` can put it back in place: same objects, same memories,
 * nothing allocated anew. A reset then costs a copy of the chip's state instead of a new chip
 * whose old memories the collector must find and free during the next run (decision 0655).
 *
 * Followed from the root: own enumerable data properties, array elements, map and set entries.
 * Recorded by reference, so objects created later are dropped again at restore, and objects that
 * existed are written back field by field. Typed arrays and DataViews are restored through their
 * buffers (copied once here). Functions are kept as they are (closures refer to the same objects,
 * which is what keeps them valid); state held only inside a closure is not seen, so an engine must
 * keep its state in fields. Objects a walk cannot restore (promises, weak collections) throw.
 * Properties added after `take` are left as they are: the engine's reset test compares a reset
 * chip with a new one, whole, so such a property would show there.
 */
export class StateSnapshot {
  private readonly recorded: Recorded[] = [];
  private readonly buffers: { view: Uint8Array; bytes: Uint8Array }[] = [];

  /**
   * Records the graph from `root`. The snapshot may itself be a field of the graph (an engine
   * keeps its own): it is kept by reference, never recorded.
   */
  take(root: object, options: StateSnapshotOptions): void {
    this.recorded.length = 0;
    this.buffers.length = 0;
    const seen = new Set<unknown>([this]);
    const seenBuffers = new Set<ArrayBufferLike>();
    const pending: object[] = [root];
    const follow = (value: unknown) => {
      if (typeof value === 'object' && value !== null && !seen.has(value) && !options.shared.has(value)) {
        seen.add(value);
        pending.push(value);
      }
    };
    seen.add(root);
    for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
      if (ArrayBuffer.isView(next) || next instanceof ArrayBuffer) {
        const buffer = ArrayBuffer.isView(next) ? next.buffer : next;
        if (!seenBuffers.has(buffer) && !options.ownerRestored.has(buffer)) {
          seenBuffers.add(buffer);
          const view = new Uint8Array(buffer);
          this.buffers.push({ view, bytes: view.slice() });
        }
      } else if (Array.isArray(next)) {
        const array = next as unknown[];
        const values = Array.from({ length: array.length }, (_, i) => (i in array ? array[i] : HOLE));
        values.forEach(follow);
        this.recorded.push({ kind: 'array', target: next, values });
      } else if (next instanceof Map) {
        const entries = [...(next as Map<unknown, unknown>)];
        for (const [key, value] of entries) {
          follow(key);
          follow(value);
        }
        this.recorded.push({ kind: 'map', target: next, entries });
      } else if (next instanceof Set) {
        const values = [...(next as Set<unknown>)];
        values.forEach(follow);
        this.recorded.push({ kind: 'set', target: next, values });
      } else if (next instanceof Promise || next instanceof WeakMap || next instanceof WeakSet || next instanceof WeakRef) {
        throw new Error(`a chip's state holds a ${next.constructor.name}, which a snapshot cannot put back`);
      } else {
        const target = next as Record<string, unknown>;
        const keys: string[] = [];
        const values: unknown[] = [];
        for (const [key, descriptor] of Object.entries(Object.getOwnPropertyDescriptors(target))) {
          // Accessors compute from fields that are recorded themselves; only data is state.
          if (!descriptor.enumerable || !('value' in descriptor)) continue;
          keys.push(key);
          values.push(descriptor.value);
          follow(descriptor.value);
        }
        this.recorded.push({ kind: 'object', target, keys, values });
      }
    }
  }

  /** Puts every recorded object and buffer back as it was when the snapshot was taken. */
  restore(): void {
    for (const { view, bytes } of this.buffers) view.set(bytes);
    for (const r of this.recorded) {
      if (r.kind === 'object') {
        const { target, keys, values } = r;
        // Only changed fields are written: a field V8 saw as constant stays so, and the optimised code that relies on it stays valid.
        for (let i = 0; i < keys.length; i++) if (!Object.is(target[keys[i]!], values[i])) target[keys[i]!] = values[i];
      } else if (r.kind === 'array') {
        r.target.length = r.values.length;
        for (let i = 0; i < r.values.length; i++) {
          const value = r.values[i];
          if (value !== HOLE) r.target[i] = value;
          else if (i in r.target) delete r.target[i];
        }
      } else if (r.kind === 'map') {
        r.target.clear();
        for (const [key, value] of r.entries) r.target.set(key, value);
      } else {
        r.target.clear();
        for (const value of r.values) r.target.add(value);
      }
    }
  }
}
