import { closestNames } from '../../core/closest-names.js';
import type { Scenario } from './scenario-schema.js';
import type { ScenarioTarget } from './scenario-target.js';

/**
 * Why the pin steps of `scenario` cannot run on `target`, one line each: a backend that does not
 * model the board's pins, or a pin name the board does not have (with the near misses). A pin
 * step acts on the board the latest `device-flash` before it opened.
 */
export function pinProblems(scenario: Scenario, target: ScenarioTarget, labelOf: (index: number) => string): string[] {
  const problems: string[] = [];
  let boardId = scenario.board;
  scenario.steps.forEach((step, i) => {
    if (step.kind === 'device-flash') boardId = step.body.board ?? scenario.board;
    if (step.kind !== 'expect-pin' && step.kind !== 'set-control') return;
    const label = labelOf(i);
    const backend = target.backend;
    if (!backend) return; // the device need already says what is missing
    const board = target.boards.find((b) => b.id === boardId);
    if (!board) return; // device-flash refuses the unknown board, with the known ones
    const names = backend.pinNames?.(board);
    if (!names) {
      problems.push(`${label}: backend ${backend.name} does not model the pins of ${board.id}; the sim backend models RP2040 and ATmega328P pins`);
      return;
    }
    const name = step.body.name;
    if (!names.some((n) => n.toLowerCase() === name.toLowerCase())) {
      const near = closestNames(name, names);
      problems.push(`${label}: ${board.id} has no pin ${JSON.stringify(name)}${near.length ? ` (did you mean ${near.join(', ')}?)` : ''}`);
    }
  });
  return problems;
}
