-- The webhook sweep and pruning take their per-period lease in periodic_tasks, like every other
-- periodic task (src/db/periodic.ts); their own table of last runs goes.
DROP TABLE "webhook_task_runs";
