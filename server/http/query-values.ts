/**
 * A query parameter sent more than once keeps its last value, as FastAPI reads a scalar query
 * parameter (Starlette's query dict keeps the last): one rule for both services' query schemas,
 * which are all scalars, instead of a 422 that echoes the array express made of the repeats.
 */
export function lastQueryValues(query: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(query).map(([name, value]) => [name, Array.isArray(value) ? value.at(-1) : value]));
}
