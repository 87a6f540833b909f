import { readFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { hilbenchCli as cli } from '../support/compiled-cli.js';

/**
 * The systemd units of docs/deploy/ (issue 10): they parse as unit files, carry the hardening and
 * restart policy the deployment guide promises, and every hilbench flag they use exists.
 */
const root = path.resolve(import.meta.dirname, '../..');

function parseUnit(text: string): Map<string, Map<string, string[]>> {
  const sections = new Map<string, Map<string, string[]>>();
  let current: Map<string, string[]> | undefined;
  for (const [index, raw] of text.split('\n').entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const header = /^\[([A-Za-z]+)\]$/.exec(line);
    if (header) {
      current = new Map();
      sections.set(header[1]!, current);
      continue;
    }
    const pair = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (!pair || !current) throw new Error(`line ${index + 1} is neither a section nor Key=value: ${raw}`);
    current.set(pair[1]!, [...(current.get(pair[1]!) ?? []), pair[2]!]);
  }
  return sections;
}

describe.each([
  ['hilbench-server.service', 'serve'],
  ['hilbench-worker.service', 'worker'],
])('docs/deploy/%s', (file, command) => {
  const unit = parseUnit(readFileSync(path.join(root, 'docs/deploy', file), 'utf8'));
  const service = unit.get('Service')!;

  it('is a unit file with the sections, restart policy and hardening the guide promises', () => {
    expect([...unit.keys()]).toEqual(['Unit', 'Service', 'Install']);
    expect(service.get('Restart')?.[0]).toMatch(/^(on-failure|always)$/);
    for (const key of ['NoNewPrivileges', 'ProtectSystem', 'ProtectHome', 'PrivateTmp']) expect(service.get(key), key).toBeDefined();
    expect(service.get('UMask')).toEqual(['0077']);
    expect(unit.get('Install')!.get('WantedBy')).toEqual(['multi-user.target']);
  });

  it(`runs hilbench ${command} with flags that exist`, async () => {
    const exec = service.get('ExecStart')![0]!;
    expect(exec).toMatch(new RegExp(`hilbench ${command} `));
    const flags = [...exec.matchAll(/(--[a-z0-9-]+)/g)].map((m) => m[1]!);
    const help = (await execa('node', [cli, command, '--help'])).stdout;
    for (const flag of flags) expect(help, flag).toContain(flag);
  });
});
