import { LIMITS } from '../limits/limits.ts';

/**
 * Input that no schema would think to refuse, but that breaks what lies behind it: PostgreSQL text
 * cannot hold a NUL character, UTF-8 cannot encode a lone UTF-16 surrogate, and a JSON value nested
 * thousands deep exhausts recursive code. Every body, query string, path parameter and GraphQL
 * variable is checked here at the edge, so such input is a 400 naming where it was, never a 500.
 */

/** Why a string cannot be accepted, or undefined when it can. */
export function findUnsafeString(text: string): string | undefined {
  if (text.includes('\u0000')) return 'contains a NUL character (\\u0000)';
  if (!(text as string & { isWellFormed(): boolean }).isWellFormed()) return 'contains a lone UTF-16 surrogate (not valid Unicode)';
  return undefined;
}

export interface InputProblem {
  path: string;
  message: string;
  limit?: string;
  max?: number;
}

/**
 * The first problem of a parsed value (strings and keys anywhere in it, and its nesting), or
 * undefined. Iterative, so its own depth is no risk.
 */
export function inputProblem(value: unknown, rootPath: string): InputProblem | undefined {
  const stack: Array<{ value: unknown; path: string; depth: number }> = [{ value, path: rootPath, depth: 0 }];
  while (stack.length > 0) {
    const { value: current, path, depth } = stack.pop()!;
    if (typeof current === 'string') {
      const problem = findUnsafeString(current);
      if (problem) return { path, message: problem };
      continue;
    }
    if (current === null || typeof current !== 'object') continue;
    if (depth >= LIMITS.jsonDepth) {
      return { path, message: `nested deeper than ${LIMITS.jsonDepth} levels`, limit: 'jsonDepth', max: LIMITS.jsonDepth };
    }
    const entries = Array.isArray(current) ? current.map((item, i) => [String(i), item] as const) : Object.entries(current);
    for (const [key, item] of entries) {
      const keyProblem = findUnsafeString(key);
      if (keyProblem) {
        // Named escaped: the answer holds no character it refuses (a replay stores it in PostgreSQL).
        const printable = escapeUnsafe(key);
        return { path: path ? `${path}.${printable}` : printable, message: `the key ${keyProblem}` };
      }
      const itemPath = path ? `${path}.${key}` : key;
      stack.push({ value: item, path: itemPath, depth: depth + 1 });
    }
  }
  return undefined;
}

/** `text` with each NUL and lone surrogate written as its \uXXXX escape. */
export function escapeUnsafe(text: string): string {
  let out = '';
  for (let i = 0; i < text.length; i += 1) {
    const unit = text.charCodeAt(i);
    const high = unit >= 0xd800 && unit <= 0xdbff;
    const low = unit >= 0xdc00 && unit <= 0xdfff;
    if (high && i + 1 < text.length && text.charCodeAt(i + 1) >= 0xdc00 && text.charCodeAt(i + 1) <= 0xdfff) {
      out += text.slice(i, i + 2);
      i += 1;
    } else if (unit === 0 || high || low) {
      out += `\\u${unit.toString(16).padStart(4, '0')}`;
    } else {
      out += text[i];
    }
  }
  return out;
}
