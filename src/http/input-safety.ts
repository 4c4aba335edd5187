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
      const itemPath = path ? `${path}.${key}` : key;
      if (keyProblem) return { path: itemPath, message: `the key ${keyProblem}` };
      stack.push({ value: item, path: itemPath, depth: depth + 1 });
    }
  }
  return undefined;
}
