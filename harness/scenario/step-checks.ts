/**
 * Load-time rules zod cannot say alone, shared by the steps and the loader: exactly one of
 * text/regex, regexes that compile. Each pushes a problem with its path into `issues`.
 */

/** `text` or `regex` (one, or neither when not `required`), `not` only with one of them, a regex that compiles. */
export function checkTextMatch(b: { text?: string | undefined; regex?: string | undefined; not?: boolean | undefined }, at: string, issues: string[], options: { required: boolean }): void {
  if (b.text !== undefined && b.regex !== undefined) issues.push(`${at}: give text or regex, not both`);
  if (b.not !== undefined && b.text === undefined && b.regex === undefined) issues.push(`${at}.not: negates text or regex, and neither is given`);
  if (options.required && b.text === undefined && b.regex === undefined) issues.push(`${at}: give text or regex`);
  if (b.regex !== undefined) {
    try {
      new RegExp(b.regex);
    } catch (err) {
      issues.push(`${at}.regex: ${(err as Error).message}`);
    }
  }
}

/**
 * Compiles every `{"$regex": ...}` inside an expected JSON value, so a broken pattern is refused at
 * load, not when the step runs. `${...}` references are compiled as a plain word (their value
 * is only known at run time).
 */
export function checkJsonRegexes(value: unknown, at: string, issues: string[]): void {
  if (Array.isArray(value)) {
    value.forEach((v, i) => checkJsonRegexes(v, `${at}[${i}]`, issues));
    return;
  }
  if (typeof value !== 'object' || value === null) return;
  for (const [key, v] of Object.entries(value)) {
    if (key === '$regex') {
      if (typeof v !== 'string') {
        issues.push(`${at}.$regex: expected a regular expression as text`);
        continue;
      }
      try {
        new RegExp(v.replace(/\$\{[^}]+\}/g, 'x'));
      } catch (err) {
        issues.push(`${at}.$regex: ${(err as Error).message}`);
      }
    } else checkJsonRegexes(v, `${at}.${key}`, issues);
  }
}
