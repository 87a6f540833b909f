import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import path from 'node:path';
import { expectFields, scenarioReadmeFile, scenarioSchemaFile, scenarioSchemaText, topLevelKeys, withStepReference } from '../../harness/scenario/write-schema.js';
import { stepKinds } from '../../harness/scenario/scenario-schema.js';

describe('published scenario schema and step reference', () => {
  it('scenarios/schema.json is what the zod schema generates (run harness/scenario/write-schema.ts)', () => {
    expect(readFileSync(scenarioSchemaFile, 'utf8')).toBe(scenarioSchemaText());
  });

  it('the step table of scenarios/README.md is current and names every step', () => {
    const readme = readFileSync(scenarioReadmeFile, 'utf8');
    expect(readme).toBe(withStepReference(readme));
    for (const kind of stepKinds) expect(readme).toContain(`| \`${kind}\` |`);
  });

  it('the JSON Schema refuses unknown keys at the top and in steps', () => {
    const schema = JSON.parse(readFileSync(scenarioSchemaFile, 'utf8')) as { additionalProperties?: unknown; properties: { steps: { items: { anyOf: Array<{ additionalProperties?: unknown }> } } } };
    expect(schema.additionalProperties).toBe(false);
    expect(schema.properties.steps.items.anyOf).toHaveLength(stepKinds.length);
    for (const step of schema.properties.steps.items.anyOf) expect(step.additionalProperties).toBe(false);
  });

  it('scenarios/README.md and docs/scenarios.md name every top-level key and every expect field', () => {
    const readme = readFileSync(scenarioReadmeFile, 'utf8');
    const docs = readFileSync(path.resolve(path.dirname(scenarioReadmeFile), '../docs/scenarios.md'), 'utf8');
    const format = docs.slice(docs.indexOf('## Format (version 1)'), docs.indexOf('### Steps'));
    expect(topLevelKeys).toContain('fail-text');
    for (const key of topLevelKeys) {
      expect(readme, `README: ${key}`).toContain(`| \`${key}\` |`);
      // The example file of docs/scenarios.md shows every top-level key.
      expect(format, `docs/scenarios.md format example: ${key}`).toMatch(new RegExp(`^${key}:`, 'm'));
    }
    for (const field of expectFields) {
      expect(readme, `README: expect.${field}`).toContain(`| \`${field}\` |`);
      expect(format, `docs/scenarios.md expectations: ${field}`).toContain(`\`${field}\``);
    }
  });
});
