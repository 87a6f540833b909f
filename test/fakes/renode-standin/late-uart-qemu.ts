import { chmodSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Writes `<dir>/qemu-system-arm`, a wrapper for the stand-in's CPU (pass it as env
 * RENODE_STANDIN_QEMU) that makes the stand-in read a crash before the UART bytes sent ahead of
 * it: QEMU's stderr (the Lockup report the stand-in turns into `CPU abort`) goes straight
 * through, the wrapper exits 0.2 s after QEMU (so the stand-in has read that report when it sees
 * the exit and logs the abort), and QEMU's stdout (the UART) is handed over `uartDelaySeconds`
 * after that exit. Real Renode does not order its abort log line and its UART socket either
 * (docs/backends/renode.md, "The stand-in"). Returns the wrapper's path.
 */
export function writeLateUartQemu(dir: string, uartDelaySeconds: number): string {
  const qemu = path.join(dir, 'qemu-system-arm');
  writeFileSync(
    qemu,
    [
      '#!/bin/sh',
      'out=$(mktemp)',
      'qemu-system-arm "$@" >"$out"',
      'status=$?',
      `( sleep ${uartDelaySeconds + 0.2}; cat "$out"; rm -f "$out" ) &`,
      'sleep 0.2',
      'exit $status',
      '',
    ].join('\n'),
  );
  chmodSync(qemu, 0o755);
  return qemu;
}
