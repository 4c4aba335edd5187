-- AlterTable
ALTER TABLE "embed_sessions" ADD COLUMN     "createdById" TEXT,
ALTER COLUMN "apiKeyId" DROP NOT NULL;
