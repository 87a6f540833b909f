const isHexCode = (code: number) => (code >= 0x30 && code <= 0x39) || (code >= 0x61 && code <= 0x66) || (code >= 0x41 && code <= 0x46);

/**
 * Counts the packets in what a target sends its debugger that answer a packet: every packet but
 * console output, however the bytes are split. Console output is `O` and the text as pairs of hex
 * digits (GDB's manual, "Stop Reply Packets" and `qRcmd`): a stub sends it while the target runs
 * or before a monitor command's final reply, and it answers nothing. `OK` starts with `O` too, so a
 * packet is output only when what follows its `O` up to the `#` is a non-empty, even run of hex
 * digits; anything else (`OK`, an empty `O`, a run-length-encoded one) is an answer: counting too
 * many answers only loosens the slot's bound, counting too few would hold a debugger for good.
 * Like `ExitReplyScan`, it reads only after each `$` (a stub escapes `$` inside a payload, and
 * RSP forbids `#` and `$` as run-length counts), so a register read's reply is searched natively.
 */
export class AnswerCount {
  /** Where the last chunk left off: between packets, right after a `$`, or inside `$O` and `digits` hex digits. */
  private state: 'between' | 'start' | 'output' = 'between';
  private digits = 0;

  /** How many answers `text` completes. */
  feed(text: string): number {
    let answers = 0;
    let at = 0;
    while (at < text.length) {
      if (this.state === 'between') {
        const dollar = text.indexOf('$', at);
        if (dollar < 0) break;
        at = dollar + 1;
        this.state = 'start';
        continue;
      }
      if (this.state === 'start') {
        if (text[at] === 'O') {
          this.state = 'output';
          this.digits = 0;
          at++;
        } else {
          answers++;
          this.state = 'between';
        }
        continue;
      }
      while (at < text.length && isHexCode(text.charCodeAt(at))) {
        this.digits++;
        at++;
      }
      if (at >= text.length) break;
      const output = text[at] === '#' && this.digits > 0 && this.digits % 2 === 0;
      if (!output) answers++;
      this.state = 'between';
    }
    return answers;
  }
}
