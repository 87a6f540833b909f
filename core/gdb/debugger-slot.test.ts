import { describe, expect, it } from 'vitest';
import type { DebuggerConnection } from './debugger-connection.js';
import { type DebugTarget, type DebuggerEvents, DebuggerSlot, MAX_UNANSWERED_PACKETS, protocolErrorMessage } from './debugger-slot.js';
import { hexOfText, rspPacket } from './rsp-packet.js';
import { RspReader } from './rsp-reader.js';

/** A debugger's connection in memory: what it was sent, whether it was ended or destroyed, and its side of the talk. */
function fakeConnection(options: { closesOnEnd?: boolean } = {}) {
  let dataListener: (text: string) => void = () => undefined;
  let endListener: () => void = () => undefined;
  const closeListeners: Array<() => void> = [];
  const state = { sent: '', ended: false, destroyed: false, holds: [] as boolean[] };
  const close = () => {
    if (state.destroyed) return;
    state.destroyed = true;
    for (const listener of closeListeners) listener();
  };
  const connection: DebuggerConnection = {
    write: (text) => void (state.sent += text),
    end: (text) => {
      state.sent += text ?? '';
      state.ended = true;
      // A relayed stream closes only once its far end has read the last bytes.
      if (options.closesOnEnd !== false) close();
    },
    destroy: close,
    get destroyed() {
      return state.destroyed;
    },
    onData: (listener) => void (dataListener = listener),
    hold: (held) => void state.holds.push(held),
    onEnd: (listener) => void (endListener = listener),
    onClose: (listener) => void closeListeners.push(listener),
  };
  return { connection, state, send: (text: string) => dataListener(text), halfClose: () => endListener(), hangUp: close };
}

/** A target that records what reached it, answers each packet `OK`, and says whether it was closed. */
function fakeTarget(name: string, log: string[]) {
  let listener: (text: string) => void = () => undefined;
  let ended: (why: { reason: string }) => void = () => undefined;
  const target: DebugTarget & { received: string[]; isClosed: boolean } = {
    received: [],
    isClosed: false,
    write(text) {
      this.received.push(text);
      if (text.includes('#')) listener(`+${rspPacket('OK')}`);
    },
    onData: (l) => void (listener = l),
    closed: new Promise((resolve) => (ended = resolve)),
    close() {
      if (!this.isClosed) log.push(`close ${name}`);
      this.isClosed = true;
      ended({ reason: 'closed' });
    },
  };
  return target;
}

/**
 * A target that keeps RSP's acknowledgement rules as the sim stubs and QEMU do: a packet with a
 * wrong checksum gets a `-` in ack mode and nothing in no-ack mode; any other is answered (`?` with
 * `S05`, the rest with `OK`), `QStartNoAckMode` turning the acks off.
 */
function ackKeepingTarget() {
  const reader = new RspReader();
  let acks = true;
  let listener: (text: string) => void = () => undefined;
  const target: DebugTarget = {
    write(text) {
      for (const event of reader.feed(text)) {
        if (event.kind !== 'packet') continue;
        if (!event.checksumOk) {
          if (acks) listener('-');
          continue;
        }
        listener(`${acks ? '+' : ''}${rspPacket(event.payload === '?' ? 'S05' : 'OK')}`);
        if (event.payload === 'QStartNoAckMode') acks = false;
      }
    },
    onData: (l) => void (listener = l),
    closed: new Promise(() => undefined),
    close: () => undefined,
  };
  return target;
}

