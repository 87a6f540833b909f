import { describe, expect, it } from 'vitest';
import type { Board } from '../../boards/board-schema.js';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { BackendError } from '../backend.js';
import { describeQemuGuestClock, qemuBackendCommand, qemuDirectCommand, qemuGuestClock } from './qemu-command.js';

const boards = loadBoardCatalog();
const an385 = boards.find((b) => b.id === 'mps2-an385')!;

describe('qemu command lines', () => {
  it('listens on a unix socket with wait=on, semihosting on, monitor off', () => {
    expect(qemuBackendCommand(an385, '/tmp/x/fw.elf', '/tmp/x/uart.sock')).toEqual({
      file: 'qemu-system-arm',
      args: [
        '-M', 'mps2-an385', '-nographic', '-monitor', 'none',
        '-serial', 'unix:/tmp/x/uart.sock,server=on,wait=on',
        '-semihosting-config', 'enable=on,target=native',
        '-kernel', '/tmp/x/fw.elf',
      ],
    });
  });

  it('builds the direct benchmark command with the same options and serial on stdio', () => {
    const backend = qemuBackendCommand(an385, '/fw.elf', '/s.sock', { icountShift: 3, qemuBinary: '/opt/q' });
    const direct = qemuDirectCommand(an385, '/fw.elf', { icountShift: 3, qemuBinary: '/opt/q' });
    expect(direct.file).toBe('/opt/q');
    expect(direct.args).toContain('-icount');
    expect(direct.args.join(' ')).toBe(backend.args.join(' ').replace('unix:/s.sock,server=on,wait=on', 'stdio'));
  });

  it('leaves semihosting off when the board says so and passes a cpu override', () => {
    const board: Board = { ...an385, backends: { qemu: { machine: 'mps2-an385', cpu: 'cortex-m3', semihosting: false } } };
    const args = qemuDirectCommand(board, '/fw.elf').args;
    expect(args).not.toContain('-semihosting-config');
    expect(args.slice(0, 4)).toEqual(['-M', 'mps2-an385', '-cpu', 'cortex-m3']);
  });

  it('adds -icount shift=N,align=off,sleep=off when the board file asks (qemu.icount), and says which clock', () => {
    const deterministic: Board = { ...an385, backends: { qemu: { ...an385.backends.qemu!, icount: 4 } } };
    const args = qemuBackendCommand(deterministic, '/fw.elf', '/s.sock').args;
    expect(args.slice(args.indexOf('-icount'), args.indexOf('-icount') + 2)).toEqual(['-icount', 'shift=4,align=off,sleep=off']);
    // Before -kernel, like every other option.
    expect(args.indexOf('-icount')).toBeLessThan(args.indexOf('-kernel'));
    expect(describeQemuGuestClock(qemuGuestClock(deterministic))).toBe('icount shift=4 (16 ns per instruction)');
    // The backend option overrides the board file; without either, the guest follows the host.
    expect(qemuDirectCommand(deterministic, '/fw.elf', { icountShift: 0 }).args).toContain('shift=0,align=off,sleep=off');
    expect(qemuDirectCommand(an385, '/fw.elf').args).not.toContain('-icount');
    expect(describeQemuGuestClock(qemuGuestClock(an385))).toBe('host');
  });

  it('refuses socket paths QEMU or the kernel cannot take, and bad icount shifts', () => {
    expect(() => qemuBackendCommand(an385, '/fw.elf', `/tmp/${'a'.repeat(110)}`)).toThrow(/limit is 107/);
    expect(() => qemuBackendCommand(an385, '/fw.elf', '/tmp/a,b.sock')).toThrow(/comma/);
    expect(() => qemuDirectCommand(an385, '/fw.elf', { icountShift: 11 })).toThrow(BackendError);
  });

  it('says a board without a QEMU machine is unavailable', () => {
    const pico = boards.find((b) => b.id === 'pico')!;
    const error = (() => {
      try {
        qemuDirectCommand(pico, '/fw.elf');
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(BackendError);
    expect((error as BackendError).kind).toBe('unavailable');
  });
});
