import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { scenarioReadmeFile, scenarioSchemaFile, scenarioSchemaText, withStepReference } from '../../harness/scenario/write-schema.js';
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
});
