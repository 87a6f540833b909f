/** An exit the target reported: `W` (exited with a status) or `X` (terminated by a signal). */
export interface TargetExit {
  kind: 'W' | 'X';
  /** The status or signal number, 0-255. */
  status: number;
}

const isHexCode = (code: number) => (code >= 0x30 && code <= 0x39) || (code >= 0x61 && code <= 0x66) || (code >= 0x41 && code <= 0x46);

/**
 * Watches what a target sends its debugger for an exit reply (a packet whose payload starts with
 * `W` or `X` and two hex digits), however the bytes are split. It reads only the bytes after each
 * `$`: a stub escapes `$` inside a payload and never uses it as a run-length count, so every `$`
 * starts a packet. A register read's reply (hundreds of hex digits, no `$` but its first) is
 * searched natively and never parsed or copied, which is what the bridge needs on every reply.
 */
export class ExitReplyScan {
  /** A `$` near the end of the last chunk, with what followed it: the next chunk completes it. */
  private carry = '';

  /** The first exit reply that `text` completes, if any. */
  feed(text: string): TargetExit | undefined {
    const data = this.carry.length === 0 ? text : this.carry + text;
    this.carry = '';
    for (let at = data.indexOf('$'); at >= 0; at = data.indexOf('$', at + 1)) {
      if (data.length - at < 4) {
        this.carry = data.slice(at);
        return undefined;
      }
      const kind = data[at + 1];
      if ((kind === 'W' || kind === 'X') && isHexCode(data.charCodeAt(at + 2)) && isHexCode(data.charCodeAt(at + 3))) {
        return { kind, status: parseInt(data.slice(at + 2, at + 4), 16) };
      }
    }
    return undefined;
  }
}
