/**
 * Markdown tables for the docs, rendered from an OpenAPI document that `buildOpenApiDocument`
 * generated from the route table and the `wire/` schemas: a table in docs/ that says what a call
 * sends and answers is then the schemas' own word, and a test compares the docs with this output
 * (decision 0615).
 */

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The schema a `$ref` names (`#/components/schemas/X`), with that name; the schema itself otherwise. */
function resolve(doc: Json, schema: unknown): { name?: string; schema: Json } {
  if (!isObject(schema)) return { schema: {} };
  const ref = schema.$ref;
  if (typeof ref !== 'string') return { schema };
  const name = ref.replace('#/components/schemas/', '');
  const components = isObject(doc.components) && isObject(doc.components.schemas) ? doc.components.schemas : {};
  return { name, schema: isObject(components[name]) ? components[name] : {} };
}

/** `a, b?` for an object schema's fields (`?`: optional); alternatives joined by ` or `. */
function fields(doc: Json, schema: unknown): string {
  const { name, schema: s } = resolve(doc, schema);
  const prefix = name ? `${name}: ` : '';
  const alternatives = Array.isArray(s.anyOf) ? s.anyOf : Array.isArray(s.oneOf) ? s.oneOf : undefined;
  if (alternatives) return prefix + alternatives.map((alt) => `(${fields(doc, alt)})`).join(' or ');
  if (!isObject(s.properties)) return `${prefix}${typeof s.type === 'string' ? s.type : 'any'}`.trim();
  const required = new Set(Array.isArray(s.required) ? s.required : []);
  return prefix + Object.keys(s.properties).map((key) => `\`${key}\`${required.has(key) ? '' : '?'}`).join(', ');
}

/** What a content map carries: the JSON body's fields, a form's fields, or the media type of anything else. */
function content(doc: Json, media: unknown): string {
  if (!isObject(media) || Object.keys(media).length === 0) return 'none';
  const json = media['application/json'];
  if (isObject(json)) return isObject(json.schema) ? fields(doc, json.schema) : 'none';
  const form = media['application/x-www-form-urlencoded'];
  if (isObject(form) && isObject(form.schema)) return `form: ${fields(doc, form.schema)}`;
  return Object.keys(media).join(', ');
}

/**
 * One row per operation whose path starts with one of `prefixes`, in document order:
 * `| Call | Body | Answer |`, each body and answer as its top-level fields (`?` when optional).
 */
export function openApiCallTable(doc: Json, prefixes: readonly string[]): string {
  const rows = ['| Call | Body | Answer |', '|---|---|---|'];
  const paths = isObject(doc.paths) ? doc.paths : {};
  for (const [path, item] of Object.entries(paths)) {
    if (!prefixes.some((p) => path.startsWith(p)) || !isObject(item)) continue;
    for (const [method, op] of Object.entries(item)) {
      if (!isObject(op) || !isObject(op.responses)) continue;
      const body = isObject(op.requestBody) ? content(doc, op.requestBody.content) : 'none';
      const success = Object.entries(op.responses).find(([status]) => status.startsWith('2'));
      const answer = success && isObject(success[1]) ? content(doc, success[1].content) : 'none';
      rows.push(`| ${method.toUpperCase()} ${path} | ${body} | ${answer} |`);
    }
  }
  return rows.join('\n');
}
