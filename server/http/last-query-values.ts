/**
 * A query parameter sent more than once keeps its last value, as FastAPI reads a scalar parameter
 * (Starlette's query mapping keeps the last of each name). Both services' query schemas are scalars.
 */
export function lastQueryValues(query: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(query).map(([name, value]) => [name, Array.isArray(value) ? value.at(-1) : value]));
}
