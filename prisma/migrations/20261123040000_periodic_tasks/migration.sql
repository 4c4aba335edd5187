
-- CreateTable
CREATE TABLE "periodic_tasks" (
    "name" TEXT NOT NULL,
    "heldBy" TEXT NOT NULL,
    "leaseUntil" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "periodic_tasks_pkey" PRIMARY KEY ("name")
);

