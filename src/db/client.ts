import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../generated/prisma/client.ts';

export type Database = PrismaClient;

export interface DatabaseOptions {
  url: string;
  poolSize: number;
}

export function createDatabase({ url, poolSize }: DatabaseOptions): Database {
  const adapter = new PrismaPg({ connectionString: url, max: poolSize, connectionTimeoutMillis: 10_000 });
  return new PrismaClient({ adapter });
}

/** The error Prisma raises on a unique-constraint violation. */
export function isUniqueViolation(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'P2002';
}