/** `payload` framed with a checksum one off the right one. */
const badChecksum = (payload: string) => rspPacket(payload).replace(/#(..)$/, (_m, sum: string) => `#${((parseInt(sum, 16) + 1) & 0xff).toString(16).padStart(2, '0')}`);

/** A slot on board `b` whose events and attaches are written down in `log`. */
function slotWithLog(options: { attachFails?: boolean } = {}) {
  const log: string[] = [];
  const targets: Array<ReturnType<typeof fakeTarget>> = [];
  const events: DebuggerEvents = {
    connected: () => void log.push('connected'),
    refused: (m) => void log.push(`refused: ${m}`),
    protocolError: (m) => void log.push(`protocol error: ${m}`),
    attachFailed: (m) => void log.push(`attach failed: ${m}`),
    disconnected: (ending) => void log.push(`disconnected${ending ? `: ${ending.reason}` : ''}`),
  };
  const first = fakeTarget('t0', log);
  targets.push(first);
  const slot = new DebuggerSlot({
    boardId: 'b',
    maxPacketBytes: 64,
    first,
    events,
    attach: async () => {
      if (options.attachFails) throw new Error('the core did not halt');
      // A target takes one session at a time: the last one is closed before the next is asked for.
      log.push(`attach (last closed: ${targets.at(-1)!.isClosed})`);
      const target = fakeTarget(`t${targets.length}`, log);
      targets.push(target);
      return target;
    },
  });
  return { slot, log, targets };
}

/** Events nobody listens to. */
const quietEvents: DebuggerEvents = { connected: () => undefined, refused: () => undefined, protocolError: () => undefined, attachFailed: () => undefined, disconnected: () => undefined };

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('DebuggerSlot: one debugger at a time, one set of rules for the bridge and the engine thread', () => {
  it('refuses a second debugger with an E. reply naming the board; the first goes on', async () => {
    const { slot, log, targets } = slotWithLog();
    const first = fakeConnection();
    slot.accept(first.connection);
    const second = fakeConnection();
    slot.accept(second.connection);
    expect(second.state).toMatchObject({ ended: true, sent: `+${rspPacket('E.board b already has a debugger attached (one at a time)')}` });
    await settle();
    first.send(rspPacket('?'));
    expect(first.state.sent).toBe(`+${rspPacket('OK')}`);
    expect(targets[0]!.received).toEqual([rspPacket('?')]);
    expect(log).toEqual(['connected', 'refused: board b already has a debugger attached (one at a time)']);
  });

  it.each([
    ['a malformed packet', 'hello', /byte 0x68 outside a packet/],
    ['an oversized packet', `$${'a'.repeat(100)}`, /longer than 64 bytes/],
  ])('%s closes that connection only, passes none of it on, and the next debugger gets a target of its own', async (_what, input, why) => {
    const { slot, log, targets } = slotWithLog();
    const bad = fakeConnection();
    slot.accept(bad.connection);
    await settle();
    bad.send(input);
    expect(bad.state).toMatchObject({ ended: true, sent: expect.stringMatching(/^\+\$E\.the debugger sent what is not GDB's remote protocol \(/) });
    expect(targets[0]!.received).toEqual([]);
    const next = fakeConnection();
    slot.accept(next.connection);
    next.send(rspPacket('?'));
    await settle();
    expect(next.state.sent).toBe(`+${rspPacket('OK')}`);
    expect(targets[1]!.received).toEqual([rspPacket('?')]);
    expect(log[1]).toMatch(why);
    expect(log.slice(2)).toEqual(['disconnected', 'connected', 'close t0', 'attach (last closed: true)']);
  });

  it('holds a debugger that sends more packets than the target answered, and reads it again as the answers come', async () => {
    let answer: (text: string) => void = () => undefined;
    const received: string[] = [];
    // A target that answers only when told: an engine busy with what it was sent.
    const slow: DebugTarget = {
      write: (text) => void received.push(text),
      onData: (listener) => void (answer = listener),
      closed: new Promise(() => undefined),
      close: () => undefined,
    };
    const slot = new DebuggerSlot({ boardId: 'b', maxPacketBytes: 64, first: slow, attach: () => Promise.resolve(slow), events: quietEvents });
    const flood = fakeConnection();
    slot.accept(flood.connection);
    await settle();
    for (let k = 0; k < MAX_UNANSWERED_PACKETS; k++) flood.send(rspPacket('m0,4'));
    expect(flood.state.holds).toEqual([]);
    flood.send(`+${rspPacket('m0,4')}`);
    expect(flood.state.holds).toEqual([true]);
    // Two answers in one chunk: back at the bound, so it is read again.
    answer(`+${rspPacket('00000000')}+${rspPacket('00000000')}`);
    expect(flood.state.holds).toEqual([true, false]);
    expect(received).toHaveLength(MAX_UNANSWERED_PACKETS + 1);
    expect(flood.state.sent).toBe(`+${rspPacket('00000000')}+${rspPacket('00000000')}`);
  });

  it.each([
    ['no-ack mode (GDB over TCP): the target drops them', true, ''],
    ['ack mode: the target answers each with a -', false, '-'.repeat(MAX_UNANSWERED_PACKETS + 1)],
  ])('does not count packets with a wrong checksum as waiting for an answer, in %s', async (_mode, noAck, naks) => {
    const target = ackKeepingTarget();
    const slot = new DebuggerSlot({ boardId: 'b', maxPacketBytes: 64, first: target, attach: () => Promise.resolve(target), events: quietEvents });
    const gdb = fakeConnection();
    slot.accept(gdb.connection);
    await settle();
    if (noAck) gdb.send(rspPacket('QStartNoAckMode'));
    const start = gdb.state.sent.length;
    // More than the bound: counted as waiting, they would hold the connection for good.
    for (let k = 0; k <= MAX_UNANSWERED_PACKETS; k++) gdb.send(badChecksum('g'));
    gdb.send(rspPacket('?'));
    expect(gdb.state.holds).toEqual([]);
    expect(gdb.state.sent.slice(start)).toBe(`${naks}${noAck ? '' : '+'}${rspPacket('S05')}`);
  });

  it('takes no console output (O packets) for an answer: a half-closed debugger reads a monitor command to its OK', async () => {
    const { answer, gdb } = await halfClosingDebuggerOnSlowTarget();
    gdb.send(rspPacket(`qRcmd,${hexOfText('info')}`));
    gdb.halfClose();
    // As QEMU answers a monitor command: its text in O packets, split anywhere, then OK.
    const reply = `+${rspPacket(`O${hexOfText('state: running\n')}`)}${rspPacket(`O${hexOfText('more\n')}`)}`;
    answer(reply.slice(0, 9));
    answer(reply.slice(9));
    expect(gdb.state.ended).toBe(false);
    answer(rspPacket('OK'));
    expect([gdb.state.sent, gdb.state.ended]).toEqual([`${reply}${rspPacket('OK')}`, true]);
  });

  it('ends a debugger that ended its side (a half-close) only once what it sent is answered, the answers written first', async () => {
    const { answer, gdb, slot } = await halfClosingDebuggerOnSlowTarget();
    gdb.send(`${rspPacket('?')}${rspPacket('g')}`);
    gdb.halfClose();
    expect(gdb.state.ended).toBe(false);
    answer(`+${rspPacket('S05')}`);
    expect(gdb.state.ended).toBe(false);
    answer(`+${rspPacket('00')}`);
    expect([gdb.state.sent, gdb.state.ended]).toEqual([`+${rspPacket('S05')}+${rspPacket('00')}`, true]);
    // With nothing unanswered, a half-close ends the connection at once.
    gdb.hangUp();
    await settle();
    const quiet = fakeConnection({ closesOnEnd: false });
    slot.accept(quiet.connection);
    await settle();
    quiet.halfClose();
    expect(quiet.state.ended).toBe(true);
  });

  it('frees the slot at a protocol error at once, before the refused connection has closed', async () => {
    const { slot, log, targets } = slotWithLog();
    const bad = fakeConnection({ closesOnEnd: false });
    slot.accept(bad.connection);
    await settle();
    bad.send('hello');
    expect(bad.state).toMatchObject({ ended: true, destroyed: false, sent: `+${rspPacket(`E.${protocolErrorMessage('byte 0x68 outside a packet (expected $, +, - or 0x03)')}`)}` });
    const next = fakeConnection();
    slot.accept(next.connection);
    next.send(rspPacket('?'));
    await settle();
    expect(next.state.sent).toBe(`+${rspPacket('OK')}`);
    // What the refused debugger still sends goes nowhere, and its late close changes nothing.
    bad.send(rspPacket('g'));
    bad.hangUp();
    expect(targets[1]!.received).toEqual([rspPacket('?')]);
    expect(log.slice(2)).toEqual(['disconnected', 'connected', 'close t0', 'attach (last closed: true)']);
  });

  it('ends the debugging with the connection that detached: no debugger is taken after it', async () => {
    const { slot, log } = slotWithLog();
    const gdb = fakeConnection();
    slot.accept(gdb.connection);
    gdb.send(rspPacket('D'));
    await settle();
    gdb.hangUp();
    const late = fakeConnection();
    slot.accept(late.connection);
    expect(late.state).toMatchObject({ destroyed: true, sent: '' });
    await settle();
    expect(log).toEqual(['connected', 'disconnected: detached', 'close t0']);
  });

  it('answers a debugger whose target cannot be attached with an E. reply, and takes the next', async () => {
    const { slot, log } = slotWithLog({ attachFails: true });
    const first = fakeConnection();
    slot.accept(first.connection);
    first.hangUp();
    const second = fakeConnection();
    slot.accept(second.connection);
    await settle();
    expect(second.state).toMatchObject({ ended: true, sent: `+${rspPacket('E.could not attach to b: the core did not halt')}` });
    expect(log).toEqual(['connected', 'disconnected', 'connected', 'close t0', 'attach failed: could not attach to b: the core did not halt', 'disconnected']);
  });

  it('closed by its owner: the connection and its target close, with no event after', async () => {
    const { slot, log } = slotWithLog();
    const gdb = fakeConnection();
    slot.accept(gdb.connection);
    await settle();
    slot.close();
    await settle();
    expect(gdb.state.destroyed).toBe(true);
    expect(log).toEqual(['connected', 'close t0']);
  });
});

/** A slot on a target that answers only when the test says (`answer`), and a debugger whose half-close does not end it. */
async function halfClosingDebuggerOnSlowTarget() {
  let answerListener: (text: string) => void = () => undefined;
  const slow: DebugTarget = { write: () => undefined, onData: (listener) => void (answerListener = listener), closed: new Promise(() => undefined), close: () => undefined };
  const slot = new DebuggerSlot({ boardId: 'b', maxPacketBytes: 64, first: slow, attach: () => Promise.resolve(slow), events: quietEvents });
  const gdb = fakeConnection({ closesOnEnd: false });
  slot.accept(gdb.connection);
  await settle();
  return { answer: (text: string) => answerListener(text), gdb, slot };
}
