import { ScenarioError } from './scenario-error.js';

/**
 * Variables of a running scenario: values captured from answers (`as`, `capture`) and given up
 * front (`vars`, `--var`). `${name}` and `${name.dotted.path}` are replaced in every text field of a
 * step before it runs; `$${` writes a literal `${`. An unknown name fails the step: a silent empty
 * string would send a request nobody meant.
 */
export class ScenarioVars {
  private readonly values = new Map<string, unknown>();

  set(name: string, value: unknown): void {
    this.values.set(name, value);
  }

  /** The value at `ref` (`name` or `name.path.to.field`), or undefined. */
  lookup(ref: string): unknown {
    const parts = ref.split('.');
    // The longest prefix that is a variable wins, so a captured name may itself contain dots.
    for (let n = parts.length; n > 0; n--) {
      const name = parts.slice(0, n).join('.');
      if (!this.values.has(name)) continue;
      let value: unknown = this.values.get(name);
      for (const key of parts.slice(n)) {
        if (typeof value !== 'object' || value === null) return undefined;
        value = (value as Record<string, unknown>)[Array.isArray(value) ? Number(key) : key];
      }
      return value;
    }
    return undefined;
  }

  names(): string[] {
    return [...this.values.keys()];
  }

  /** Replaces `${...}` in `text`; throws a `failed` ScenarioError naming an unknown variable. */
  substitute(text: string): string {
    return text.replace(/\$(\$?)\{([^}]+)\}/g, (whole, escaped: string, ref: string) => {
      if (escaped) return whole.slice(1);
      const value = this.lookup(ref.trim());
      if (value === undefined || value === null || typeof value === 'object') {
        const known = this.names();
        throw new ScenarioError(
          'failed',
          `variable \${${ref}} is ${value === undefined ? 'not set' : `not text (${JSON.stringify(value).slice(0, 80)})`}; set so far: ${known.length ? known.join(', ') : 'none'}`,
        );
      }
      return String(value);
    });
  }

  /** `substitute` applied to every string inside a JSON-like value. */
  substituteDeep<T>(value: T): T {
    if (typeof value === 'string') return this.substitute(value) as T;
    if (Array.isArray(value)) return value.map((v) => this.substituteDeep(v)) as T;
    if (typeof value === 'object' && value !== null) {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.substituteDeep(v)])) as T;
    }
    return value;
  }
}
