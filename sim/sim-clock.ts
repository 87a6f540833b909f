/**
 * Simulated time of one emulated chip, in nanoseconds since reset release, with one-shot alarms.
 *
 * It has the shape rp2040js expects of its clock (`nanos`, `createAlarm`), so the RP2040 timer,
 * SysTick and DMA schedule their events here, and the run loop can ask when the next one is due:
 * that is what lets a core sleeping in WFI skip ahead instead of spinning. Written here rather than
 * using rp2040js's `SimulationClock` (not exported from the package, and its "time to next alarm"
 * is 0 both when an alarm is due now and when none is pending).
 */
export class SimClock {
  private nowNanos = 0;
  /** Pending alarms, sorted by due time; ties keep scheduling order. */
  private pending: SimAlarm[] = [];
  /** The stop mark (`stopAt`): Infinity when none is set. */
  private stopNanos = Infinity;
  private onStop: (() => void) | undefined;
  /**
   * The earlier of the next alarm's due time and the stop mark: until time reaches it, `tick`
   * only moves time. Kept up to date so that the run loop's per-instruction `tick` is one compare.
   */
  private horizonNanos = Infinity;

  /** Simulated nanoseconds since reset release. */
  get nanos(): number {
    return this.nowNanos;
  }

  /** The absolute simulated time of the next pending alarm, or undefined when none is pending. */
  get nextAlarmNanos(): number | undefined {
    return this.pending[0]?.dueNanos;
  }

  createAlarm(callback: () => void): SimAlarm {
    return new SimAlarm(this, callback);
  }

  /**
   * Sets the stop mark: the first `tick` or `advanceTo` that brings time to `stopNanos` or past
   * it calls `onStop` once, after the alarms due on the way. The run loop ends its turn there
   * instead of comparing the time at every instruction. Replaces an earlier mark.
   */
  stopAt(stopNanos: number, onStop: () => void): void {
    this.stopNanos = stopNanos;
    this.onStop = onStop;
    this.updateHorizon();
  }

  /** Removes the stop mark, if any. */
  clearStop(): void {
    this.stopNanos = Infinity;
    this.onStop = undefined;
    this.updateHorizon();
  }

  /** Advances time by `deltaNanos`, firing every alarm due on the way at its own time. */
  tick(deltaNanos: number): void {
    const target = this.nowNanos + deltaNanos;
    // The hot path (once per instruction): no alarm due yet, no stop mark reached.
    if (target < this.horizonNanos) this.nowNanos = target;
    else this.advanceTo(target);
  }

  /** Advances time to `targetNanos` (never backwards), firing due alarms in order, then the stop mark's callback if it is reached. */
  advanceTo(targetNanos: number): void {
    for (;;) {
      const next = this.pending[0];
      if (!next || next.dueNanos > targetNanos) break;
      this.pending.shift();
      next.scheduled = false;
      if (next.dueNanos > this.nowNanos) this.nowNanos = next.dueNanos;
      next.callback();
    }
    if (targetNanos > this.nowNanos) this.nowNanos = targetNanos;
    const onStop = this.onStop;
    if (onStop && this.nowNanos >= this.stopNanos) {
      this.stopNanos = Infinity;
      this.onStop = undefined;
      onStop();
    }
    this.updateHorizon();
  }

  /** @internal used by SimAlarm */
  link(alarm: SimAlarm): void {
    let i = this.pending.length;
    while (i > 0 && this.pending[i - 1]!.dueNanos > alarm.dueNanos) i--;
    this.pending.splice(i, 0, alarm);
    this.updateHorizon();
  }

  /** @internal used by SimAlarm */
  unlink(alarm: SimAlarm): void {
    const i = this.pending.indexOf(alarm);
    if (i >= 0) this.pending.splice(i, 1);
    this.updateHorizon();
  }

  private updateHorizon() {
    const next = this.pending[0];
    this.horizonNanos = next !== undefined && next.dueNanos < this.stopNanos ? next.dueNanos : this.stopNanos;
  }
}

/** A one-shot alarm; `schedule` again to re-arm. */
export class SimAlarm {
  dueNanos = 0;
  scheduled = false;

  constructor(
    private readonly clock: SimClock,
    readonly callback: () => void,
  ) {}

  /** Fires `deltaNanos` after the clock's current time, replacing any earlier schedule. */
  schedule(deltaNanos: number): void {
    if (this.scheduled) this.clock.unlink(this);
    this.dueNanos = this.clock.nanos + Math.max(0, deltaNanos);
    this.scheduled = true;
    this.clock.link(this);
  }

  cancel(): void {
    if (this.scheduled) this.clock.unlink(this);
    this.scheduled = false;
  }
}
