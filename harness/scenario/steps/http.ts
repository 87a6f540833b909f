import { z } from 'zod';
import { readAnswer } from '../../../clients/http-answer.js';
import { defineStep } from '../define-step.js';
import { formBody } from '../request-parts.js';
import { ScenarioError } from '../scenario-error.js';
import { answerFields, text } from '../step-fields.js';

/** `http`: any request to the bench or the relay. */
export const httpStep = defineStep({
  kind: 'http',
  needs: 'http',
  schema: z
    .strictObject({
      service: z.enum(['bench', 'relay']).optional().describe('default bench'),
      method: z.enum(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']),
      path: text.describe('path and query, e.g. /api/v1/boards'),
      headers: z.record(z.string(), text).optional(),
      form: z.record(z.string(), text).optional().describe('application/x-www-form-urlencoded body'),
      json: z.unknown().optional().describe('JSON body'),
      body: text.optional().describe('raw text body (with headers.content-type)'),
      multipart: z
        .record(z.string(), z.union([text, z.strictObject({ file: text, filename: text.optional() })]))
        .optional()
        .describe('multipart/form-data body: text fields, or {file} read relative to the scenario file'),
      ...answerFields,
    })
    .describe('any HTTP request'),
  check(b, at, issues) {
    const bodies = (['form', 'json', 'body', 'multipart'] as const).filter((k) => b[k] !== undefined);
    if (bodies.length > 1) issues.push(`${at}: give one body (${bodies.join(', ')} given)`);
  },
  async handler(ctx, b) {
    const service = b.service ?? 'bench';
    const baseUrl = service === 'bench' ? ctx.target.benchUrl : ctx.target.relayUrl;
    if (!baseUrl) throw new ScenarioError('unsupported', `http: the target has no ${service} service`);
    const headers: Record<string, string> = ctx.vars.substituteDeep(b.headers ?? {});
    let body: RequestInit['body'] | undefined;
    if (b.form) body = formBody(ctx.vars.substituteDeep(b.form));
    else if (b.json !== undefined) {
      headers['content-type'] ??= 'application/json';
      body = JSON.stringify(ctx.vars.substituteDeep(b.json));
    } else if (b.body !== undefined) body = ctx.vars.substitute(b.body);
    else if (b.multipart) {
      const form = new FormData();
      for (const [field, value] of Object.entries(b.multipart)) {
        if (typeof value === 'string') form.set(field, ctx.vars.substitute(value));
        else form.set(field, new Blob([ctx.readFile(value.file)]), value.filename ?? value.file.split('/').pop() ?? 'file');
      }
      body = form;
    }
    const url = baseUrl.replace(/\/+$/, '') + ctx.vars.substitute(b.path);
    const response = await ctx.fetch(url, { method: b.method, headers, ...(body !== undefined ? { body } : {}) });
    ctx.accept(await readAnswer(response), `${b.method} ${b.path}`, b);
  },
});
