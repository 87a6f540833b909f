import type { BackendError } from '../../backends/backend.js';

/**
 * The failure reason a job shows for a backend error: the error's message, then its exit code and
 * the tail of the tool's output, each exactly once. Some backends already put them in the message
 * (the probe quotes `(exit status 1); last output:\n…`, QEMU and Renode say `status 1`), others
 * (the mock) only set the fields, so only what the message does not already say is appended.
 */
export function jobFailureDetail(err: BackendError): string {
  const parts = [err.message];
  if (err.exitCode !== undefined && !new RegExp(`\\b(?:status|code) ${err.exitCode}\\b`).test(err.message)) {
    parts.push(`exit code ${err.exitCode}`);
  }
  const tail = err.outputTail?.trim();
  if (tail && !err.message.includes(tail)) parts.push(`output: ${tail}`);
  return parts.join('; ');
}
