import { describe, expect, it } from 'vitest';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { pathToken, renodeSetupCommands, resolveRenode } from './renode-command.js';

const board = loadBoardCatalog().find((b) => b.id === 'stm32f4-discovery')!;

describe('Renode commands', () => {
  it('sets the board up with the documented monitor commands, in order', () => {
    expect(renodeSetupCommands(board, '/tmp/hbr-1/fw.elf', 40123).map((c) => c.command)).toEqual([
      'mach create "dut"',
      'machine LoadPlatformDescription @platforms/boards/stm32f4_discovery-kit.repl',
      'sysbus LoadELF @/tmp/hbr-1/fw.elf',
      'emulation CreateServerSocketTerminal 40123 "hilbench-uart" false',
      'connector Connect sysbus.usart2 hilbench-uart',
    ]);
  });

  it('escapes spaces in path tokens and refuses quotes and newlines', () => {
    expect(pathToken('/tmp/a b/fw.elf')).toBe('@/tmp/a\\ b/fw.elf');
    expect(() => pathToken('/tmp/"x"')).toThrow(/not usable/);
    expect(() => pathToken('/tmp/x\ny')).toThrow(/not usable/);
  });

  it('prefers the option, then renode on the search path', () => {
    expect(resolveRenode('/opt/r/renode', '/nonexistent').command).toBe('/opt/r/renode');
    expect(resolveRenode(undefined, '/nonexistent')).toEqual({ command: 'renode', found: undefined });
    expect(resolveRenode('sh', '/bin:/usr/bin').found).toMatch(/\/sh$/);
  });
});
