import { describe, expect, it } from 'vitest';
import { SimClock } from './sim-clock.js';

describe('SimClock', () => {
  it('fires alarms in due order, each at its own time, and reports the next one', () => {
    const clock = new SimClock();
    const fired: Array<[string, number]> = [];
    const a = clock.createAlarm(() => fired.push(['a', clock.nanos]));
    const b = clock.createAlarm(() => fired.push(['b', clock.nanos]));
    expect(clock.nextAlarmNanos).toBeUndefined();
    b.schedule(300);
    a.schedule(100);
    expect(clock.nextAlarmNanos).toBe(100);
    clock.tick(250);
    expect(fired).toEqual([['a', 100]]);
    expect(clock.nanos).toBe(250);
    clock.advanceTo(1000);
    expect(fired).toEqual([
      ['a', 100],
      ['b', 300],
    ]);
    expect(clock.nextAlarmNanos).toBeUndefined();
  });

  it('re-arms on schedule, forgets cancelled alarms and never goes backwards', () => {
    const clock = new SimClock();
    let count = 0;
    const alarm = clock.createAlarm(() => count++);
    alarm.schedule(100);
    alarm.schedule(500);
    clock.advanceTo(200);
    expect(count).toBe(0);
    alarm.cancel();
    clock.advanceTo(1000);
    expect(count).toBe(0);
    clock.advanceTo(10);
    expect(clock.nanos).toBe(1000);
  });

  it('lets an alarm re-schedule itself from its callback (a periodic timer)', () => {
    const clock = new SimClock();
    const times: number[] = [];
    const alarm = clock.createAlarm(() => {
      times.push(clock.nanos);
      if (times.length < 3) alarm.schedule(1000);
    });
    alarm.schedule(1000);
    clock.advanceTo(10_000);
    expect(times).toEqual([1000, 2000, 3000]);
  });

  it('calls the stop mark once time reaches it, after the alarms due on the way, and forgets a cleared one', () => {
    const clock = new SimClock();
    const seen: string[] = [];
    clock.createAlarm(() => seen.push(`alarm ${clock.nanos}`)).schedule(100);
    clock.stopAt(100, () => seen.push(`stop ${clock.nanos}`));
    clock.tick(99);
    expect(seen).toEqual([]);
    clock.tick(5);
    expect(seen).toEqual(['alarm 100', 'stop 104']);
    clock.tick(1000);
    expect(seen).toHaveLength(2);
    clock.stopAt(2000, () => seen.push('cleared'));
    clock.clearStop();
    clock.advanceTo(3000);
    expect(seen).toHaveLength(2);
    expect(clock.nanos).toBe(3000);
  });
});
