import { describe, expect, it } from 'vitest';
import { backendNames } from '../boards/board-schema.js';
import { loadBoardCatalog } from '../boards/catalog.js';
import { systemClock } from '../core/clock.js';
import { createBackends } from './backend-registry.js';

describe('createBackends', () => {
  it('offers every named backend, under its own name, except probe without a bench file', () => {
    const backends = createBackends({ clock: systemClock, boards: loadBoardCatalog() });
    expect(Object.keys(backends)).toEqual(backendNames.filter((name) => name !== 'probe'));
    for (const [name, backend] of Object.entries(backends)) expect(backend.name).toBe(name);
  });
});
