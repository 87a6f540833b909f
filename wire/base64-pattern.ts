/**
 * Standard base64 with its `=` padding. Node's decoder skips any other character, so "!!!!" would
 * be taken as 0 bytes and "QQ" (unpadded) silently as one: every base64 the bench reads is checked
 * against this first.
 */
export const BASE64_PATTERN = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
