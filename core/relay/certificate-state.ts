import { type Compiled, type SliceNumbering, satisfied } from './compiled-slice.js';

/**
 * What `GrowingMaxQuorum` keeps per node (ids from a `SliceNumbering`): which nodes joined, with
 * which slices, and for every member left out of the quorum its certificate and its ord (see
 * growing-quorum.ts), plus the questions its algorithm asks of them and `certificateFaults`, the
 * check of the invariants it rests on that the property tests run after every join.
 */
export class CertificateState {
  /** Per node: undefined until it joins, null when it joined without a slice (never in a quorum), else its slice. */
  protected readonly slices: (Compiled | null | undefined)[] = [];
  /** Nodes that joined, in order. */
  protected readonly joinedIds: number[] = [];
  /** Per out member (joined, with a slice, left out): its place in a topological order of certificates; NaN otherwise. */
  protected readonly ords: number[] = [];
  /** Per out member: the members of its slice whose absence alone blocks it (never circular). */
  protected readonly certificates: (number[] | undefined)[] = [];
  /** node -> joined members whose slice names it (so a member that leaves is re-checked by its watchers). */
  protected readonly watchers: (number[] | undefined)[] = [];
  /** node -> out members whose certificate names it. */
  protected readonly dependents: (Set<number> | undefined)[] = [];
  /** `tentativeMarks[id] === epoch`: brought back (or joining) during the current join. */
  protected readonly tentativeMarks: number[] = [];
  /** Per node: `queueMarks[id] === epoch` while it waits to be re-examined in the current join. */
  protected readonly queueMarks: number[] = [];
  /** Marks of the general search's walks (their stamps are kept by `CertificateOrder`). */
  protected readonly coneMarks: number[] = [];
  protected readonly movedMarks: number[] = [];
  protected epoch = 0;
  protected quorumSize = 0;

  constructor(protected readonly numbering: SliceNumbering) {}

  /**
   * Extends every per-node array to the ids numbered so far, so the hot loops never write past an
   * array's end (the numbering is shared: other quorums may have numbered nodes this one never saw).
   */
  protected grow(): void {
    for (let id = this.ords.length; id < this.numbering.size; id++) {
      this.slices.push(undefined);
      this.ords.push(NaN);
      this.certificates.push(undefined);
      this.watchers.push(undefined);
      this.dependents.push(undefined);
      this.tentativeMarks.push(0);
      this.queueMarks.push(0);
      this.coneMarks.push(0);
      this.movedMarks.push(0);
    }
  }

  protected inQuorum(id: number): boolean {
    const slice = this.slices[id];
    return slice !== undefined && slice !== null && Number.isNaN(this.ords[id] as number);
  }

  protected isTentative(id: number): boolean {
    return this.tentativeMarks[id] === this.epoch;
  }

  /** Ord of an out member (-Infinity outside the set or without a slice); undefined when in the quorum. */
  protected outOrd(id: number): number | undefined {
    const slice = this.slices[id];
    if (slice === undefined || slice === null) return -Infinity;
    const ord = this.ords[id] as number;
    return Number.isNaN(ord) ? undefined : ord;
  }

  protected remember(id: number, certificate: readonly number[]): void {
    for (const m of certificate) (this.dependents[m] ??= new Set()).add(id);
  }

  protected forget(id: number, certificate: readonly number[]): void {
    for (const m of certificate) this.dependents[m]?.delete(id);
  }

  /**
   * What breaks the invariants the incremental answer rests on (for the property tests; empty when
   * sound): every out member has a certificate naming only members of its slice that are out or
   * outside the set, each below it in the order, which alone block its slice; `dependents` lists
   * exactly the out members whose certificates name a node. Costs a pass over every certificate.
   */
  certificateFaults(): string[] {
    const faults: string[] = [];
    for (const id of this.joinedIds) {
      const slice = this.slices[id];
      const ord = this.ords[id] as number;
      if (!slice || Number.isNaN(ord)) continue;
      const name = this.numbering.names[id] as string;
      const certificate = this.certificates[id];
      if (!certificate) {
        faults.push(`${name} is out without a certificate`);
        continue;
      }
      const named = new Set(certificate);
      if (satisfied(slice, (m) => !named.has(m))) faults.push(`${name}'s certificate does not block its slice`);
      for (const m of certificate) {
        const mOrd = this.outOrd(m);
        if (!slice.members.includes(m)) faults.push(`${name}'s certificate names ${this.numbering.names[m]}, outside its slice`);
        if (mOrd === undefined) faults.push(`${name}'s certificate names ${this.numbering.names[m]}, in the quorum`);
        else if (!(mOrd < ord)) faults.push(`${name}'s certificate names ${this.numbering.names[m]}, not below it in the order`);
        if (!this.dependents[m]?.has(id)) faults.push(`${name} is missing from the dependents of ${this.numbering.names[m]}`);
      }
    }
    for (let m = 0; m < this.dependents.length; m++) {
      for (const d of this.dependents[m] ?? []) {
        if (!this.certificates[d]?.includes(m) || Number.isNaN(this.ords[d] as number)) faults.push(`${this.numbering.names[d]} is a stale dependent of ${this.numbering.names[m]}`);
      }
    }
    return faults;
  }
}
