/**
 * `hilbench record`: a recording reverse proxy on loopback in front of a bench (and relay) service.
 * An agent pointed at the proxy works as usual; on Ctrl-C (or SIGTERM) the session is written as a
 * scenario file, secrets redacted, firmware beside it by sha256 (docs/scenarios.md, "Recording").
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { systemClock } from '../core/clock.js';
import { startRecordingProxy } from '../harness/scenario/recording-proxy.js';
import { scenarioFromRecording } from '../harness/scenario/scenario-from-recording.js';

export interface RecordCommandOptions {
  target: string;
  relayTarget?: string;
  out: string;
  port: number;
  name?: string;
  print?: (line: string) => void;
  /** Resolves when recording should stop; default: the first SIGINT or SIGTERM. */
  stopped?: Promise<void>;
}

/** Writes the converted recording: the scenario file and its firmware/files beside it. Returns the warnings. */
export async function writeRecording(exchanges: Parameters<typeof scenarioFromRecording>[0], out: string, name: string): Promise<string[]> {
  const conversion = await scenarioFromRecording(exchanges, { name, description: `Recorded by hilbench record (${exchanges.length} requests).` });
  const dir = path.dirname(path.resolve(out));
  for (const file of conversion.files) {
    const target = path.join(dir, file.path);
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(target, file.bytes);
  }
  mkdirSync(dir, { recursive: true });
  writeFileSync(out, conversion.yaml);
  return conversion.warnings;
}

export async function recordCommand(options: RecordCommandOptions): Promise<number> {
  const print = options.print ?? ((line: string) => console.log(line));
  const proxy = await startRecordingProxy({
    benchTarget: options.target,
    ...(options.relayTarget ? { relayTarget: options.relayTarget } : {}),
    port: options.port,
    clock: systemClock,
  });
  print(`recording: point the agent at ${proxy.url} (bench ${options.target})${proxy.relayUrl ? ` and ${proxy.relayUrl} (relay ${options.relayTarget})` : ''}`);
  print('stop with Ctrl-C to write the scenario');
  await (options.stopped ??
    new Promise<void>((resolve) => {
      process.once('SIGINT', () => resolve());
      process.once('SIGTERM', () => resolve());
    }));
  await proxy.close();
  const exchanges = proxy.exchanges();
  const warnings = await writeRecording(exchanges, options.out, options.name ?? path.basename(options.out).replace(/\.(ya?ml|json)$/, ''));
  print(`wrote ${options.out}: ${exchanges.length} requests recorded`);
  for (const w of warnings) print(`warning: ${w}`);
  return 0;
}
