import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type RenodeConsoleEvent, RenodeConsoleParser } from './renode-console-parser.js';

/** A console transcript in the shape the stand-in and (from its source) Renode 1.16 print. */
const transcript = [
  '12:00:00.0000 [INFO] Loaded monitor commands from: /opt/renode/scripts/monitor.py\n',
  'Renode, version 1.16.1.0 (abc-202501011200)\n',
  '(monitor) ',
  '12:00:00.0100 [INFO] System bus created.\n',
  '(dut) ',
  '(dut) ',
  '12:00:00.0200 [INFO] sysbus: Loading block of 1804 bytes length at 0x8000000.\r\n',
  '(dut) ',
  "There was an error executing command 'connector Connect sysbus.usart9 term'\n",
  'Could not find peripheral sysbus.usart9\n',
  '(dut) ',
  'start\n', // an echo, if the console echoes
  'Starting emulation...\n',
  '12:00:00.0300 [INFO] dut: Machine started.\n',
  '(dut) ',
].join('');

const expected: RenodeConsoleEvent[] = [
  { kind: 'line', text: '12:00:00.0000 [INFO] Loaded monitor commands from: /opt/renode/scripts/monitor.py' },
  { kind: 'line', text: 'Renode, version 1.16.1.0 (abc-202501011200)' },
  { kind: 'prompt', name: 'monitor' },
  { kind: 'line', text: '12:00:00.0100 [INFO] System bus created.' },
  { kind: 'prompt', name: 'dut' },
  { kind: 'prompt', name: 'dut' },
  { kind: 'line', text: '12:00:00.0200 [INFO] sysbus: Loading block of 1804 bytes length at 0x8000000.' },
  { kind: 'prompt', name: 'dut' },
  { kind: 'line', text: "There was an error executing command 'connector Connect sysbus.usart9 term'" },
  { kind: 'line', text: 'Could not find peripheral sysbus.usart9' },
  { kind: 'prompt', name: 'dut' },
  { kind: 'line', text: 'start' },
  { kind: 'line', text: 'Starting emulation...' },
  { kind: 'line', text: '12:00:00.0300 [INFO] dut: Machine started.' },
  { kind: 'prompt', name: 'dut' },
];

function parseInChunks(text: string, cuts: number[]): RenodeConsoleEvent[] {
  const parser = new RenodeConsoleParser();
  const events: RenodeConsoleEvent[] = [];
  let from = 0;
  for (const cut of [...new Set(cuts)].sort((a, b) => a - b)) {
    events.push(...parser.push(text.slice(from, cut)));
    from = cut;
  }
  events.push(...parser.push(text.slice(from)));
  return events;
}

describe('RenodeConsoleParser', () => {
  it('splits a whole transcript into prompts and lines', () => {
    expect(parseInChunks(transcript, [])).toEqual(expected);
  });

  it('gives the same events however the stream is chunked (byte by byte included)', () => {
    expect(parseInChunks(transcript, [...transcript].map((_, i) => i))).toEqual(expected);
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: transcript.length }), { maxLength: 40 }), (cuts) => {
        expect(parseInChunks(transcript, cuts)).toEqual(expected);
      }),
    );
  });

  it('ignores terminal steering codes, also when a chunk boundary cuts one in two', () => {
    const coloured = '\x1b[2J\x1b[H\n\nRenode, version 1.16.1.0\n\x1b[31m(monitor) \x1b[0m12:00:00.0000 [INFO] x\n';
    const events = [
      { kind: 'line', text: 'Renode, version 1.16.1.0' },
      { kind: 'prompt', name: 'monitor' },
      { kind: 'line', text: '12:00:00.0000 [INFO] x' },
    ];
    expect(parseInChunks(coloured, [])).toEqual(events);
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: coloured.length }), { maxLength: 20 }), (cuts) => {
        expect(parseInChunks(coloured, cuts)).toEqual(events);
      }),
    );
  });

  it('does not take a prompt-like text in the middle of a line for a prompt', () => {
    expect(parseInChunks('log: (dut) is the machine\n', [])).toEqual([{ kind: 'line', text: 'log: (dut) is the machine' }]);
  });
});
