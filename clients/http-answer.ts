/** One HTTP answer as the clients and the scenario runner see it: JSON parsed when the server says it is JSON. */
export interface HttpAnswer {
  status: number;
  headers: Headers;
  text: string;
  /** The parsed body when the content type is JSON and it parses; otherwise undefined (the text is kept). */
  json: unknown;
}

/** Reads a fetch `Response` whole into an `HttpAnswer`. A JSON content type with an unparsable body keeps only the text. */
export async function readAnswer(response: Response): Promise<HttpAnswer> {
  const text = await response.text();
  let json: unknown;
  if ((response.headers.get('content-type') ?? '').includes('json') && text) {
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
  }
  return { status: response.status, headers: response.headers, text, json };
}

/** The value of `key` in a parsed JSON body, or undefined when the body is no object or lacks it. */
export function fieldOf(json: unknown, key: string): unknown {
  return typeof json === 'object' && json !== null && !Array.isArray(json) && key in json ? (json as Record<string, unknown>)[key] : undefined;
}
