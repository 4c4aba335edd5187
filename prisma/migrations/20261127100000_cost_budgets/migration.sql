-- Each organisation's GraphQL cost bucket per lane: the points it held at "updatedAt". Budget and
-- restore rate are configuration, passed with every lease (src/limits/cost-budget.ts), so the row
-- holds only the level. A row is written when an API process leases from it (one UPDATE … RETURNING
-- per lease), never per request.
CREATE TABLE "cost_budgets" (
    "organisationId" TEXT NOT NULL,
    "lane" TEXT NOT NULL,
    "points" DOUBLE PRECISION NOT NULL,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "cost_budgets_pkey" PRIMARY KEY ("organisationId","lane"),
    CONSTRAINT "cost_budgets_lane_check" CHECK ("lane" IN ('admin', 'sales'))
);
