import type { ScenarioContext } from './scenario-context.js';

/** Request pieces the HTTP steps share. */

/** An application/x-www-form-urlencoded body of the fields that are set. */
export function formBody(fields: Record<string, string | undefined>): URLSearchParams {
  const form = new URLSearchParams();
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) form.set(k, v);
  return form;
}

/** `/api/v1/sessions/{session}{suffix}`, the session id substituted and encoded. */
export function sessionPath(ctx: ScenarioContext, session: string, suffix = ''): string {
  return `/api/v1/sessions/${encodeURIComponent(ctx.vars.substitute(session))}${suffix}`;
}
