-- AlterTable
ALTER TABLE "sales_channels" ADD COLUMN     "storefrontUrl" TEXT;
