import { describe, expect, it } from 'vitest';
import { GdbCoreThreads } from './sim-gdb-target.js';

describe('GdbCoreThreads (two cores as GDB threads)', () => {
  const twoCores = () => new GdbCoreThreads([() => 'core 0', () => 'core 1 (running)']);

  it('lists the threads, says which stopped, and describes each in hex', () => {
    const threads = twoCores();
    expect(threads.answer('qfThreadInfo')).toBe('m1,2');
    expect(threads.answer('qsThreadInfo')).toBe('l');
    expect(threads.answer('qC')).toBe('QC1');
    threads.stop(2);
    expect(threads.answer('qC')).toBe('QC2');
    expect(Buffer.from(threads.answer('qThreadExtraInfo,2')!, 'hex').toString()).toBe('core 1 (running)');
    expect(threads.answer('qThreadExtraInfo,3')).toBe('E01');
    expect(threads.answer('T2')).toBe('OK');
    expect(threads.answer('T3')).toBe('E01');
    expect(threads.answer('m0,4')).toBeUndefined();
  });

  it('selects the registers thread and the stepping thread; 0 and -1 mean the one that stopped', () => {
    const threads = twoCores();
    expect(threads.answer('Hg2')).toBe('OK');
    expect(threads.registers).toBe(2);
    expect(threads.answer('Hg0')).toBe('OK');
    expect(threads.registers).toBe(1);
    expect(threads.answer('Hc-1')).toBe('OK');
    expect(threads.stepping).toBe(1);
    expect(threads.answer('Hc2')).toBe('OK');
    expect(threads.stepping).toBe(2);
    expect(threads.answer('Hg3')).toBe('E01');
    expect(threads.answer('Hc-2')).toBe('E01');
    expect(threads.registers).toBe(1);
    expect(threads.stepping).toBe(2);
  });

  it('refuses a vCont naming a thread that does not exist, and passes the others on to the stub', () => {
    const threads = twoCores();
    for (const payload of ['vCont;s:5', 'vCont;s:2;c:3', 'vCont;c:p1.1', 'vCont;s:']) expect(threads.answer(payload), payload).toBe('E01');
    for (const payload of ['vCont;s:2', 'vCont;s:1;c', 'vCont;c', 'vCont;c:-1', 'vCont?']) expect(threads.answer(payload), payload).toBeUndefined();
    expect(threads.answer('qC')).toBe('QC1');
  });

  it('names the stopped thread in stop replies, and leaves other replies alone', () => {
    const threads = twoCores();
    threads.stop(2);
    expect(threads.namedStopReply('S05')).toBe('T05thread:2;');
    expect(threads.namedStopReply('S02')).toBe('T02thread:2;');
    expect(threads.namedStopReply('T0500:01000000;reason:trace;')).toBe('T0500:01000000;reason:trace;thread:2;');
    expect(threads.namedStopReply('T05thread:1;')).toBe('T05thread:1;');
    expect(threads.namedStopReply('W00')).toBe('W00');
    expect(threads.namedStopReply('OK')).toBe('OK');
  });
});
