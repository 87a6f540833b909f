/**
 * The routes in the order the router tries them: `hot` ones first, the rest as declared. Express
 * tries its layers one after another, each a regular expression, so `POST /items/{id}/vote`, the
 * relay's busiest route, was matched against 33 layers before its own (issue 30: the event loop's
 * work per vote). Moving a route ahead changes no answer only when no route before it matches any
 * of its requests: same method and a path that could match the same URL. That is checked here, so
 * a new route that would overlap fails at start-up instead of being shadowed. The declared order
 * stays what /openapi.json and the site list.
 */
export function inMatchOrder<R extends { method: string; path: string }>(routes: readonly R[], hot: readonly string[]): R[] {
  const first: R[] = [];
  for (const key of hot) {
    const at = routes.findIndex((r) => `${r.method.toUpperCase()} ${r.path}` === key);
    const route = routes[at];
    if (route === undefined) throw new Error(`inMatchOrder: no route ${key} to try first`);
    const shadowed = routes.slice(0, at).find((r) => r.method === route.method && pathsOverlap(r.path, route.path));
    if (shadowed) throw new Error(`inMatchOrder: ${key} cannot be tried before ${shadowed.method.toUpperCase()} ${shadowed.path}, which may match the same requests`);
    first.push(route);
  }
  return [...first, ...routes.filter((r) => !first.includes(r))];
}

/** Whether two OpenAPI-style paths (`{id}` a parameter, one segment) can match the same URL path. */
export function pathsOverlap(a: string, b: string): boolean {
  const as = a.split('/');
  const bs = b.split('/');
  if (as.length !== bs.length) return false;
  const isParam = (segment: string) => /^\{[a-z_]+\}$/.test(segment);
  return as.every((segment, k) => segment === bs[k] || isParam(segment) || isParam(bs[k] as string));
}
