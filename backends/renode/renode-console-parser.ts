import { promptAt } from './renode-log.js';

/** What the Renode console printed: a monitor prompt, or a complete non-empty line. */
export type RenodeConsoleEvent = { kind: 'prompt'; name: string } | { kind: 'line'; text: string };

/**
 * Splits Renode's console stream into prompts and lines, however the stream is chunked. Prompts
 * (`(monitor) `, `(dut) `) come without a newline, so they are taken from the partial line as soon
 * as they are complete; several can share a line (`(dut) (dut) 12:00:01.0000 [INFO] ...` when
 * commands print nothing), and what follows a prompt on its line is a line of its own.
 */
export class RenodeConsoleParser {
  private partial = '';
  /** How much of `partial` has been taken as prompts already. */
  private scanned = 0;

  /** An escape sequence cut in two by a chunk boundary, kept until its end arrives. */
  private carry = '';

  push(text: string): RenodeConsoleEvent[] {
    const events: RenodeConsoleEvent[] = [];
    this.partial += this.withoutEscapes(text);
    for (;;) {
      this.scanPrompts(events);
      const newline = this.partial.indexOf('\n');
      if (newline < 0) return events;
      const line = this.partial.slice(this.scanned, newline).replace(/\r$/, '');
      this.partial = this.partial.slice(newline + 1);
      this.scanned = 0;
      if (line.trim()) events.push({ kind: 'line', text: line });
    }
  }

  /**
   * Drops terminal steering codes (colours, cursor moves, clear screen): `--plain` should remove
   * them, but the shell's banner and prompt redraws are not all routed through that option.
   */
  private withoutEscapes(text: string): string {
    const combined = this.carry + text;
    const cut = /\x1b(\[[0-9;?]*)?$/.exec(combined);
    this.carry = cut ? cut[0] : '';
    const complete = cut ? combined.slice(0, cut.index) : combined;
    return complete.replace(/\x1b\[[0-9;?]*[ -\/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>78]/g, '');
  }

  /** Takes every complete prompt at the scan position of the current line. */
  private scanPrompts(events: RenodeConsoleEvent[]) {
    for (;;) {
      const rest = this.partial.slice(this.scanned);
      const prompt = promptAt(rest.split('\n')[0] ?? '');
      if (!prompt) return;
      events.push({ kind: 'prompt', name: prompt.name });
      this.scanned += prompt.name.length + 3;
    }
  }
}
