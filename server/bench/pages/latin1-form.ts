/**
 * The name/value pairs of an `application/x-www-form-urlencoded` body declared ISO-8859-1, read as
 * Latin-1 exactly: every byte, raw or percent-escaped, is the code point of the same value
 * (U+0000-U+00FF). `URLSearchParams` decodes percent escapes as UTF-8 only, so `caf%E9` read
 * through it would be `caf\uFFFD`. Otherwise the WHATWG urlencoded parser's steps: pairs split on
 * `&` (empty ones skipped), name and value on the first `=`, `+` a space, and a `%` not followed by
 * two hex digits kept as it is.
 */
export function latin1FormPairs(body: Uint8Array): [string, string][] {
  const pairs: [string, string][] = [];
  for (const sequence of Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('latin1').split('&')) {
    if (sequence === '') continue;
    const equals = sequence.indexOf('=');
    const name = equals === -1 ? sequence : sequence.slice(0, equals);
    const value = equals === -1 ? '' : sequence.slice(equals + 1);
    pairs.push([percentDecodedLatin1(name), percentDecodedLatin1(value)]);
  }
  return pairs;
}

/** `text` (code points U+0000-U+00FF, one per byte) with `+` a space and each `%XX` the one code point 0xXX. */
function percentDecodedLatin1(text: string): string {
  return text.replace(/\+/g, ' ').replace(/%([0-9a-fA-F]{2})/g, (_escape, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
}
