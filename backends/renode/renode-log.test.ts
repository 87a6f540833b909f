import { describe, expect, it } from 'vitest';
import { cpuAbortOf, isMonitorError, parseRenodeLogLine, promptAt } from './renode-log.js';

describe('Renode log lines', () => {
  it('parses the 1.16 format, with and without a source', () => {
    expect(parseRenodeLogLine('12:00:01.6054 [INFO] Loaded monitor commands from: /opt/renode/scripts/monitor.py')).toEqual({
      time: '12:00:01.6054',
      level: 'INFO',
      source: undefined,
      message: 'Loaded monitor commands from: /opt/renode/scripts/monitor.py',
    });
    expect(parseRenodeLogLine('12:00:03.4982 [INFO] dut: Machine started.')).toEqual({ time: '12:00:03.4982', level: 'INFO', source: 'dut', message: 'Machine started.' });
    expect(parseRenodeLogLine('12:00:03.4982 [WARNING] sysbus: [cpu: 0x8000123] ReadDoubleWord from non existing peripheral at 0x40023800.')).toMatchObject({
      level: 'WARNING',
      source: 'sysbus',
      message: '[cpu: 0x8000123] ReadDoubleWord from non existing peripheral at 0x40023800.',
    });
  });

  it('parses the bracketed variants of newer builds and thread ids', () => {
    expect(parseRenodeLogLine('[12:00:01.6054] [ERROR] cpu: CPU abort [PC=0x8000100]: Lockup.')).toMatchObject({ time: '12:00:01.6054', level: 'ERROR', source: 'cpu' });
    expect(parseRenodeLogLine('[00:00:01.000100] [INFO] dut/sysbus.usart2: hi')).toMatchObject({ time: '00:00:01.000100', source: 'dut/sysbus.usart2', message: 'hi' });
    expect(parseRenodeLogLine('[host: 12:00:01.6054 | virt: 00:00:00.000000] [DEBUG] (12) sysbus: x')).toMatchObject({ level: 'DEBUG', source: 'sysbus', message: 'x' });
    expect(parseRenodeLogLine('[INFO] sysbus: no timestamp at all')).toMatchObject({ time: undefined, source: 'sysbus' });
    expect(parseRenodeLogLine('\x1b[32m12:00:01.0000 [INFO] dut: Machine started.\x1b[0m')).toMatchObject({ source: 'dut' });
  });

  it('does not take monitor output or UART text for log lines', () => {
    expect(parseRenodeLogLine('Starting emulation...')).toBeUndefined();
    expect(parseRenodeLogLine("There was an error executing command 'sysbus LoadELF @x'")).toBeUndefined();
    expect(parseRenodeLogLine('tick 1 [INFO] not at the start')).toBeUndefined();
  });

  it('finds prompts at the start of a line only', () => {
    expect(promptAt('(monitor) ')).toEqual({ name: 'monitor', rest: '' });
    expect(promptAt('(dut) 12:00:01.0000 [INFO] sysbus: x')).toEqual({ name: 'dut', rest: '12:00:01.0000 [INFO] sysbus: x' });
    expect(promptAt('(dut)')).toBeUndefined();
    expect(promptAt('x (dut) ')).toBeUndefined();
  });

  it('recognises monitor errors and CPU aborts', () => {
    expect(isMonitorError("There was an error executing command 'machine LoadPlatformDescription @x'")).toBe(true);
    expect(isMonitorError("Could not find file 'x'.")).toBe(true);
    expect(isMonitorError('No such command or device: foo')).toBe(true);
    expect(isMonitorError('Error E00: Syntax error')).toBe(true);
    expect(isMonitorError('Starting emulation...')).toBe(false);
    const abort = parseRenodeLogLine('12:00:01.0000 [ERROR] cpu: CPU abort [PC=0xFFFFFFF0]: Lockup.')!;
    expect(cpuAbortOf(abort)).toBe('cpu: CPU abort [PC=0xFFFFFFF0]: Lockup.');
    expect(cpuAbortOf(parseRenodeLogLine('12:00:01.0000 [INFO] cpu: CPU abort mentioned in passing')!)).toBeUndefined();
  });
});
