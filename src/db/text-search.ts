/**
 * A search box's text as a LIKE pattern's literal part: its wildcards (`%`, `_`) and the escape
 * itself (`\`, PostgreSQL's default LIKE escape) match only themselves.
 */
export function likeLiteral(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/**
 * A case-insensitive "contains" condition on a text column, for Prisma: it puts the text into ILIKE
 * as it is, so the wildcards are made literal here (test/identity/users.test.ts).
 */
export function containing(text: string) {
  return { contains: likeLiteral(text), mode: 'insensitive' as const };
}

/** A person (a user, a customer) whose email, first or last name holds `text`: conditions to OR. */
export function personContaining(text: string) {
  const holds = containing(text);
  return [{ email: holds }, { firstName: holds }, { lastName: holds }];
}
